import {
  computeStaticDriftRoom,
  isConditionTrue,
  isStaticNodePool,
  NodeClaimConditionType,
  planStaticNodeClaim,
} from '../../core/index.ts';
import { driftBlocked, driftedSinceMs } from './drift.ts';
import {
  type DisruptionCandidate,
  type DisruptionCommand,
  disruptionMethod,
  type MethodContext,
  type SimulateScheduling,
} from './method.ts';

// StaticDrift, as Karpenter v1: a drifted node of a static NodePool (spec.replicas) is replaced one
// for one by a new NodeClaim of the pool's template, launched before the drifted one is deleted
// (the command waits for it to initialize), so the pool is short of its replicas for no longer
// than a drain. No scheduling simulation: a static node is there for its count, not for pods.
// Per NodePool it waits while a scale-down is pending, and takes at most what the budget allows
// for `Drifted`, never so many that the replacements take the pool past `limits.nodes`. Pods that
// block voluntary disruption (do-not-disrupt, a PodDisruptionBudget at its limit) hold a node
// back unless its NodeClaim has a terminationGracePeriod, as for drift. Pure.

/** What StaticDrift would do now: its commands, and the drifted nodes it holds back, with why. */
export interface StaticDriftPlan {
  readonly commands: readonly DisruptionCommand[];
  readonly held: readonly { readonly candidate: DisruptionCandidate; readonly why: string }[];
}

/** The longest-drifted first, then by name, so repeated passes pick the same nodes. */
function byDriftAge(a: DisruptionCandidate, b: DisruptionCandidate): number {
  const since = driftedSinceMs(a.nodeClaim.status.conditions) - driftedSinceMs(b.nodeClaim.status.conditions);
  return since !== 0 ? since : a.nodeClaim.name.localeCompare(b.nodeClaim.name);
}

/**
 * The commands for the drifted nodes of static NodePools (one candidate and one replacement each)
 * within `allowed` (per NodePool, the budget for `Drifted` now), and the nodes held back by their
 * pods, by `limits.nodes` or by a pool that cannot plan a replacement. Budget-blocked nodes are
 * not listed (the pass reports the NodePool's budget).
 */
export function planStaticDrift(
  candidates: readonly DisruptionCandidate[],
  allowed: ReadonlyMap<string, number>,
  context: Pick<MethodContext, 'instanceTypes' | 'staticPools' | 'daemonSets'> | undefined,
): StaticDriftPlan {
  const commands: DisruptionCommand[] = [];
  const held: { candidate: DisruptionCandidate; why: string }[] = [];
  const byPool = new Map<string, DisruptionCandidate[]>();
  for (const c of [...candidates].sort(byDriftAge)) {
    if (driftBlocked(c)) {
      held.push({ candidate: c, why: c.blockers[0]?.why ?? 'its pods block disruption' });
      continue;
    }
    const name = c.nodePool.pool.name;
    byPool.set(name, [...(byPool.get(name) ?? []), c]);
  }
  for (const [name, drifted] of [...byPool].sort(([a], [b]) => a.localeCompare(b))) {
    const first = drifted[0];
    const counts = context?.staticPools?.get(name);
    if (first === undefined || counts === undefined) continue;
    const pool = first.nodePool;
    const room = computeStaticDriftRoom({
      pool: pool.pool,
      counts,
      allowed: allowed.get(name) ?? 0,
      drifted: drifted.length,
    });
    if (room.kind === 'atLimit') {
      for (const c of drifted) {
        held.push({
          candidate: c,
          why: `static NodePool is at its node limit (limits.nodes ${room.limit}) and cannot stage a replacement`,
        });
      }
      continue;
    }
    if (room.kind !== 'replace') continue;
    const planned = planStaticNodeClaim({
      pool: pool.pool,
      instanceTypes: context?.instanceTypes(pool.pool.name, pool.nodeClassRef.name) ?? [],
      ...(context?.daemonSets === undefined ? {} : { daemonSets: context.daemonSets }),
    });
    if (!planned.ok) {
      for (const c of drifted) {
        held.push({ candidate: c, why: `static NodePool cannot plan a replacement: ${planned.reason}` });
      }
      continue;
    }
    for (const c of drifted.slice(0, room.count)) {
      commands.push({
        method: staticDrift,
        reason: 'Drifted',
        candidates: [c],
        replacements: [planned.plan],
      });
    }
  }
  return { commands, held };
}

export const staticDrift = disruptionMethod({
  name: 'static-drift',
  reason: 'Drifted',
  // Karpenter's order: after emptiness, before drift of dynamic NodePools.
  order: 15,
  policy: { pick: 'first', validation: 'allValid' },
  disruptionClass: 'eventual',
  staticNodePools: true,
  shouldDisrupt(candidate: DisruptionCandidate): boolean {
    return (
      isStaticNodePool(candidate.nodePool.pool) &&
      isConditionTrue(candidate.nodeClaim.status.conditions, NodeClaimConditionType.drifted)
    );
  },
  computeCommands(
    candidates: readonly DisruptionCandidate[],
    allowed: ReadonlyMap<string, number>,
    _simulate: SimulateScheduling,
    context?: MethodContext,
  ): readonly DisruptionCommand[] {
    return planStaticDrift(candidates, allowed, context).commands;
  },
});
