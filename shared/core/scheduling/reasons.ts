// Why pods could not be placed, as values.
import { toPodRef } from '../pod.ts';
import type { UnschedulablePod } from '../scheduling-types.ts';
import type { PodState } from './model.ts';

/** The pod with the reasons of its last attempt, one per NodePool, and a one-line message. */
export function unschedulableValue(ps: PodState): UnschedulablePod {
  const reasons = ps.lastReasons;
  return {
    pod: toPodRef(ps.pod),
    reasons,
    message: reasons
      .map((r) => (r.nodePool === '' ? r.reason : `nodePool ${r.nodePool}: ${r.reason}`))
      .join('; '),
  };
}
