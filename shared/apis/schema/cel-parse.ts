import { FlotillaError } from '../../core/index.ts';

// A parser for the part of the Common Expression Language that CustomResourceDefinitions use in
// their `x-kubernetes-validations` rules: literals, lists, maps, member access and indexing,
// calls and macros, the unary, arithmetic, relational and logical operators, `in` and `?:`.

/** A rule's text is not CEL this parser reads. */
export class CelSyntaxError extends FlotillaError {
  readonly code = 'CelSyntaxError';

  constructor(
    readonly expression: string,
    readonly offset: number,
    problem: string,
  ) {
    super(`CEL rule ${JSON.stringify(expression)}: ${problem} at offset ${offset}`);
  }
}

export type CelNode =
  | { readonly kind: 'literal'; readonly value: string | number | boolean | null }
  | { readonly kind: 'ident'; readonly name: string }
  | { readonly kind: 'member'; readonly target: CelNode; readonly name: string }
  | { readonly kind: 'index'; readonly target: CelNode; readonly index: CelNode }
  | {
      readonly kind: 'call';
      readonly name: string;
      readonly target: CelNode | undefined;
      readonly args: readonly CelNode[];
    }
  | { readonly kind: 'unary'; readonly op: '!' | '-'; readonly operand: CelNode }
  | { readonly kind: 'binary'; readonly op: string; readonly left: CelNode; readonly right: CelNode }
  | { readonly kind: 'ternary'; readonly test: CelNode; readonly then: CelNode; readonly otherwise: CelNode }
  | { readonly kind: 'list'; readonly items: readonly CelNode[] }
  | { readonly kind: 'map'; readonly entries: readonly (readonly [CelNode, CelNode])[] };

type Token =
  | { readonly type: 'num'; readonly value: number; readonly at: number }
  | { readonly type: 'str'; readonly value: string; readonly at: number }
  | { readonly type: 'id'; readonly value: string; readonly at: number }
  | { readonly type: 'op'; readonly value: string; readonly at: number }
  | { readonly type: 'end'; readonly value: ''; readonly at: number };

const OPERATORS = ['||', '&&', '==', '!=', '<=', '>=', '<', '>', '!', '+', '-', '*', '/', '%', '?', ':'];
const PUNCTUATION = '.,()[]{}';
const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '`': '`',
  '?': '?',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
};

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const number = /^(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)[uU]?/.exec(text.slice(i));
    if (number !== null) {
      tokens.push({ type: 'num', value: Number(number[0].replace(/[uU]$/, '')), at: i });
      i += number[0].length;
      continue;
    }
    const raw = /^[rR](['"])/.exec(text.slice(i));
    if (c === '"' || c === "'" || raw !== null) {
      const start = i;
      const quote = raw === null ? c : (raw[1] ?? '"');
      i += raw === null ? 1 : 2;
      let value = '';
      while (i < text.length && text[i] !== quote) {
        const ch = text[i] ?? '';
        if (ch === '\\' && raw === null) {
          const next = text[i + 1] ?? '';
          const escaped = ESCAPES[next];
          if (escaped === undefined) throw new CelSyntaxError(text, i, `unknown escape \\${next}`);
          value += escaped;
          i += 2;
        } else {
          value += ch;
          i++;
        }
      }
      if (i >= text.length) throw new CelSyntaxError(text, start, 'unterminated string');
      i++;
      tokens.push({ type: 'str', value, at: start });
      continue;
    }
    const ident = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (ident !== null) {
      tokens.push({ type: 'id', value: ident[0], at: i });
      i += ident[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i)) ?? (PUNCTUATION.includes(c) ? c : undefined);
    if (op === undefined) throw new CelSyntaxError(text, i, `unexpected character ${JSON.stringify(c)}`);
    tokens.push({ type: 'op', value: op, at: i });
    i += op.length;
  }
  tokens.push({ type: 'end', value: '', at: text.length });
  return tokens;
}

const BINARY_LEVELS: readonly (readonly string[])[] = [
  ['||'],
  ['&&'],
  ['==', '!=', '<', '<=', '>', '>=', 'in'],
  ['+', '-'],
  ['*', '/', '%'],
];

/**
 * Parses one CEL expression.
 * @throws CelSyntaxError naming the offset of the first token it cannot read.
 */
export function parseCel(text: string): CelNode {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = (): Token => tokens[pos] ?? { type: 'end', value: '', at: text.length };
  const isOp = (value: string) => {
    const t = peek();
    return (t.type === 'op' || (t.type === 'id' && value === 'in')) && t.value === value;
  };
  const expect = (value: string) => {
    if (!isOp(value)) throw new CelSyntaxError(text, peek().at, `expected "${value}"`);
    pos++;
  };

  const expression = (): CelNode => {
    const test = binary(0);
    if (!isOp('?')) return test;
    pos++;
    const then = binary(0);
    expect(':');
    return { kind: 'ternary', test, then, otherwise: expression() };
  };
  const binary = (level: number): CelNode => {
    const ops = BINARY_LEVELS[level];
    if (ops === undefined) return unary();
    let left = binary(level + 1);
    for (;;) {
      const op = ops.find(isOp);
      if (op === undefined) return left;
      pos++;
      left = { kind: 'binary', op, left, right: binary(level + 1) };
    }
  };
  const unary = (): CelNode => {
    if (isOp('!') || isOp('-')) {
      const op = peek().value as '!' | '-';
      pos++;
      return { kind: 'unary', op, operand: unary() };
    }
    return member();
  };
  const args = (close: string): CelNode[] => {
    const out: CelNode[] = [];
    while (!isOp(close)) {
      out.push(expression());
      if (!isOp(close)) expect(',');
    }
    pos++;
    return out;
  };
  const member = (): CelNode => {
    let node = primary();
    for (;;) {
      if (isOp('.')) {
        pos++;
        const name = peek();
        if (name.type !== 'id') throw new CelSyntaxError(text, name.at, 'expected a field or method name');
        pos++;
        if (isOp('(')) {
          pos++;
          node = { kind: 'call', name: name.value, target: node, args: args(')') };
        } else {
          node = { kind: 'member', target: node, name: name.value };
        }
      } else if (isOp('[')) {
        pos++;
        const index = expression();
        expect(']');
        node = { kind: 'index', target: node, index };
      } else {
        return node;
      }
    }
  };
  const primary = (): CelNode => {
    const t = peek();
    pos++;
    if (t.type === 'num' || t.type === 'str') return { kind: 'literal', value: t.value };
    if (t.type === 'id') {
      if (t.value === 'true' || t.value === 'false') return { kind: 'literal', value: t.value === 'true' };
      if (t.value === 'null') return { kind: 'literal', value: null };
      if (isOp('(')) {
        pos++;
        return { kind: 'call', name: t.value, target: undefined, args: args(')') };
      }
      return { kind: 'ident', name: t.value };
    }
    if (t.type === 'op' && t.value === '(') {
      const inner = expression();
      expect(')');
      return inner;
    }
    if (t.type === 'op' && t.value === '[') return { kind: 'list', items: args(']') };
    if (t.type === 'op' && t.value === '{') {
      const entries: (readonly [CelNode, CelNode])[] = [];
      while (!isOp('}')) {
        const key = expression();
        expect(':');
        entries.push([key, expression()]);
        if (!isOp('}')) expect(',');
      }
      pos++;
      return { kind: 'map', entries };
    }
    throw new CelSyntaxError(text, t.at, t.type === 'end' ? 'unexpected end' : `unexpected "${t.value}"`);
  };

  const node = expression();
  if (peek().type !== 'end') throw new CelSyntaxError(text, peek().at, `unexpected "${peek().value}"`);
  return node;
}

/** Every call in the expression, with whether it is a method (or macro) on a target. */
export function callsIn(node: CelNode): { readonly name: string; readonly onTarget: boolean }[] {
  const children: CelNode[] = [];
  switch (node.kind) {
    case 'member':
      children.push(node.target);
      break;
    case 'index':
      children.push(node.target, node.index);
      break;
    case 'call':
      if (node.target !== undefined) children.push(node.target);
      children.push(...node.args);
      break;
    case 'unary':
      children.push(node.operand);
      break;
    case 'binary':
      children.push(node.left, node.right);
      break;
    case 'ternary':
      children.push(node.test, node.then, node.otherwise);
      break;
    case 'list':
      children.push(...node.items);
      break;
    case 'map':
      children.push(...node.entries.flat());
      break;
    default:
      break;
  }
  const own = node.kind === 'call' ? [{ name: node.name, onTarget: node.target !== undefined }] : [];
  return [...own, ...children.flatMap(callsIn)];
}

/** Whether the expression reads `name` (e.g. `oldSelf`, which makes a rule a transition rule). */
export function mentions(node: CelNode, name: string): boolean {
  switch (node.kind) {
    case 'literal':
      return false;
    case 'ident':
      return node.name === name;
    case 'member':
      return mentions(node.target, name);
    case 'index':
      return mentions(node.target, name) || mentions(node.index, name);
    case 'call':
      return (
        (node.target !== undefined && mentions(node.target, name)) || node.args.some((a) => mentions(a, name))
      );
    case 'unary':
      return mentions(node.operand, name);
    case 'binary':
      return mentions(node.left, name) || mentions(node.right, name);
    case 'ternary':
      return mentions(node.test, name) || mentions(node.then, name) || mentions(node.otherwise, name);
    case 'list':
      return node.items.some((i) => mentions(i, name));
    case 'map':
      return node.entries.some(([k, v]) => mentions(k, name) || mentions(v, name));
  }
}
