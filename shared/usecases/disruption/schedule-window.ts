import { describeWindow, openWindows, Resource, windowLimits } from '../../core/index.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import {
  type DisruptionCandidate,
  type DisruptionCommand,
  disruptionMethod,
  type WindowExcess,
} from './method.ts';

// Flotilla's own: a window of a NodePool's schedules (`flotilla.io/schedules`) that holds the pool
// to limits below what its NodeClaims take empties it down to them. The nodes go as an emptiness
// command's do, nothing launched: the fewest pods first, through the budgets (those that name no
// reason: none can name `Scheduled`) and the PodDisruptionBudgets, and never a node whose pods may
// not be disrupted. The pods wait for the window to end, or go to another NodePool's nodes. A
// window that holds `noNewNodes` removes nothing. Pure.

/** What one NodeClaim counts against a limit on `resource`: its capacity (`nodes`: 1). */
function takes(claim: ClusterNodeClaim, resource: string): number {
  return resource === Resource.nodes ? 1 : (claim.status.capacity?.[resource] ?? 0);
}

/**
 * How far the NodeClaims that stay in `pool` (not deleting, in no command) are over the limits its
 * windows open at `nowMs` hold it to; undefined when no window lowers a limit they pass. A
 * NodeClaim not launched yet takes only its place in `nodes`.
 */
export function windowExcess(
  pool: ClusterNodePool,
  staying: readonly ClusterNodeClaim[],
  nowMs: number,
): WindowExcess | undefined {
  const schedules = pool.schedules;
  if (schedules?.kind !== 'schedules') return undefined;
  const held = windowLimits(pool.pool, openWindows(schedules.schedules, nowMs));
  if (held.size === 0) return undefined;
  const over = new Map<string, number>();
  for (const [resource, { limit }] of held) {
    let used = 0;
    for (const claim of staying) used += takes(claim, resource);
    if (used > limit) over.set(resource, used - limit);
  }
  if (over.size === 0) return undefined;
  const windows = [...new Set([...held.values()].map((h) => h.window))];
  return { over, heldBy: windows.map(describeWindow).join('; ') };
}

/** The fewest pods first, then the least disruption cost, the priciest, and the name. */
function byWindowOrder(a: DisruptionCandidate, b: DisruptionCandidate): number {
  return (
    a.reschedulablePods.length - b.reschedulablePods.length ||
    a.disruptionCost - b.disruptionCost ||
    (b.pricePerHour ?? 0) - (a.pricePerHour ?? 0) ||
    (a.nodeClaim.name < b.nodeClaim.name ? -1 : a.nodeClaim.name > b.nodeClaim.name ? 1 : 0)
  );
}

/**
 * Of `candidates` (in their order), those whose removal brings each pool's NodeClaims down to its
 * windows' limits: a candidate is taken while its pool is still over on a resource it takes, and
 * its pool's `allowed` (when given) has room.
 */
function takeUntilWithin(
  candidates: readonly DisruptionCandidate[],
  excess: ReadonlyMap<string, WindowExcess>,
  allowed: ReadonlyMap<string, number> | undefined,
): DisruptionCandidate[] {
  const over = new Map([...excess].map(([pool, e]) => [pool, new Map(e.over)]));
  const room = new Map(allowed);
  const taken: DisruptionCandidate[] = [];
  for (const candidate of candidates) {
    const pool = candidate.nodePool.pool.name;
    const left = over.get(pool);
    if (left === undefined || left.size === 0) continue;
    if (allowed !== undefined && (room.get(pool) ?? 0) < 1) continue;
    const claim = candidate.nodeClaim;
    if (![...left.keys()].some((r) => takes(claim, r) > 0)) continue;
    for (const [resource, amount] of left) {
      const still = amount - takes(claim, resource);
      if (still > 0) left.set(resource, still);
      else left.delete(resource);
    }
    room.set(pool, (room.get(pool) ?? 0) - 1);
    taken.push(candidate);
  }
  return taken;
}

export const scheduleWindow = disruptionMethod({
  name: 'schedule',
  reason: 'Scheduled',
  order: 5,
  policy: { pick: 'first', validation: 'keepValid' },
  disruptionClass: 'graceful',
  windowNodePools: true,
  shouldDisrupt(candidate: DisruptionCandidate): boolean {
    // A do-not-disrupt pod, or one whose PDB allows no eviction now, holds its node.
    return candidate.blockers.length === 0;
  },
  computeCommands(candidates, allowed, _simulate, context): readonly DisruptionCommand[] {
    const excess = context?.windowExcess;
    if (excess === undefined || excess.size === 0) return [];
    const chosen = takeUntilWithin([...candidates].sort(byWindowOrder), excess, allowed);
    if (chosen.length === 0) return [];
    const pools = [...new Set(chosen.map((c) => c.nodePool.pool.name))];
    const policy = pools.map((p) => `nodePool ${p}: ${excess.get(p)?.heldBy ?? ''}`).join('; ');
    return [{ method: scheduleWindow, reason: 'Scheduled', candidates: chosen, replacements: [], policy }];
  },
  keepNeeded(valid, windowExcess): readonly DisruptionCandidate[] {
    return takeUntilWithin(valid, windowExcess, undefined);
  },
});
