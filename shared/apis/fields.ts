import {
  type LabelSelector,
  type Labels,
  NODE_NAME_FIELD,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type Operator,
  parseResourceList,
  type ResourceList,
  type Taint,
  type TaintEffect,
  type Toleration,
  ValidationError,
} from '../core/index.ts';
import type { ReadResult } from '../ports/cluster.ts';

// The parts of Kubernetes objects every conversion shares: selectors, taints, tolerations,
// quantities, object names. Each throws ValidationError naming the object and the field.

const NODE_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']);

const SELECTOR_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);
/** What the API server admits in `matchFields`. */
const FIELD_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn']);

const TAINT_EFFECTS: ReadonlySet<string> = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

// Guarded readers. Objects reach the converters from the API server, from manifests a user wrote
// and from the simulator's store, so a field may be missing, null or of the wrong type whatever the
// client-node types say. Every field is read through one of these: absent (undefined or null, as
// Kubernetes treats null) gives undefined or an empty list; a wrong type throws ValidationError
// naming the object and the field, never a TypeError.

/** A JSON-ish value, as raw objects are read. */
type Raw = unknown;

/** What a value is, for error messages (never the value itself when it is not a primitive). */
function describe(value: Raw): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 64))}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function wrongType(object: string, field: string, expected: string, value: Raw): ValidationError {
  return new ValidationError(object, field, `must be ${expected}, not ${describe(value)}`);
}

/** A nested object (`{...}`, not a list); undefined when absent. */
export function readObject(
  value: Raw,
  object: string,
  field: string,
): Readonly<Record<string, Raw>> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw wrongType(object, field, 'an object', value);
  return value as Record<string, Raw>;
}

/** A list; empty when absent. */
export function readList(value: Raw, object: string, field: string): readonly Raw[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw wrongType(object, field, 'a list', value);
  return value;
}

/** Each item of a list, read with `read` at `field[i]`. */
export function readEach<T>(
  value: Raw,
  object: string,
  field: string,
  read: (item: Readonly<Record<string, Raw>>, field: string) => T,
): T[] {
  return readList(value, object, field).map((item, i) => {
    const itemField = `${field}[${i}]`;
    const fields = readObject(item, object, itemField);
    if (fields === undefined) throw new ValidationError(object, itemField, 'must be an object, not null');
    return read(fields, itemField);
  });
}

export function readString(value: Raw, object: string, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw wrongType(object, field, 'a string', value);
  return value;
}

export function requireString(value: Raw, object: string, field: string): string {
  const text = readString(value, object, field);
  if (text === undefined) throw new ValidationError(object, field, 'missing');
  return text;
}

/** An object name the API server accepts for a Node or a NodeClaim: a DNS subdomain. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * `name` when it is a DNS subdomain (RFC 1123, at most 253 characters), as the API server requires
 * of a Node's or a NodeClaim's name; a name read from a cache (the cluster summary) that is not one
 * never reaches a request path or a field selector.
 * @throws ValidationError otherwise.
 */
export function checkObjectName(name: string, object: string, field: string): string {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    throw new ValidationError(
      object,
      field,
      `${JSON.stringify(name.slice(0, 80))} is not a valid object name`,
    );
  }
  return name;
}

/** A finite number (`integer: true` for a whole one); undefined when absent. */
export function readNumber(value: Raw, object: string, field: string, integer = false): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw wrongType(object, field, integer ? 'an integer' : 'a number', value);
  }
  return value;
}

export function readBoolean(value: Raw, object: string, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw wrongType(object, field, 'true or false', value);
  return value;
}

/** A list of strings; empty when absent. */
export function readStrings(value: Raw, object: string, field: string): string[] {
  return readList(value, object, field).map((item, i) => requireString(item, object, `${field}[${i}]`));
}

/** A string-to-string map (labels, annotations, nodeSelector); undefined when absent. */
export function readStringMap(value: Raw, object: string, field: string): Record<string, string> | undefined {
  const map = readObject(value, object, field);
  if (map === undefined) return undefined;
  for (const [key, v] of Object.entries(map)) {
    if (typeof v !== 'string') throw wrongType(object, `${field}.${key}`, 'a string', v);
  }
  return map as Record<string, string>;
}

/** A resource map of quantities (`{ cpu: "500m" }`), parsed into integers; undefined when absent. */
export function readResources(value: Raw, object: string, field: string): ResourceList | undefined {
  const map = readObject(value, object, field);
  if (map === undefined) return undefined;
  for (const [key, v] of Object.entries(map)) {
    if (typeof v !== 'string' && typeof v !== 'number')
      throw wrongType(object, `${field}.${key}`, 'a quantity', v);
  }
  return parseResourceList(map as Record<string, string | number>, { object, field });
}

/** A timestamp (a Date as client-node gives it, or RFC 3339 text) in epoch milliseconds. */
export function readTime(value: Raw, object: string, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms =
    value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw wrongType(object, field, 'a timestamp', value);
  return ms;
}

export function isRecord(value: Raw): value is Readonly<Record<string, Raw>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `metadata.<key>` of a raw object when it is a non-empty string; never throws. */
export function metadataString(raw: Raw, key: string): string | undefined {
  const meta = isRecord(raw) ? raw['metadata'] : undefined;
  const value = isRecord(meta) ? meta[key] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `kind "ns/name"` (or `kind "name"` for a cluster-scoped kind) for error messages, whatever `raw` holds. */
export function objectName(kind: string, raw: Raw, namespaced: boolean): string {
  const name = metadataString(raw, 'name') ?? '<unnamed>';
  return namespaced
    ? `${kind} "${metadataString(raw, 'namespace') ?? '<no namespace>'}/${name}"`
    : `${kind} "${name}"`;
}

/** `pod "ns/name"`, for error messages. */
export function podObject(namespace: string | undefined, name: string | undefined): string {
  return `pod "${namespace ?? '<no namespace>'}/${name ?? '<unnamed>'}"`;
}

/** Node selector requirements, checked for known operators. */
export function toNodeSelectorRequirements(
  raw: unknown,
  object: string,
  field: string,
  operators: ReadonlySet<string> = NODE_OPERATORS,
): NodeSelectorRequirement[] {
  return readEach(raw, object, field, (r, at) => {
    const operator = requireString(r['operator'], object, `${at}.operator`);
    if (!operators.has(operator)) {
      throw new ValidationError(
        object,
        `${at}.operator`,
        `${JSON.stringify(operator)} is not one of ${[...operators].join(', ')}`,
      );
    }
    return {
      key: requireString(r['key'], object, `${at}.key`),
      operator: operator as Operator,
      ...optional(
        'values',
        r['values'] == null ? undefined : readStrings(r['values'], object, `${at}.values`),
      ),
    };
  });
}

export function toNodeSelectorTerm(term: unknown, object: string, field: string): NodeSelectorTerm {
  const fields = readObject(term, object, field) ?? {};
  const matchFields = toNodeSelectorRequirements(
    fields['matchFields'],
    object,
    `${field}.matchFields`,
    FIELD_OPERATORS,
  );
  for (const [i, r] of matchFields.entries()) {
    if (r.key !== NODE_NAME_FIELD) {
      throw new ValidationError(
        object,
        `${field}.matchFields[${i}].key`,
        `${JSON.stringify(r.key)} is not a node field; only ${NODE_NAME_FIELD} is`,
      );
    }
  }
  return {
    matchExpressions: toNodeSelectorRequirements(
      fields['matchExpressions'],
      object,
      `${field}.matchExpressions`,
    ),
    ...(matchFields.length > 0 ? { matchFields } : {}),
  };
}

/** A label selector, checked for known operators. */
export function toLabelSelector(raw: unknown, object: string, field: string): LabelSelector {
  const fields = readObject(raw, object, field) ?? {};
  const matchExpressions = toNodeSelectorRequirements(
    fields['matchExpressions'],
    object,
    `${field}.matchExpressions`,
    SELECTOR_OPERATORS,
  ) as NonNullable<LabelSelector['matchExpressions']>[number][];
  return {
    ...optional('matchLabels', readStringMap(fields['matchLabels'], object, `${field}.matchLabels`)),
    ...(matchExpressions.length > 0 ? { matchExpressions } : {}),
  };
}

export function toToleration(raw: unknown, object: string, field: string): Toleration {
  const t = readObject(raw, object, field) ?? {};
  const effect = readString(t['effect'], object, `${field}.effect`);
  if (effect && !TAINT_EFFECTS.has(effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  const operator = readString(t['operator'], object, `${field}.operator`);
  if (operator && operator !== 'Exists' && operator !== 'Equal') {
    throw new ValidationError(
      object,
      `${field}.operator`,
      `${JSON.stringify(operator)} is not Exists or Equal`,
    );
  }
  return {
    ...optional('key', readString(t['key'], object, `${field}.key`)),
    ...optional('operator', operator as 'Exists' | 'Equal' | undefined),
    ...optional('value', readString(t['value'], object, `${field}.value`)),
    ...optional('effect', (effect || undefined) as TaintEffect | undefined),
  };
}

/** A taint as written in a Node, NodePool or NodeClaim. */
export function toTaint(raw: unknown, object: string, field: string): Taint {
  const t = readObject(raw, object, field) ?? {};
  const effect = readString(t['effect'], object, `${field}.effect`);
  if (effect === undefined || !TAINT_EFFECTS.has(effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  return {
    key: requireString(t['key'], object, `${field}.key`),
    effect: effect as TaintEffect,
    ...optional('value', readString(t['value'], object, `${field}.value`) || undefined),
  };
}

/** Formats an integer resource amount as a Kubernetes quantity string (exact, no rounding). */
export function toQuantityString(resource: string, amount: number): string {
  if (resource === 'cpu') return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
  for (const [suffix, shift] of [
    ['Gi', 30],
    ['Mi', 20],
    ['Ki', 10],
  ] as const) {
    const unit = 2 ** shift;
    if (amount >= unit && amount % unit === 0) return `${amount / unit}${suffix}`;
  }
  return String(amount);
}

/** A ResourceList as Kubernetes quantity strings. */
export function toQuantityMap(list: ResourceList): Record<string, string> {
  return Object.fromEntries(
    Object.entries(list).map(([name, value]) => [name, toQuantityString(name, value)]),
  );
}

export function toMs(value: Date | string): number {
  return value instanceof Date ? value.getTime() : Date.parse(value);
}

export function nonEmpty(labels: Labels | undefined): Labels | undefined {
  return labels === undefined || Object.keys(labels).length === 0 ? undefined : labels;
}

/** `{ [key]: value }` when value is defined, else `{}` (for exactOptionalPropertyTypes). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Converts each object; one that does not convert is left out and reported in `problems` (and to
 * `onProblem`), so one malformed object never hides the others. The converters throw only
 * ValidationError; anything else they throw (a bug, not the object's fault) is still reported as
 * that object's ValidationError, with the error as `cause`, rather than failing the whole read.
 */
export function convertEach<R, T>(
  raws: readonly R[],
  convert: (raw: R) => T,
  onProblem?: (problem: ValidationError) => void,
): ReadResult<T> {
  const items: T[] = [];
  const problems: ValidationError[] = [];
  for (const raw of raws) {
    try {
      items.push(convert(raw));
    } catch (error) {
      const problem =
        error instanceof ValidationError
          ? error
          : new ValidationError(
              unknownObjectName(raw),
              '(unknown)',
              `could not be converted: ${error instanceof Error ? error.message : 'unexpected error'}`,
              { cause: error },
            );
      problems.push(problem);
      onProblem?.(problem);
    }
  }
  return { items, problems };
}

/** `kind "ns/name"` of an object of a kind not known here, for a conversion that failed unexpectedly. */
function unknownObjectName(raw: Raw): string {
  const kind =
    isRecord(raw) && typeof raw['kind'] === 'string' && raw['kind'] !== '' ? raw['kind'] : 'object';
  return objectName(
    kind.charAt(0).toLowerCase() + kind.slice(1),
    raw,
    metadataString(raw, 'namespace') !== undefined,
  );
}
