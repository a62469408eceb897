import { FlotillaError } from '../../core/index.ts';
import type { CelNode } from './cel-parse.ts';

// Evaluates a parsed CEL expression over JSON-like values (what a manifest holds once read from
// YAML), with CEL's error rules: `&&` and `||` ignore an error on one side when the other side
// decides the result. The functions are CEL's standard ones plus the Kubernetes string and regex
// libraries' that the CRDs use; anything else is reported as not evaluable, never guessed.

/** A rule failed while it ran (a missing key, a value of the wrong type): CEL's runtime error. */
export class CelEvalError extends FlotillaError {
  readonly code = 'CelEvalError';
}

/** A rule uses a function or macro this evaluator does not implement. */
export class CelUnsupportedError extends FlotillaError {
  readonly code = 'CelUnsupportedError';
}

export type CelValue = unknown;
type Scope = ReadonlyMap<string, CelValue>;

const isMap = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (isMap(v)) return 'map';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

function equal(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && equal(a[k], b[k]));
  }
  return a === b;
}

function asBool(v: unknown, what: string): boolean {
  if (typeof v !== 'boolean') throw new CelEvalError(`${what} needs a bool, got ${typeName(v)}`);
  return v;
}

function asString(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new CelEvalError(`${what} needs a string, got ${typeName(v)}`);
  return v;
}

function size(v: unknown): number {
  if (typeof v === 'string') return [...v].length;
  if (Array.isArray(v)) return v.length;
  if (isMap(v)) return Object.keys(v).length;
  throw new CelEvalError(`size() of ${typeName(v)}`);
}

/** CEL's regular expressions are RE2; the CRDs' patterns mean the same in JavaScript. */
function regex(pattern: unknown): RegExp {
  try {
    return new RegExp(asString(pattern, 'a regular expression'), 'u');
  } catch (error) {
    throw new CelEvalError(`invalid regular expression ${JSON.stringify(pattern)}`, { cause: error });
  }
}

function toInt(v: unknown): number {
  if (typeof v === 'number') return Math.trunc(v);
  if (typeof v === 'string' && /^[-+]?\d+$/.test(v)) return Number.parseInt(v, 10);
  throw new CelEvalError(`int() of ${JSON.stringify(v)}`);
}

const METHODS: Readonly<Record<string, (target: unknown, args: readonly unknown[]) => unknown>> = {
  size: (t) => size(t),
  matches: (t, [re]) => regex(re).test(asString(t, 'matches()')),
  startsWith: (t, [p]) => asString(t, 'startsWith()').startsWith(asString(p, 'startsWith()')),
  endsWith: (t, [p]) => asString(t, 'endsWith()').endsWith(asString(p, 'endsWith()')),
  contains: (t, [p]) => asString(t, 'contains()').includes(asString(p, 'contains()')),
  split: (t, [sep, limit]) => {
    const parts = asString(t, 'split()').split(asString(sep, 'split()'));
    if (typeof limit !== 'number' || limit < 0) return parts;
    return limit === 0 ? [] : [...parts.slice(0, limit - 1), parts.slice(limit - 1).join(String(sep))];
  },
  find: (t, [re]) => regex(re).exec(asString(t, 'find()'))?.[0] ?? '',
  findAll: (t, [re]) =>
    [...asString(t, 'findAll()').matchAll(new RegExp(regex(re).source, 'gu'))].map((m) => m[0]),
  lowerAscii: (t) => asString(t, 'lowerAscii()').toLowerCase(),
  upperAscii: (t) => asString(t, 'upperAscii()').toUpperCase(),
  trim: (t) => asString(t, 'trim()').trim(),
  indexOf: (t, [s]) => asString(t, 'indexOf()').indexOf(asString(s, 'indexOf()')),
};

const FUNCTIONS: Readonly<Record<string, (args: readonly unknown[]) => unknown>> = {
  size: ([v]) => size(v),
  int: ([v]) => toInt(v),
  uint: ([v]) => Math.abs(toInt(v)),
  double: ([v]) => Number(v),
  string: ([v]) => (typeof v === 'string' ? v : JSON.stringify(v)),
  bool: ([v]) => v === true || v === 'true',
  type: ([v]) => typeName(v),
};

const MACROS = new Set(['all', 'exists', 'exists_one', 'filter', 'map']);

/** Whether the evaluator has this call: `has()`, a macro, a function or a method. */
export function isSupportedCall(name: string, onTarget: boolean): boolean {
  if (onTarget) return MACROS.has(name) || METHODS[name] !== undefined;
  return name === 'has' || FUNCTIONS[name] !== undefined;
}

/**
 * Evaluates `node` with the variables in `scope` (`self`, and `oldSelf` for transition rules).
 * @throws CelEvalError when the expression fails at run time, CelUnsupportedError when it uses
 * a function this evaluator does not have.
 */
export function evaluateCel(node: CelNode, scope: Scope): CelValue {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'ident': {
      if (!scope.has(node.name)) throw new CelEvalError(`undeclared reference to "${node.name}"`);
      return scope.get(node.name);
    }
    case 'member': {
      const target = evaluateCel(node.target, scope);
      if (!isMap(target) || !(node.name in target) || target[node.name] === undefined)
        throw new CelEvalError(`no such key: ${node.name}`);
      return target[node.name];
    }
    case 'index': {
      const target = evaluateCel(node.target, scope);
      const index = evaluateCel(node.index, scope);
      if (Array.isArray(target) && typeof index === 'number') {
        if (index < 0 || index >= target.length) throw new CelEvalError(`index ${index} out of range`);
        return target[index];
      }
      if (isMap(target) && typeof index === 'string' && index in target) return target[index];
      throw new CelEvalError(`no such key: ${String(index)}`);
    }
    case 'unary': {
      const v = evaluateCel(node.operand, scope);
      if (node.op === '!') return !asBool(v, '!');
      if (typeof v !== 'number') throw new CelEvalError(`-${typeName(v)}`);
      return -v;
    }
    case 'ternary':
      return asBool(evaluateCel(node.test, scope), '?:')
        ? evaluateCel(node.then, scope)
        : evaluateCel(node.otherwise, scope);
    case 'list':
      return node.items.map((i) => evaluateCel(i, scope));
    case 'map':
      return Object.fromEntries(
        node.entries.map(([k, v]) => [asString(evaluateCel(k, scope), 'a map key'), evaluateCel(v, scope)]),
      );
    case 'binary':
      return binary(node.op, node.left, node.right, scope);
    case 'call':
      return call(node, scope);
  }
}

function attempt(node: CelNode, scope: Scope): { value: unknown } | { error: unknown } {
  try {
    return { value: evaluateCel(node, scope) };
  } catch (error) {
    if (error instanceof CelUnsupportedError) throw error;
    return { error };
  }
}

function logical(op: '&&' | '||', left: CelNode, right: CelNode, scope: Scope): boolean {
  const decisive = op === '||';
  const l = attempt(left, scope);
  if ('value' in l && asBool(l.value, op) === decisive) return decisive;
  const r = attempt(right, scope);
  if ('value' in r && asBool(r.value, op) === decisive) return decisive;
  if ('error' in l) throw l.error;
  if ('error' in r) throw r.error;
  return !decisive;
}

function binary(op: string, leftNode: CelNode, rightNode: CelNode, scope: Scope): unknown {
  if (op === '&&' || op === '||') return logical(op, leftNode, rightNode, scope);
  const left = evaluateCel(leftNode, scope);
  const right = evaluateCel(rightNode, scope);
  switch (op) {
    case '==':
      return equal(left, right);
    case '!=':
      return !equal(left, right);
    case 'in':
      if (Array.isArray(right)) return right.some((x) => equal(x, left));
      if (isMap(right)) return typeof left === 'string' && left in right;
      throw new CelEvalError(`"in" needs a list or a map, got ${typeName(right)}`);
    case '+':
      if (Array.isArray(left) && Array.isArray(right)) return [...left, ...right];
      if (typeof left === 'string' && typeof right === 'string') return left + right;
      break;
    default:
      break;
  }
  if (typeof left !== typeof right || (typeof left !== 'number' && typeof left !== 'string'))
    throw new CelEvalError(`no such overload: ${typeName(left)} ${op} ${typeName(right)}`);
  const [a, b] = [left as number, right as number];
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
  if (typeof a !== 'number') throw new CelEvalError(`no such overload: string ${op} string`);
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      if (b === 0) throw new CelEvalError('division by zero');
      return Number.isInteger(a) && Number.isInteger(b) ? Math.trunc(a / b) : a / b;
    case '%':
      if (b === 0) throw new CelEvalError('modulus by zero');
      return a % b;
    default:
      throw new CelUnsupportedError(`operator ${op}`);
  }
}

function call(node: Extract<CelNode, { kind: 'call' }>, scope: Scope): unknown {
  if (node.target === undefined && node.name === 'has') {
    const [field] = node.args;
    if (field?.kind !== 'member') throw new CelEvalError('has() takes a field selection such as self.spec');
    const target = evaluateCel(field.target, scope);
    if (!isMap(target)) throw new CelEvalError(`has() on ${typeName(target)}`);
    return field.name in target && target[field.name] !== undefined && target[field.name] !== null;
  }
  if (node.target !== undefined && MACROS.has(node.name)) return macro(node, node.target, scope);
  const args = node.args.map((a) => evaluateCel(a, scope));
  if (node.target === undefined) {
    const fn = FUNCTIONS[node.name];
    if (fn === undefined) throw new CelUnsupportedError(`function ${node.name}()`);
    return fn(args);
  }
  const method = METHODS[node.name];
  if (method === undefined) throw new CelUnsupportedError(`method .${node.name}()`);
  return method(evaluateCel(node.target, scope), args);
}

function macro(node: Extract<CelNode, { kind: 'call' }>, targetNode: CelNode, scope: Scope): unknown {
  const [variable, body, third] = node.args;
  if (variable?.kind !== 'ident' || body === undefined)
    throw new CelEvalError(`${node.name}() takes a variable name and an expression`);
  const target = evaluateCel(targetNode, scope);
  const elements = Array.isArray(target) ? target : isMap(target) ? Object.keys(target) : undefined;
  if (elements === undefined) throw new CelEvalError(`${node.name}() over ${typeName(target)}`);
  const run = (element: unknown, expr: CelNode) =>
    evaluateCel(expr, new Map([...scope, [variable.name, element]]));
  switch (node.name) {
    case 'all':
    case 'exists': {
      const decisive = node.name === 'exists';
      let failure: unknown;
      for (const element of elements) {
        try {
          if (asBool(run(element, body), node.name) === decisive) return decisive;
        } catch (error) {
          if (error instanceof CelUnsupportedError) throw error;
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
      return !decisive;
    }
    case 'exists_one':
      return elements.filter((e) => asBool(run(e, body), node.name)).length === 1;
    case 'filter':
      return elements.filter((e) => asBool(run(e, body), node.name));
    default:
      return third === undefined
        ? elements.map((e) => run(e, body))
        : elements.filter((e) => asBool(run(e, body), node.name)).map((e) => run(e, third));
  }
}
