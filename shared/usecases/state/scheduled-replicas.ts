import { heldReplicas, isStaticNodePool, openWindows } from '../../core/index.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';

// A static NodePool's replicas as its schedules hold them now (Flotilla's own `replicas` windows,
// annotation `flotilla.io/schedules`): the static pass keeps that many NodeClaims, and disruption's
// StaticDrift counts to it. Pure.

/** The pool with `replicas` as its windows open at `nowMs` set it (unchanged when none does). */
export function withScheduledReplicas(pool: ClusterNodePool, nowMs: number): ClusterNodePool {
  const schedules = pool.schedules;
  if (schedules?.kind !== 'schedules' || !isStaticNodePool(pool.pool)) return pool;
  const held = heldReplicas(pool.pool, openWindows(schedules.schedules, nowMs));
  return held === pool.pool ? pool : { ...pool, pool: held };
}

/**
 * The static NodePools the static pass keeps at `nowMs`, at their scheduled replicas: not being
 * deleted, and not one whose schedules do not read (it launches and removes nothing for its
 * replicas; its `ScheduleHolds` condition says why).
 */
export function staticPoolsNow(pools: readonly ClusterNodePool[], nowMs: number): ClusterNodePool[] {
  return pools
    .filter((p) => isStaticNodePool(p.pool) && !p.deleting && p.schedules?.kind !== 'invalid')
    .map((p) => withScheduledReplicas(p, nowMs));
}
