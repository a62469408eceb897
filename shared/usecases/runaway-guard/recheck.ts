import type { Pod } from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { launchPausedUntil } from './decide.ts';
import { classifyNodeClaims, suspectWait } from './failures.ts';
import type { LaunchGuard } from './launch-backoff.ts';
import { readLaunchBackoff } from './state.ts';

// The guard judges a provisioner run's lists before it plans. The plan then reads from the API
// server the Nodes it counts on, and a Node can change in between: a rogue controller taints a
// new Node a moment after the lists were read, the plan no longer fits the pod on it, and launches
// another Node the guard never saw a reason to hold back. So before a NodePool launches what the
// confirmed plan asks of it, the Nodes and NodeClaims as confirmed are judged again, here, without
// writing anything: a taint that repels the pods, or a failure not counted yet, holds that pool's
// launches in this run, and the next run judges (and counts) it from its own lists. And the NodePools
// read again just before the launch hold any pool another judgement paused meanwhile. Pure.

export interface RecheckInput {
  /** The guard as the run's first judgement left it. */
  readonly guard: LaunchGuard;
  /** The NodePools whose new NodeClaims the confirmed plan would launch. */
  readonly launching: ReadonlySet<string>;
  readonly pools: readonly ClusterNodePool[];
  /** The NodeClaims and the Nodes as the API server has them, read to confirm the plan. */
  readonly claims: readonly ClusterNodeClaim[];
  readonly nodes: readonly ClusterNode[];
  readonly pendingPods: readonly Pod[];
  readonly nowMs: number;
}

/**
 * The guard with every launching NodePool that the confirmed objects show a suspect taint or an
 * uncounted failure on added to `paused` (and taken out of `probing`); the same object when there
 * is none.
 */
export function recheckLaunchGuard(input: RecheckInput): LaunchGuard {
  const held = new Map<string, string>();
  for (const pool of input.pools) {
    const name = pool.pool.name;
    if (!input.launching.has(name) || input.guard.paused.has(name) || pool.deleting) continue;
    const { failures, suspects } = classifyNodeClaims({
      pool,
      claims: input.claims,
      nodes: input.nodes,
      pendingPods: input.pendingPods,
      nowMs: input.nowMs,
    });
    const read = readLaunchBackoff(pool);
    const counted = read.kind === 'state' ? read.state.lastFailedCreatedMs : Number.NEGATIVE_INFINITY;
    const fresh = failures.find((f) => f.createdAtMs > counted);
    const [suspect] = suspects;
    if (suspect !== undefined) {
      held.set(name, suspectWait(suspect));
    } else if (fresh !== undefined) {
      held.set(name, `launches wait for the next run to count a failed NodeClaim: ${fresh.detail}`);
    }
  }
  if (held.size === 0) return input.guard;
  return {
    paused: new Map([...input.guard.paused, ...held]),
    probing: new Set([...input.guard.probing].filter((p) => !held.has(p))),
  };
}

/**
 * The guard with the NodePools whose launches the NodePools as read again now say are paused (a
 * disruption pass judges the nodes it empties and may pause a NodePool while a provisioner run
 * plans, after the run's own judgement) added to `paused` and taken out of `probing`, when one of
 * them would launch or the plan is solved again anyway (`resolving`): all of them, so that the plan
 * solved again does not move the pods to another pool paused meanwhile. A back-off annotation that
 * does not parse holds the pool too, as the guard reads one. The same object when no pool is held,
 * or none that launches while the plan stands.
 */
export function pausedSinceJudged(
  guard: LaunchGuard,
  launching: ReadonlySet<string>,
  pools: readonly Pick<ClusterNodePool, 'pool' | 'annotations' | 'conditions'>[],
  nowMs: number,
  resolving = false,
): LaunchGuard {
  const held = new Map<string, string>();
  for (const pool of pools) {
    const name = pool.pool.name;
    if (guard.paused.has(name)) continue;
    const read = readLaunchBackoff(pool);
    if (read.kind === 'unreadable') {
      held.set(name, `launches wait: the NodePool's launch back-off cannot be read (${read.problem})`);
      continue;
    }
    const until = read.kind === 'state' ? launchPausedUntil(read.state, nowMs) : undefined;
    if (until !== undefined && read.kind === 'state') {
      held.set(
        name,
        `launches paused until ${new Date(until).toISOString()} after ${read.state.failures} failed NodeClaim(s), a judgement made while this run planned`,
      );
    }
  }
  if (held.size === 0 || (!resolving && ![...held.keys()].some((name) => launching.has(name)))) return guard;
  return {
    paused: new Map([...guard.paused, ...held]),
    probing: new Set([...guard.probing].filter((p) => !held.has(p))),
  };
}
