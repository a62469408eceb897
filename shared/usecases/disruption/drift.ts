import {
  findCondition,
  isConditionTrue,
  NodeClaimConditionType,
  transitionTimeMs,
} from '../../core/index.ts';
import type { Condition } from '../../ports/cluster.ts';
import { type DisruptionCandidate, type DisruptionCommand, disruptionMethod } from './method.ts';

// Drift, as Karpenter v1: NodeClaims whose `Drifted` condition is True are replaced one command at
// a time, empty ones first, then the longest-drifted; each command's pods must all fit the rest of
// the cluster plus the replacements the simulation plans, which launch before the candidate goes.
// Pods that block voluntary disruption (do-not-disrupt, a PodDisruptionBudget at its limit) hold a
// candidate back unless its NodeClaim has a terminationGracePeriod, which bounds the drain instead.

/** When the `Drifted` condition last turned, epoch ms; 0 when unreadable (the oldest). */
export function driftedSinceMs(conditions: readonly Condition[]): number {
  return transitionTimeMs(findCondition(conditions, NodeClaimConditionType.drifted)) ?? 0;
}

/** Whether a candidate's pods keep drift off it. */
export function driftBlocked(candidate: DisruptionCandidate): boolean {
  return candidate.blockers.length > 0 && candidate.nodeClaim.terminationGracePeriod === undefined;
}

export const drift = disruptionMethod({
  name: 'drift',
  reason: 'Drifted',
  order: 20,
  policy: { pick: 'first', validation: 'allValid' },
  disruptionClass: 'eventual',
  shouldDisrupt(candidate: DisruptionCandidate): boolean {
    return isConditionTrue(candidate.nodeClaim.status.conditions, NodeClaimConditionType.drifted);
  },
  computeCommands(candidates, allowed, simulate): readonly DisruptionCommand[] {
    const ordered = [...candidates].sort((a, b) => {
      const emptyFirst = Number(a.reschedulablePods.length > 0) - Number(b.reschedulablePods.length > 0);
      if (emptyFirst !== 0) return emptyFirst;
      const since =
        driftedSinceMs(a.nodeClaim.status.conditions) - driftedSinceMs(b.nodeClaim.status.conditions);
      return since !== 0 ? since : a.nodeClaim.name.localeCompare(b.nodeClaim.name);
    });
    for (const candidate of ordered) {
      if ((allowed.get(candidate.nodePool.pool.name) ?? 0) < 1) continue;
      if (driftBlocked(candidate)) continue;
      const result = candidate.reschedulablePods.length === 0 ? undefined : simulate([candidate]);
      if (result !== undefined && result.unschedulable.length > 0) continue;
      return [
        {
          method: drift,
          reason: 'Drifted',
          candidates: [candidate],
          replacements: result?.nodeClaims ?? [],
        },
      ];
    }
    return [];
  },
});
