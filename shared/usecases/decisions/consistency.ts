// The decision line of the NodeClaim consistency check (decision.ts writes it): one each time a
// NodeClaim's `ConsistentStateFound` condition turns False, and one when it turns True again.

/**
 * The garbage collector's pass found the Node of a NodeClaim contradicting it (`reason`
 * `ConsistencyCheckFailed`: `issues` says how; the condition turns False), or no longer
 * (`ConsistentStateFound`: the condition turns True again). It only reports: nothing is disrupted.
 */
export interface ConsistencyDecision {
  readonly kind: 'consistency';
  readonly reason: 'ConsistencyCheckFailed' | 'ConsistentStateFound';
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  readonly node: string;
  /** What contradicts the NodeClaim, one sentence each (its FailedConsistencyCheck Events). */
  readonly issues?: readonly string[];
}
