import type { Condition } from '../ports/cloud.ts';
import type { ConditionUpdate } from '../ports/cluster.ts';

// Status conditions as Kubernetes keeps them: updates merged by type (a transition time only when
// the status changes) or removed, and times written in whole seconds. Pure.

/**
 * Merges condition updates by type. A condition whose status does not change keeps its
 * lastTransitionTime; one that changes (or is new) gets `now`. Reason and message always follow
 * the update. Conditions not updated are kept as they are.
 */
export function mergeConditions(
  current: readonly Condition[],
  updates: readonly ConditionUpdate[],
  now: Date,
  observedGeneration?: number,
): Condition[] {
  const out = [...current];
  for (const u of updates) {
    const i = out.findIndex((c) => c.type === u.type);
    const previous = i === -1 ? undefined : out[i];
    const next: Condition = {
      type: u.type,
      status: u.status,
      reason: u.reason,
      message: u.message,
      lastTransitionTime:
        previous !== undefined && previous.status === u.status && previous.lastTransitionTime !== ''
          ? previous.lastTransitionTime
          : toRfc3339Seconds(now),
      ...(observedGeneration === undefined ? {} : { observedGeneration }),
    };
    if (i === -1) out.push(next);
    else out[i] = next;
  }
  return out;
}

/** Conditions after removing the given types (as a status patch's `removeConditions` asks). */
export function withoutConditions(
  current: readonly Condition[],
  types: readonly string[] | undefined,
): Condition[] {
  return types === undefined || types.length === 0
    ? [...current]
    : current.filter((c) => !types.includes(c.type));
}

/** RFC 3339 with whole seconds, as Kubernetes writes `metav1.Time`. */
export function toRfc3339Seconds(instant: Date): string {
  return instant.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
