import { beforeAll, describe, expect, it } from 'vitest';
import { LOG_QUERIES } from '../../infra/log-queries.ts';
import { simulate } from '../../shared/simulator/engine.ts';
import { parseScenario } from '../../shared/simulator/scenario.ts';
import { defaultPoolYaml } from '../unit/simulator/scenarios.ts';

// Every saved Logs Insights query runs against the lines Flotilla really writes: a simulated run of
// the use cases (in-memory cluster and cloud) with pods to launch for, pods nothing can host and a
// spot interruption, its log lines kept as the Lambdas write them. For each query, the fields its
// clauses name must be on the lines its filter matches, and the filter must match some line.

/**
 * A spot NodePool, four pods that fit, two that fit nowhere, a spot interruption at 4m, and the
 * four pods gone at 6m (their nodes are removed as empty).
 */
const SCENARIO = `name: log-queries
duration: 10m
bootDelay: 30s
${defaultPoolYaml([
  '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [spot] }',
])}workloads:
  - kind: Deployment
    name: web
    replicas: 4
    scale: [{ at: 6m, replicas: 0 }]
    template:
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
  - kind: Deployment
    name: huge
    replicas: 2
    template:
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "500" } }
events:
  - kind: SpotInterruption
    at: 4m
`;

type Line = Readonly<Record<string, unknown>>;

/** A JSON log line's fields as Logs Insights discovers them: nested keys and array items dotted. */
function flatten(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value))
      flatten(inner, prefix === '' ? key : `${prefix}.${key}`, out);
  } else {
    out[prefix] = value;
  }
  return out;
}

/** The clauses of a query (`fields …`, `filter …`, `stats …`, `sort …`, `limit …`), by command. */
function clauses(query: string): { command: string; body: string }[] {
  return query.split(/\n\|\s*/).map((clause) => {
    const [command = '', ...rest] = clause.trim().split(/\s+/);
    return { command, body: rest.join(' ') };
  });
}

/** Splits on commas outside parentheses. */
function splitList(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of list) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  if (current.trim() !== '') parts.push(current.trim());
  return parts;
}

/** The log fields an expression reads: bare or backquoted names, not functions, strings or `*`. */
function fieldsOf(expression: string): string[] {
  const withoutStrings = expression.replace(/'[^']*'|"[^"]*"|\/[^/]*\//g, ' ');
  const names: string[] = [];
  for (const m of withoutStrings.matchAll(/`([^`]+)`|(@?[A-Za-z_][\w.]*)(\s*\()?/g)) {
    if (m[1] !== undefined) names.push(m[1]);
    else if (m[2] !== undefined && m[3] === undefined && !KEYWORDS.has(m[2].toLowerCase())) names.push(m[2]);
  }
  return names;
}
const KEYWORDS = new Set(['and', 'or', 'not', 'like', 'in', 'as', 'by', 'asc', 'desc']);

/** An item of a `fields` or `stats` list without its `as alias`. */
function unaliased(item: string): { expression: string; alias?: string } {
  const m = /^(.*?)\s+as\s+(\w+)$/i.exec(item);
  return m === null ? { expression: item } : { expression: m[1] ?? '', alias: m[2] ?? '' };
}

interface ParsedQuery {
  /** Fields of `fields` items: each must be on some matching line. */
  readonly selected: readonly string[];
  /** Fields of `stats` arguments and groupings: each must be on every matching line. */
  readonly grouped: readonly string[];
  readonly matches: (line: Readonly<Record<string, unknown>>) => boolean;
}

/**
 * The parts of Logs Insights syntax the saved queries use. Anything else fails the test, so a
 * new query with other syntax extends this instead of passing unchecked.
 */
function parseQuery(query: string): ParsedQuery {
  const selected: string[] = [];
  const grouped: string[] = [];
  const aliases = new Set<string>();
  const filters: ((line: Readonly<Record<string, unknown>>) => boolean)[] = [];
  for (const { command, body } of clauses(query)) {
    switch (command) {
      case 'fields':
        for (const item of splitList(body)) {
          const { expression, alias } = unaliased(item);
          if (alias !== undefined) aliases.add(alias);
          selected.push(...fieldsOf(expression));
        }
        break;
      case 'filter':
        filters.push(parseFilter(body));
        selected.push(...fieldsOf(body));
        break;
      case 'stats': {
        const [aggregates = '', by = ''] = body.split(/\s+by\s+/i);
        for (const item of splitList(aggregates)) {
          const { expression, alias } = unaliased(item);
          if (alias !== undefined) aliases.add(alias);
          grouped.push(...fieldsOf(expression));
        }
        grouped.push(...splitList(by).flatMap(fieldsOf));
        break;
      }
      case 'sort':
        selected.push(...fieldsOf(body).filter((f) => !aliases.has(f)));
        break;
      case 'limit':
        expect(body).toMatch(/^\d+$/);
        break;
      default:
        throw new Error(`query command ${JSON.stringify(command)} is not understood by this test: ${query}`);
    }
  }
  const real = (f: string) => !f.startsWith('@') && !aliases.has(f);
  return {
    selected: [...new Set(selected.filter(real))],
    grouped: [...new Set(grouped.filter(real))],
    matches: (line) => filters.every((f) => f(line)),
  };
}

/** `a and b`, each `ispresent(f)`, `f = 'v'`, `f != 'v'` or `f like /re/`. */
function parseFilter(body: string): (line: Readonly<Record<string, unknown>>) => boolean {
  const terms = body.split(/\s+and\s+/i).map((term): ((line: Line) => boolean) => {
    const present = /^ispresent\((\w+)\)$/.exec(term);
    if (present !== null) return (line) => line[present[1] ?? ''] !== undefined;
    const equals = /^([\w.]+)\s*=\s*'([^']*)'$/.exec(term);
    if (equals !== null) return (line) => line[equals[1] ?? ''] === equals[2];
    const differs = /^([\w.]+)\s*!=\s*'([^']*)'$/.exec(term);
    if (differs !== null) return (line) => line[differs[1] ?? ''] !== differs[2];
    const like = /^([\w.]+)\s+like\s+\/(.*)\/$/.exec(term);
    if (like !== null) return (line) => new RegExp(like[2] ?? '').test(String(line[like[1] ?? ''] ?? ''));
    throw new Error(`filter term ${JSON.stringify(term)} is not understood by this test`);
  });
  return (line) => terms.every((t) => t(line));
}

describe('saved Logs Insights queries', () => {
  let lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const written: string[] = [];
    await simulate(parseScenario(SCENARIO), { log: (line) => written.push(line) });
    lines = written.map((l) => flatten(JSON.parse(l)));
  });

  it('the run wrote launches, unschedulable pods, a handled interruption and disruptions', () => {
    const decisions = new Set(lines.map((l) => l['decision']));
    for (const kind of ['launch', 'unschedulable', 'handleInterruption', 'drain', 'terminate', 'disrupt']) {
      expect(decisions).toContain(kind);
    }
    expect(lines.every((l) => typeof l['message'] === 'string' && typeof l['time'] === 'string')).toBe(true);
  });

  it.each(LOG_QUERIES.map((q) => [q.name, q.queryString] as const))(
    '%s: its filter matches lines that have the fields it reads',
    (_name, queryString) => {
      const query = parseQuery(queryString);
      const matching = lines.filter(query.matches);
      expect(matching.length).toBeGreaterThan(0);
      for (const field of query.selected) {
        expect(
          matching.some((l) => l[field] !== undefined),
          `no matching line has ${field}`,
        ).toBe(true);
      }
      for (const field of query.grouped) {
        expect(
          matching.filter((l) => l[field] === undefined).map((l) => l['message']),
          `matching lines without ${field}`,
        ).toEqual([]);
      }
    },
  );

  it('counts no metrics line among the decisions, though some carry Karpenter’s `decision` label', () => {
    const query = LOG_QUERIES.find((q) => q.name === 'decisions-by-reason');
    if (query === undefined) throw new Error('no decisions-by-reason query');
    expect(lines.some((l) => l['message'] === 'metrics' && l['decision'] !== undefined)).toBe(true);
    expect(
      lines.filter(parseQuery(query.queryString).matches).filter((l) => l['message'] === 'metrics'),
    ).toEqual([]);
  });

  it('reads fields the way the queries name them', () => {
    expect(
      parseQuery("fields a, `b.0` as c\n| filter d = 'x' and ispresent(e)\n| sort c desc"),
    ).toMatchObject({
      selected: ['a', 'b.0', 'd', 'e'],
      grouped: [],
    });
    expect(parseQuery('stats count(*) as n, sum(p) as s by x, y\n| sort n desc')).toMatchObject({
      selected: [],
      grouped: ['p', 'x', 'y'],
    });
    expect(() => parseQuery('parse message /(?<x>.*)/')).toThrow(/not understood/);
    expect(parseQuery('filter m like /^int/').matches({ m: 'interruption handled' })).toBe(true);
    expect(parseQuery('filter m like /^int/').matches({ m: 'launch decided' })).toBe(false);
    expect(parseQuery("filter ispresent(d) and m != 'metrics'").matches({ d: 'delete', m: 'metrics' })).toBe(
      false,
    );
    expect(parseQuery("filter ispresent(d) and m != 'metrics'").matches({ d: 'delete', m: 'x' })).toBe(true);
  });
});
