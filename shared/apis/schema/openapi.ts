import { CelEvalError, CelUnsupportedError, evaluateCel } from './cel-eval.ts';
import { type CelNode, CelSyntaxError, mentions, parseCel } from './cel-parse.ts';
import { patternHint } from './pattern-hints.ts';

// Validates a value against a CustomResourceDefinition's structural OpenAPI v3 schema as the
// Kubernetes API server does on create (defaults applied first, then types, formats, patterns,
// enums, bounds, required fields and list types, then the `x-kubernetes-validations` CEL rules),
// and refuses fields the schema does not declare, as `kubectl apply --validate=strict` does.

/** The parts of a JSONSchemaProps the API server checks. */
export interface SchemaProps {
  readonly type?: string;
  readonly properties?: Readonly<Record<string, SchemaProps>>;
  readonly additionalProperties?: SchemaProps | boolean;
  readonly items?: SchemaProps;
  readonly required?: readonly string[];
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  /** As in OpenAPI; `quantity` (a Kubernetes quantity, string or number) is Flotilla's own. */
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly default?: unknown;
  readonly nullable?: boolean;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-list-type'?: string;
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-validations'?: readonly {
    readonly rule: string;
    readonly message?: string;
    readonly fieldPath?: string;
  }[];
}

export type FieldPath = readonly (string | number)[];

const NOTHING: ReadonlySet<string> = new Set();

/** A path built as the walk goes down, turned into a FieldPath only for a problem. */
type Trail = { readonly up: Trail; readonly key: string | number } | undefined;

function pathOf(trail: Trail): (string | number)[] {
  const out: (string | number)[] = [];
  for (let t = trail; t !== undefined; t = t.up) out.unshift(t.key);
  return out;
}

/** One problem, at the field it is about (a key, a list item, or the object missing a field). */
export interface SchemaProblem {
  readonly path: FieldPath;
  readonly message: string;
}

export interface SchemaCheckOptions {
  /** The object before a change: transition rules (those reading `oldSelf`) run only with it. */
  readonly old?: unknown;
  /** Fields of the root object the caller checks itself (e.g. `metadata`). */
  readonly skipRootFields?: readonly string[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?(\d+(\.\d*)?|\.\d+))?$/;
const INT_RANGE: Readonly<Record<string, readonly [number, number]>> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

const patterns = new Map<string, RegExp>();
function patternOf(pattern: string): RegExp {
  let re = patterns.get(pattern);
  if (re === undefined) {
    re = new RegExp(pattern, 'u');
    patterns.set(pattern, re);
  }
  return re;
}

const compiled = new Map<string, CelNode | CelSyntaxError>();
function compile(rule: string): CelNode | CelSyntaxError {
  let node = compiled.get(rule);
  if (node === undefined) {
    try {
      node = parseCel(rule);
    } catch (error) {
      if (!(error instanceof CelSyntaxError)) throw error;
      node = error;
    }
    compiled.set(rule, node);
  }
  return node;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (isObject(v)) return 'an object';
  return `${typeof v === 'string' ? 'the string' : typeof v} ${JSON.stringify(v)}`;
}

/** Edit distance, for "did you mean" suggestions. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** `unknown field "taint"; did you mean "taints"?`, or the fields the object has. */
export function unknownFieldMessage(key: string, known: readonly string[]): string {
  const close = known
    .map((k) => ({ k, d: distance(key, k) }))
    .filter(
      ({ k, d }) => d <= Math.max(1, Math.floor(k.length / 4)) || k.startsWith(key) || key.startsWith(k),
    )
    .sort((a, b) => a.d - b.d)[0];
  if (close !== undefined) return `unknown field "${key}"; did you mean "${close.k}"?`;
  return known.length === 0
    ? `unknown field "${key}": this object takes no fields`
    : `unknown field "${key}"; the fields here are ${known.join(', ')}`;
}

/**
 * Every problem `value` has against `schema`, in document order of the checks (types before
 * rules). A rule that cannot be evaluated here is reported as such, never taken as passed.
 */
export function checkSchema(
  value: unknown,
  schema: SchemaProps,
  options: SchemaCheckOptions = {},
): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  check(value, schema, undefined, options.old, problems, new Set(options.skipRootFields ?? []));
  return problems;
}

/** Returns whether the value has the schema's type (so its rules can run). */
function check(
  value: unknown,
  schema: SchemaProps,
  path: Trail,
  old: unknown,
  problems: SchemaProblem[],
  skip: ReadonlySet<string> = NOTHING,
): boolean {
  const add = (message: string, at: Trail = path) => problems.push({ path: pathOf(at), message });
  let typed = true;
  if (schema.format === 'quantity') {
    if (typeof value !== 'string' && typeof value !== 'number') {
      add(`must be a quantity such as 500m, 2Gi or 1.5, got ${describe(value)}`);
      return false;
    }
  } else if (schema['x-kubernetes-int-or-string'] === true) {
    if (typeof value !== 'string' && !Number.isInteger(value)) {
      add(`must be an integer or a string, got ${describe(value)}`);
      return false;
    }
  } else {
    switch (schema.type) {
      case 'object':
        if (!isObject(value)) typed = false;
        break;
      case 'array':
        if (!Array.isArray(value)) typed = false;
        break;
      case 'string':
        if (typeof value !== 'string') typed = false;
        break;
      case 'integer':
        if (!Number.isInteger(value)) typed = false;
        break;
      case 'number':
        if (typeof value !== 'number') typed = false;
        break;
      case 'boolean':
        if (typeof value !== 'boolean') typed = false;
        break;
      default:
        break;
    }
    if (!typed) {
      add(
        `must be ${schema.type === 'integer' || schema.type === 'array' ? 'an' : 'a'} ${schema.type === 'array' ? 'list' : schema.type}, got ${describe(value)}`,
      );
      return false;
    }
  }

  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    add(
      `must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}, got ${JSON.stringify(value)}`,
    );
  }
  if (typeof value === 'string') checkString(value, schema, add);
  if (typeof value === 'number') checkNumber(value, schema, add);

  let childrenTyped = true;
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      add(
        `must have at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}, has ${value.length}`,
      );
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      add(`must have at most ${schema.maxItems} items, has ${value.length}`);
    checkListType(value, schema, add, path);
    value.forEach((item, i) => {
      if (schema.items !== undefined && !check(item, schema.items, { up: path, key: i }, undefined, problems))
        childrenTyped = false;
    });
  } else if (isObject(value)) {
    childrenTyped = checkObject(value, schema, path, old, problems, skip);
  }

  if (childrenTyped && schema['x-kubernetes-validations'] !== undefined)
    runRules(withDefaults(value, schema), schema, path, old, add);
  return true;
}

function checkString(value: string, schema: SchemaProps, add: (m: string) => void): void {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength)
    add(
      schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters long`,
    );
  if (schema.maxLength !== undefined && length > schema.maxLength)
    add(`must be at most ${schema.maxLength} characters long, is ${length}`);
  if (schema.pattern !== undefined && !patternOf(schema.pattern).test(value)) {
    const hint = patternHint(schema.pattern);
    add(
      hint === undefined
        ? `${JSON.stringify(value)} does not match the pattern ${schema.pattern}`
        : `${JSON.stringify(value)} is not ${hint}`,
    );
  }
  if (schema.format === 'quantity' && !QUANTITY.test(value))
    add(`${JSON.stringify(value)} is not a Kubernetes quantity such as 500m, 2Gi or 1.5`);
  if (schema.format === 'date-time' && !RFC3339.test(value))
    add(`${JSON.stringify(value)} is not an RFC 3339 date-time such as 2026-01-01T00:00:00Z`);
}

function checkNumber(value: number, schema: SchemaProps, add: (m: string) => void): void {
  const range = schema.format === undefined ? undefined : INT_RANGE[schema.format];
  if (range !== undefined && (value < range[0] || value > range[1]))
    add(`${value} is out of range for ${schema.format}`);
  if (schema.minimum !== undefined) {
    if (schema.exclusiveMinimum === true ? value <= schema.minimum : value < schema.minimum)
      add(
        `must be ${schema.exclusiveMinimum === true ? 'greater than' : 'at least'} ${schema.minimum}, got ${value}`,
      );
  }
  if (schema.maximum !== undefined) {
    if (schema.exclusiveMaximum === true ? value >= schema.maximum : value > schema.maximum)
      add(
        `must be ${schema.exclusiveMaximum === true ? 'less than' : 'at most'} ${schema.maximum}, got ${value}`,
      );
  }
}

function checkListType(
  value: readonly unknown[],
  schema: SchemaProps,
  add: (m: string, at?: Trail) => void,
  path: Trail,
): void {
  const listType = schema['x-kubernetes-list-type'];
  if (listType !== 'set' && listType !== 'map') return;
  const keys = schema['x-kubernetes-list-map-keys'] ?? [];
  const seen = new Set<string>();
  value.forEach((item, i) => {
    const key = JSON.stringify(
      listType === 'set' ? item : keys.map((k) => (isObject(item) ? item[k] : undefined)),
    );
    if (seen.has(key)) add(`duplicate entry ${key}`, { up: path, key: i });
    seen.add(key);
  });
}

function checkObject(
  value: Record<string, unknown>,
  schema: SchemaProps,
  path: Trail,
  old: unknown,
  problems: SchemaProblem[],
  skip: ReadonlySet<string>,
): boolean {
  const add = (message: string, at: Trail = path) => problems.push({ path: pathOf(at), message });
  const properties = schema.properties ?? {};
  const additional = schema.additionalProperties;
  const size = Object.keys(value).length;
  if (schema.minProperties !== undefined && size < schema.minProperties)
    add(`must have at least ${schema.minProperties} entries, has ${size}`);
  if (schema.maxProperties !== undefined && size > schema.maxProperties)
    add(`must have at most ${schema.maxProperties} entries, has ${size}`);
  // A rule over an object that lacks a required field would only fail to find it: it waits.
  let typed = true;
  for (const field of schema.required ?? []) {
    const present = value[field] !== undefined && value[field] !== null;
    if (!present && properties[field]?.default === undefined && !skip.has(field)) {
      add(`missing required field "${field}"`);
      typed = false;
    }
  }
  for (const [key, child] of Object.entries(value)) {
    if (skip.has(key)) continue;
    // The API server drops nulls of fields that are not nullable before it validates.
    if (child === null && properties[key]?.nullable !== true) continue;
    const childSchema = properties[key] ?? (typeof additional === 'object' ? additional : undefined);
    if (childSchema === undefined) {
      if (additional !== true && schema['x-kubernetes-preserve-unknown-fields'] !== true)
        add(unknownFieldMessage(key, Object.keys(properties)), { up: path, key });
      continue;
    }
    const childOld = isObject(old) ? old[key] : undefined;
    if (!check(child, childSchema, { up: path, key }, childOld, problems)) typed = false;
  }
  return typed;
}

/** The value as the API server stores it after defaulting: absent fields with a default filled in. */
export function withDefaults(value: unknown, schema: SchemaProps): unknown {
  if (!isObject(value) || schema.properties === undefined) return value;
  let out: Record<string, unknown> | undefined;
  for (const [key, prop] of Object.entries(schema.properties)) {
    if ((value[key] === undefined || value[key] === null) && prop.default !== undefined) {
      out ??= { ...value };
      out[key] = withDefaults(structuredClone(prop.default), prop);
    } else if (isObject(value[key])) {
      const inner = withDefaults(value[key], prop);
      if (inner !== value[key]) {
        out ??= { ...value };
        out[key] = inner;
      }
    }
  }
  return out ?? value;
}

function runRules(
  self: unknown,
  schema: SchemaProps,
  path: Trail,
  old: unknown,
  add: (m: string, at?: Trail) => void,
): void {
  for (const rule of schema['x-kubernetes-validations'] ?? []) {
    const node = compile(rule.rule);
    const at = (rule.fieldPath ?? '')
      .split('.')
      .filter((s) => s !== '')
      .reduce<Trail>((up, key) => ({ up, key }), path);
    const message = rule.message ?? `failed rule: ${rule.rule}`;
    if (node instanceof CelSyntaxError) {
      add(`cannot check the rule ${JSON.stringify(rule.rule)} (${message}): ${node.message}`, at);
      continue;
    }
    const transition = mentions(node, 'oldSelf');
    // As on create, a transition rule runs only where there is an old value to compare with.
    if (transition && old === undefined) continue;
    const scope = new Map<string, unknown>([['self', self]]);
    if (transition) scope.set('oldSelf', withDefaults(old, schema));
    try {
      const result = evaluateCel(node, scope);
      if (result !== true) add(message, at);
    } catch (error) {
      if (error instanceof CelUnsupportedError) {
        add(
          `cannot check the rule ${JSON.stringify(rule.rule)} (${message}): ${error.message} is not supported`,
          at,
        );
      } else if (error instanceof CelEvalError) {
        add(`${message} (the rule failed: ${error.message})`, at);
      } else {
        throw error;
      }
    }
  }
}
