import { isConditionTrue, NodeClaimConditionType } from '../../core/index.ts';
import { type DisruptionCandidate, type DisruptionCommand, disruptionMethod } from './method.ts';

// Emptiness, as Karpenter v1: nodes without reschedulable pods (DaemonSet and mirror pods do not
// count) and without pods that block disruption, whose `Consolidatable` condition is True (consolidateAfter has passed since the last pod
// event), under either consolidation policy. All of them go in one command, each NodePool within
// its budget for `Empty`; nothing is launched.

export const emptiness = disruptionMethod({
  name: 'emptiness',
  reason: 'Empty',
  order: 10,
  policy: { pick: 'first', validation: 'keepValid' },
  disruptionClass: 'graceful',
  shouldDisrupt(candidate: DisruptionCandidate): boolean {
    return (
      candidate.reschedulablePods.length === 0 &&
      // A do-not-disrupt DaemonSet pod, or one whose PDB allows nothing, holds the node too.
      candidate.blockers.length === 0 &&
      candidate.nodePool.disruption.consolidateAfter !== 'Never' &&
      isConditionTrue(candidate.nodeClaim.status.conditions, NodeClaimConditionType.consolidatable)
    );
  },
  computeCommands(candidates, allowed): readonly DisruptionCommand[] {
    const left = new Map(allowed);
    const chosen: DisruptionCandidate[] = [];
    // Oldest first, so a NodePool's budget removes the longest-idle nodes.
    const ordered = [...candidates].sort(
      (a, b) =>
        (a.nodeClaim.createdAtMs ?? 0) - (b.nodeClaim.createdAtMs ?? 0) ||
        a.nodeClaim.name.localeCompare(b.nodeClaim.name),
    );
    for (const candidate of ordered) {
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
