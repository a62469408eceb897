import { isConditionTrue, NodeClaimConditionType } from '../../core/index.ts';
import { isEmptyCandidate } from './balanced.ts';
import { byConsolidationOrder } from './consolidation.ts';
import { type DisruptionCandidate, type DisruptionCommand, disruptionMethod } from './method.ts';

// Emptiness, as Karpenter v1.14: nodes with no reschedulable pod whose eviction cost is above 0
// (DaemonSet and mirror pods do not count; a pod whose negative deletion cost or priority brings
// its cost to 0 or below does not hold the node, and is evicted with it), without pods that block
// disruption, whose `Consolidatable` condition is True (consolidateAfter has passed since the last
// pod event), under either consolidation policy. All of them go in one command, each NodePool
// within its budget for `Empty`, taken in consolidation's order (the priciest first, then the
// oldest); nothing is launched.

/** Consolidation's order (the priciest first); among equals, the oldest first, then by name. */
function byEmptinessOrder(a: DisruptionCandidate, b: DisruptionCandidate): number {
  const ratio = (c: DisruptionCandidate) => (c.pricePerHour ?? 0) / Math.max(c.disruptionCost, 1);
  return (
    ratio(b) - ratio(a) ||
    (a.nodeClaim.createdAtMs ?? 0) - (b.nodeClaim.createdAtMs ?? 0) ||
    byConsolidationOrder(a, b)
  );
}

export const emptiness = disruptionMethod({
  name: 'emptiness',
  reason: 'Empty',
  order: 10,
  policy: { pick: 'first', validation: 'keepValid' },
  disruptionClass: 'graceful',
  shouldDisrupt(candidate: DisruptionCandidate): boolean {
    return (
      isEmptyCandidate(candidate) &&
      // A do-not-disrupt DaemonSet pod, or one whose PDB allows nothing, holds the node too.
      candidate.blockers.length === 0 &&
      candidate.nodePool.disruption.consolidateAfter !== 'Never' &&
      isConditionTrue(candidate.nodeClaim.status.conditions, NodeClaimConditionType.consolidatable)
    );
  },
  computeCommands(candidates, allowed): readonly DisruptionCommand[] {
    const left = new Map(allowed);
    const chosen: DisruptionCandidate[] = [];
    for (const candidate of [...candidates].sort(byEmptinessOrder)) {
      const pool = candidate.nodePool.pool.name;
      const room = left.get(pool) ?? 0;
      if (room < 1) continue;
      left.set(pool, room - 1);
      chosen.push(candidate);
    }
    if (chosen.length === 0) return [];
    return [{ method: emptiness, reason: 'Empty', candidates: chosen, replacements: [] }];
  },
});
