import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  CelEvalError,
  CelUnsupportedError,
  evaluateCel,
  isSupportedCall,
} from '../../../shared/apis/schema/cel-eval.ts';
import { CelSyntaxError, callsIn, parseCel } from '../../../shared/apis/schema/cel-parse.ts';
import { checkSchema } from '../../../shared/apis/schema/openapi.ts';

const run = (rule: string, self: unknown) => evaluateCel(parseCel(rule), new Map([['self', self]]));

describe('CEL as the CRDs write it', () => {
  it.each([
    ["self.split('@')[0] in ['al2', 'al2023']", 'al2023@latest', true],
    ["self.split('@')[0] in ['al2', 'al2023']", 'ubuntu@latest', false],
    ["self.matches('^[a-zA-Z0-9]+@.+$')", 'al2023@v20250101', true],
    ['self.find("^([^/]+)").endsWith("karpenter.sh")', 'karpenter.sh/foo', true],
    ['self.find("^([^/]+)").endsWith("karpenter.sh")', 'tier', false],
    ['has(self.schedule) == has(self.duration)', { schedule: '@daily' }, false],
    ['has(self.schedule) == has(self.duration)', { schedule: '@daily', duration: '1h' }, true],
    ["self.all(k, k != '' && self[k] != '')", { a: 'b' }, true],
    ["self.all(k, k != '' && self[k] != '')", { a: '' }, false],
    [
      'self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1',
      [{ rootVolume: true }, {}],
      true,
    ],
    [
      'self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1',
      [{ rootVolume: true }, { rootVolume: true }],
      false,
    ],
    [
      "!(self.operator in ['Gt', 'Lt']) || (size(self.values) == 1 && int(self.values[0]) >= 0)",
      { operator: 'Gt', values: ['5'] },
      true,
    ],
    ['self.exists(x, has(x.alias)) && self.size() != 1', [{ alias: 'a' }, { id: 'b' }], true],
    ["'nodes' in self", { nodes: '3' }, true],
    ['self.exists_one(x, x > 2)', [1, 3], true],
    ['self.map(x, x * 2)[1] == 4 && -self[0] == -1 && 7 % 4 == 3 && 7 / 2 == 3', [1, 2], true],
    [
      '{"a": 1}.a == 1 && [1] + [2] == [1, 2] && "a" + "b" == "ab" && 1 < 2 && 2 <= 2 && !(3 < 1)',
      null,
      true,
    ],
  ])('%s over %j is %s', (rule, self, result) => {
    expect(run(rule, self)).toBe(result);
  });

  it('lets || and && ignore an error on a side that does not decide', () => {
    expect(run('self.missing == 1 || true', {})).toBe(true);
    expect(run('false && self.missing == 1', {})).toBe(false);
    expect(() => run('self.missing == 1 || false', {})).toThrow(CelEvalError);
  });

  it('refuses a call it does not have rather than guessing, and text that is not CEL', () => {
    expect(() => run('self.isSorted()', [])).toThrow(CelUnsupportedError);
    expect(() => parseCel('self. == 1')).toThrow(CelSyntaxError);
    expect(() => parseCel("self == 'open")).toThrow(/unterminated string/);
  });

  it('reports a rule it cannot evaluate as a problem, never as passed', () => {
    const schema = {
      type: 'object',
      'x-kubernetes-validations': [{ rule: 'self.isSorted()', message: 'sorted' }],
    };
    expect(checkSchema({}, schema)).toEqual([
      {
        path: [],
        message: 'cannot check the rule "self.isSorted()" (sorted): method .isSorted() is not supported',
      },
    ]);
  });

  const crdDir = path.resolve(import.meta.dirname, '../../../infra/crds');
  const rules = readdirSync(crdDir).flatMap((file) => {
    const found: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node !== null && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'x-kubernetes-validations')
            found.push(...(value as { rule: string }[]).map((r) => r.rule));
          else walk(value);
        }
      }
    };
    for (const doc of parseAllDocuments(readFileSync(path.join(crdDir, file), 'utf8'))) walk(doc.toJS());
    return found.map((rule) => [file, rule] as const);
  });

  it('finds the rules of the shipped CRDs', () => {
    expect(rules.length).toBeGreaterThan(50);
  });

  it.each(rules)('%s: %s parses and uses only calls the evaluator has', (_file, rule) => {
    const unsupported = callsIn(parseCel(rule)).filter((c) => !isSupportedCall(c.name, c.onTarget));
    expect(unsupported).toEqual([]);
  });
});
