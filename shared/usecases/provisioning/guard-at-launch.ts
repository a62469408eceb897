import type { Cluster } from '../../ports/cluster.ts';
import { type LaunchGuard, pausedSinceJudged, recheckLaunchGuard } from '../runaway-guard/index.ts';
import type { ClusterState } from '../state/cluster-state.ts';
import type { ConfirmedPlan } from './confirmed-plan.ts';

// The runaway guard judges a run's lists once, before it plans. Two things can change before the
// round launches, and each holds back the NodePools it concerns for this run (their pods may go to
// other pools when the plan is solved again): the Nodes the plan's confirmation read from the API
// server (a taint put on a new Node after the lists were read), and the NodePools themselves (a
// disruption pass that emptied a tainted node paused its pool while this run planned). The
// NodePools are read again only when the plan launches something.

/**
 * The guard for the round's launches: `guard` with the NodePools that would launch and that the
 * confirmed objects, or the NodePools as read now, show should wait. The same object when none.
 * @throws ClusterApiError when the NodePools cannot be read (nothing launches on a guess).
 */
export async function guardAtLaunch(
  ports: { readonly cluster: Pick<Cluster, 'nodePools'>; readonly clock: { now(): Date } },
  guard: LaunchGuard,
  listed: ClusterState,
  plan: ConfirmedPlan,
): Promise<LaunchGuard> {
  const launching = new Set(plan.result.nodeClaims.map((p) => p.nodePoolName));
  if (launching.size === 0) return guard;
  // Only the Nodes the confirmation read are judged again: a listed Node may be false.
  const rechecked =
    plan.state === listed
      ? guard
      : recheckLaunchGuard({
          guard,
          launching,
          pools: plan.state.nodePools,
          claims: plan.state.nodeClaims,
          nodes: plan.state.nodes.filter((n) => plan.confirmedNodes.has(n.name)),
          pendingPods: plan.state.pendingPods,
          nowMs: ports.clock.now().getTime(),
        });
  const pools = await ports.cluster.nodePools();
  // When the Nodes hold a pool, the plan is solved again whatever the NodePools say: every pool
  // paused meanwhile is held for that solve too.
  return pausedSinceJudged(
    rechecked,
    launching,
    pools.items,
    ports.clock.now().getTime(),
    rechecked !== guard,
  );
}
