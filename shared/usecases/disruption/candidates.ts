import {
  type BudgetCounts,
  DISRUPTED_TAINT,
  isConditionTrue,
  isReschedulable,
  isStaticNodePool,
  Label,
  NodeClaimConditionType,
  nodeDoNotDisrupt,
  type PdbLimit,
  podBlockers,
  type StaticPoolCounts,
} from '../../core/index.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  PodDisruptionBudget,
} from '../../ports/cluster.ts';
import { budgetStanding } from '../state/budget-counts.ts';
import { poolInstanceTypes, type SchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from '../state/node-index.ts';
import { balancedDisruption, type PoolTotals } from './balanced.ts';
import type { DisruptionCandidate, DisruptionMethod, MethodContext, WindowExcess } from './method.ts';
import { spotFailedAtMs } from './replacement-capacity.ts';
import { windowExcess } from './schedule-window.ts';

// Which nodes voluntary disruption may look at, and how many each NodePool counts for its budgets,
// as Karpenter v1 decides: a NodeClaim with its Node, initialized, of a NodePool that exists, not
// being deleted, not already in a command, not nominated for pending pods, and without
// `karpenter.sh/do-not-disrupt` on the Node; and, Flotilla's own rule, no pod on it that could not
// be read (what it needs, and whether it may move, is unknown). A static NodePool's nodes are kept
// apart: only StaticDrift looks at them, and only at the drifted ones. The nodes of a NodePool a
// schedule's window holds below what it runs are also listed apart, nominated ones included: the
// window's method (schedule-window.ts) empties the pool whether or not pods wait for them. Pure.

/** The cluster's PodDisruptionBudgets as the pod blockers read them. */
export function pdbLimits(budgets: readonly PodDisruptionBudget[]): PdbLimit[] {
  return budgets.map((b) => ({
    namespace: b.namespace,
    name: b.name,
    ...(b.selector === undefined ? {} : { selector: b.selector }),
    disruptionsAllowed: b.disruptionsAllowed,
    ...(b.unhealthyPodEvictionPolicy === 'AlwaysAllow' ? { alwaysAllowUnhealthy: true } : {}),
  }));
}

export interface CandidateInput {
  readonly nodeClaims: readonly ClusterNodeClaim[];
  readonly nodes: readonly ClusterNode[];
  readonly nodePools: ReadonlyMap<string, ClusterNodePool>;
  readonly pdbs: readonly PdbLimit[];
  /** NodeClaims already in a disruption command. */
  readonly inCommand: ReadonlySet<string>;
  /** Replacements still waiting for the pods of the nodes they replace: not candidates. */
  readonly replacing?: ReadonlySet<string>;
  /** Nodes the scheduler would give pending pods now (Karpenter's nominated nodes). */
  readonly nominated: ReadonlySet<string>;
  /** The running offering's price of a NodeClaim in USD per hour, when known. */
  readonly priceOf: (claim: ClusterNodeClaim) => number | undefined;
  /** Whether the catalog only assumes that price. @default never */
  readonly priceAssumedOf?: (claim: ClusterNodeClaim) => boolean;
  readonly nowMs: number;
}

/** A node left out of voluntary disruption, and why (for `DisruptionBlocked`). */
export interface Excluded {
  readonly nodeClaim: ClusterNodeClaim;
  readonly node: ClusterNode;
  /** What excludes it: a pod that cannot be read, the node's `karpenter.sh/do-not-disrupt`, a nomination. */
  readonly kind: 'podUnreadable' | 'doNotDisrupt' | 'nominated';
  readonly why: string;
}

export interface CandidateSet {
  /** The nodes of dynamic NodePools. */
  readonly candidates: readonly DisruptionCandidate[];
  /** The drifted nodes of static NodePools (StaticDrift's alone). @default none */
  readonly staticCandidates?: readonly DisruptionCandidate[];
  /** Per static NodePool, its NodeClaims as StaticDrift counts them. @default none */
  readonly staticPools?: ReadonlyMap<string, StaticPoolCounts>;
  /** Nodes with a reason users should see (do-not-disrupt node, nominated); silent skips are not listed. */
  readonly excluded: readonly Excluded[];
  /** Per NodePool: its nodes that count for budgets, and those being disrupted. */
  readonly counts: ReadonlyMap<string, BudgetCounts>;
  /** Per NodePool, over its nodes with a known price (candidates or not): `Balanced`'s totals. */
  readonly poolTotals: ReadonlyMap<string, PoolTotals>;
  /** Per NodePool, when a consolidation replacement last failed on one of its NodeClaims, epoch ms. */
  readonly spotFailedAtMs: ReadonlyMap<string, number>;
  /** The nodes of NodePools a schedule's window holds below what they run (nominated ones too). @default none */
  readonly windowCandidates?: readonly DisruptionCandidate[];
  /** Per such NodePool, how far over its window's limits it is. @default none */
  readonly windowExcess?: ReadonlyMap<string, WindowExcess>;
}

/** The candidates `method` looks at: a static NodePool's, a held window's, or the others. */
export function lookedAt(
  method: Pick<DisruptionMethod, 'staticNodePools' | 'windowNodePools'>,
  set: CandidateSet,
): readonly DisruptionCandidate[] {
  if (method.staticNodePools === true) return set.staticCandidates ?? [];
  if (method.windowNodePools === true) return set.windowCandidates ?? [];
  return set.candidates;
}

export function buildCandidates(input: CandidateInput): CandidateSet {
  const nodeFor = nodeIndex(input.nodes);
  const candidates: DisruptionCandidate[] = [];
  const staticCandidates: DisruptionCandidate[] = [];
  const staticPools = new Map<string, { members: number; leaving: number; deleting: number }>();
  const excluded: Excluded[] = [];
  const counts = new Map<string, { nodes: number; disrupting: number }>();
  const poolTotals = new Map<string, { pricePerHour: number; disruptionCost: number }>();
  const spotFailed = new Map<string, number>();
  /** Per NodePool with schedules, its NodeClaims that stay (not deleting, in no command). */
  const staying = new Map<string, ClusterNodeClaim[]>();
  const windowable: DisruptionCandidate[] = [];
  for (const claim of input.nodeClaims) {
    // A standalone NodeClaim is no candidate: only expiration, interruption and deletion remove it.
    const pool = claim.nodePoolName === undefined ? undefined : input.nodePools.get(claim.nodePoolName);
    if (pool === undefined) continue;
    const failedAt = spotFailedAtMs(claim.annotations);
    if (failedAt !== undefined && failedAt > (spotFailed.get(pool.pool.name) ?? Number.NEGATIVE_INFINITY)) {
      spotFailed.set(pool.pool.name, failedAt);
    }
    const scheduled = pool.schedules?.kind === 'schedules';
    if (scheduled && !claim.deleting && !input.inCommand.has(claim.name)) {
      const list = staying.get(pool.pool.name);
      if (list === undefined) staying.set(pool.pool.name, [claim]);
      else list.push(claim);
    }
    const isStatic = isStaticNodePool(pool.pool);
    if (isStatic) {
      const c = staticPools.get(pool.pool.name) ?? { members: 0, leaving: 0, deleting: 0 };
      staticPools.set(pool.pool.name, c);
      if (claim.deleting) c.deleting += 1;
      else c.members += 1;
      if (!claim.deleting && input.inCommand.has(claim.name)) c.leaving += 1;
    }
    const node = nodeFor(claim);
    const count = counts.get(pool.pool.name) ?? { nodes: 0, disrupting: 0 };
    counts.set(pool.pool.name, count);
    // As Karpenter: the NodePool's initialized nodes, and those of them being disrupted (deleted,
    // in a command, or NotReady: the counts are for the disruption methods' reasons, none of them
    // node repair's `Unhealthy`).
    const standing = budgetStanding(claim, node, input.inCommand.has(claim.name), true);
    if (standing.counted) count.nodes += 1;
    if (standing.disrupting) count.disrupting += 1;
    if (!standing.counted || standing.disrupting || node === undefined) continue;
    // As Karpenter, the whole NodePool's nodes that have a price count for Balanced's fractions.
    const price = input.priceOf(claim);
    if (price !== undefined && price > 0) {
      const totals = poolTotals.get(pool.pool.name) ?? { pricePerHour: 0, disruptionCost: 0 };
      totals.pricePerHour += price;
      totals.disruptionCost += balancedDisruption(node.pods.filter(isReschedulable));
      poolTotals.set(pool.pool.name, totals);
    }
    // A static NodePool holds its replicas: of the voluntary methods only StaticDrift takes its
    // nodes, the drifted ones, as in Karpenter (expiration and interruption still take any, and the
    // static pass launches its replicas again); the others are not looked at, nor reported.
    if (isStatic && !isConditionTrue(claim.status.conditions, NodeClaimConditionType.drifted)) continue;
    if (input.replacing?.has(claim.name) === true) continue;
    if (node.labels[Label.nodePool] === undefined) continue;
    if (
      (node.taints ?? []).some((t) => t.key === DISRUPTED_TAINT.key && t.effect === DISRUPTED_TAINT.effect)
    ) {
      continue;
    }
    const unreadable = node.unreadablePods ?? [];
    if (unreadable.length > 0) {
      const more = unreadable.length > 1 ? ` (and ${unreadable.length - 1} more)` : '';
      excluded.push({
        nodeClaim: claim,
        node,
        kind: 'podUnreadable',
        why: `a pod on it cannot be read: ${unreadable[0]}${more}`,
      });
      continue;
    }
    if (nodeDoNotDisrupt(node.annotations)) {
      excluded.push({
        nodeClaim: claim,
        node,
        kind: 'doNotDisrupt',
        why: 'node has karpenter.sh/do-not-disrupt',
      });
      continue;
    }
    const reschedulablePods = node.pods.filter(isReschedulable);
    const candidate: DisruptionCandidate = {
      nodeClaim: claim,
      node,
      nodePool: pool,
      ...(price === undefined ? {} : { pricePerHour: price }),
      ...(price !== undefined && input.priceAssumedOf?.(claim) === true ? { priceAssumed: true } : {}),
      disruptionCost: balancedDisruption(reschedulablePods),
      reschedulablePods,
      blockers: podBlockers(node.pods, input.pdbs, input.nowMs),
    };
    if (scheduled && !isStatic) windowable.push(candidate);
    if (input.nominated.has(node.name)) {
      excluded.push({ nodeClaim: claim, node, kind: 'nominated', why: 'node is nominated for pending pods' });
      continue;
    }
    (isStatic ? staticCandidates : candidates).push(candidate);
  }
  const excess = new Map<string, WindowExcess>();
  for (const [name, claims] of staying) {
    const pool = input.nodePools.get(name);
    const over = pool === undefined ? undefined : windowExcess(pool, claims, input.nowMs);
    if (over !== undefined) excess.set(name, over);
  }
  return {
    windowCandidates: windowable.filter((c) => excess.has(c.nodePool.pool.name)),
    windowExcess: excess,
    candidates,
    staticCandidates,
    staticPools,
    excluded,
    counts,
    poolTotals,
    spotFailedAtMs: spotFailed,
  };
}

/** Prices and per-NodePool totals of a candidate set, for consolidation. */
export function methodContextFor(
  set: CandidateSet,
  input: SchedulingInput | undefined,
  nowMs: number,
  spotToSpot = false,
): MethodContext {
  return {
    instanceTypes: (nodePoolName, nodeClassName) =>
      input === undefined ? [] : poolInstanceTypes(input, nodePoolName, nodeClassName),
    poolTotals: set.poolTotals,
    spotFailedAtMs: set.spotFailedAtMs,
    ...(set.windowExcess === undefined ? {} : { windowExcess: set.windowExcess }),
    ...(set.staticPools === undefined ? {} : { staticPools: set.staticPools }),
    ...(input === undefined ? {} : { daemonSets: input.solve.daemonSets ?? [] }),
    nowMs,
    spotToSpot,
  };
}
