import type { V1LabelSelector, V1NodeSelectorTerm, V1Taint, V1Toleration } from '@kubernetes/client-node';
import {
  type LabelSelector,
  type Labels,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type Operator,
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

const TAINT_EFFECTS: ReadonlySet<string> = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/** `pod "ns/name"`, for error messages. */
export function podObject(namespace: string | undefined, name: string | undefined): string {
  return `pod "${namespace ?? '<no namespace>'}/${name ?? '<unnamed>'}"`;
}

/** Node selector requirements, checked for known operators. */
export function toNodeSelectorRequirements(
  raw: readonly { key: string; operator: string; values?: string[] | undefined }[] | undefined,
  object: string,
  field: string,
  operators: ReadonlySet<string> = NODE_OPERATORS,
): NodeSelectorRequirement[] {
  return (raw ?? []).map((r, i) => {
    if (!operators.has(r.operator)) {
      throw new ValidationError(
        object,
        `${field}[${i}].operator`,
        `${JSON.stringify(r.operator)} is not one of ${[...operators].join(', ')}`,
      );
    }
    return { key: r.key, operator: r.operator as Operator, ...optional('values', r.values) };
  });
}

export function toNodeSelectorTerm(
  term: V1NodeSelectorTerm,
  object: string,
  field: string,
): NodeSelectorTerm {
  if (term.matchFields?.length) {
    throw new ValidationError(
      object,
      `${field}.matchFields`,
      'matchFields is not supported (Karpenter ignores such pods)',
    );
  }
  return {
    matchExpressions: toNodeSelectorRequirements(term.matchExpressions, object, `${field}.matchExpressions`),
  };
}

/** A label selector, checked for known operators. */
export function toLabelSelector(raw: V1LabelSelector, object: string, field: string): LabelSelector {
  const matchExpressions = (raw.matchExpressions ?? []).map((e, i) => {
    if (!SELECTOR_OPERATORS.has(e.operator)) {
      throw new ValidationError(
        object,
        `${field}.matchExpressions[${i}].operator`,
        `${JSON.stringify(e.operator)} is not one of In, NotIn, Exists, DoesNotExist`,
      );
    }
    return {
      key: e.key,
      operator: e.operator as 'In' | 'NotIn' | 'Exists' | 'DoesNotExist',
      ...optional('values', e.values),
    };
  });
  return {
    ...optional('matchLabels', raw.matchLabels),
    ...(matchExpressions.length > 0 ? { matchExpressions } : {}),
  };
}

export function toToleration(t: V1Toleration, object: string, field: string): Toleration {
  if (t.effect && !TAINT_EFFECTS.has(t.effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(t.effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  if (t.operator && t.operator !== 'Exists' && t.operator !== 'Equal') {
    throw new ValidationError(
      object,
      `${field}.operator`,
      `${JSON.stringify(t.operator)} is not Exists or Equal`,
    );
  }
  return {
    ...optional('key', t.key),
    ...optional('operator', t.operator as 'Exists' | 'Equal' | undefined),
    ...optional('value', t.value),
    ...optional('effect', (t.effect || undefined) as TaintEffect | undefined),
  };
}

/** A taint as written in a Node, NodePool or NodeClaim. */
export function toTaint(t: Pick<V1Taint, 'key' | 'value' | 'effect'>, object: string, field: string): Taint {
  if (!TAINT_EFFECTS.has(t.effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(t.effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  return { key: t.key, effect: t.effect as TaintEffect, ...optional('value', t.value || undefined) };
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
 * Converts each object; one that does not convert (ValidationError) is left out and reported in
 * `problems` (and to `onProblem`), so one malformed object never hides the others.
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
      if (!(error instanceof ValidationError)) throw error;
      problems.push(error);
      onProblem?.(error);
    }
  }
  return { items, problems };
}
