import { type Condition, computePodRequests, Resource, type ResourceList } from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { EC2NodeClass } from '../../ports/ec2nodeclass.ts';
import type {
  ConditionTally,
  CpuMemory,
  NodePoolNodeTotals,
  ObservedConditions,
  ObservedTerminations,
} from '../decisions/observation.ts';

// The figures of a pass's observation that Karpenter keeps per node or per object (its node
// metrics, its operator's status condition and termination metrics), summed or tallied over what
// the pass read: a NodePool's Nodes' allocatable, requests and overhead, the conditions of each
// kind by type, status and reason, and the longest terminations under way. Pure.

/**
 * Condition types whose steady state is False (or absent): True tells of trouble or of a change
 * (drift, consolidation, a disruption, memory pressure, a blocked repair). Every other type's
 * steady state is True.
 */
const TRUE_WHEN_NOTABLE: ReadonlySet<string> = new Set([
  'Drifted',
  'Consolidatable',
  'DisruptionReason',
  'MemoryPressure',
  'DiskPressure',
  'PIDPressure',
  'NetworkUnavailable',
  'LaunchBackoff',
  'NodeRepairBlocked',
  'RolloutPaused',
]);

/** The status a condition of `type` has when all is as usual. */
export function steadyConditionStatus(type: string): 'True' | 'False' {
  return TRUE_WHEN_NOTABLE.has(type) ? 'False' : 'True';
}

/** A NodePool's Nodes, summed as karpenter_nodes_* count them per node. */
export function nodeTotals(nodes: readonly ClusterNode[], nowMs: number | undefined): NodePoolNodeTotals {
  const zero = () => ({ cpu: 0, memory: 0 });
  const allocatable = zero();
  const podRequests = zero();
  const daemonRequests = zero();
  const systemOverhead = zero();
  let oldestMs: number | undefined;
  const add = (into: { cpu: number; memory: number }, list: ResourceList, sign = 1) => {
    into.cpu += sign * (list[Resource.cpu] ?? 0);
    into.memory += sign * (list[Resource.memory] ?? 0);
  };
  for (const node of nodes) {
    add(allocatable, node.allocatable);
    add(systemOverhead, node.capacity ?? node.allocatable);
    add(systemOverhead, node.allocatable, -1);
    for (const pod of node.pods) {
      const requests = computePodRequests(pod);
      add(podRequests, requests);
      if (pod.daemonSetName !== undefined) add(daemonRequests, requests);
    }
    if (node.createdAtMs !== undefined) oldestMs = Math.min(oldestMs ?? node.createdAtMs, node.createdAtMs);
  }
  // cpu in cores, as Karpenter reports it (millicores read).
  const figures = (t: { cpu: number; memory: number }): CpuMemory => ({
    cpu: t.cpu / 1000,
    memoryBytes: t.memory,
  });
  return {
    allocatable: figures(allocatable),
    podRequests: figures(podRequests),
    daemonRequests: figures(daemonRequests),
    systemOverhead: figures(systemOverhead),
    ...(oldestMs === undefined || nowMs === undefined
      ? {}
      : { oldestNodeSeconds: Math.max(0, Math.round((nowMs - oldestMs) / 1000)) }),
  };
}

/** One condition as the tallies read it: its status, reason and transition time. */
interface ConditionRead {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly sinceMs?: number;
}

export interface ConditionsInput {
  readonly claims: readonly ClusterNodeClaim[];
  readonly nodes: readonly ClusterNode[];
  readonly pools: Iterable<ClusterNodePool>;
  readonly nodeClasses: readonly EC2NodeClass[];
  /** When the pass read them: the ages are counted to here. */
  readonly nowMs: number | undefined;
  /** Transitions after `sinceMs` and at or before `untilMs` count (none when either is undefined). */
  readonly sinceMs: number | undefined;
  readonly untilMs: number | undefined;
}

/** The conditions of each kind, tallied by type, status and reason. */
export function observeConditions(input: ConditionsInput): ObservedConditions {
  const fromCondition = (c: Condition): ConditionRead => {
    const ms = Date.parse(c.lastTransitionTime);
    return { type: c.type, status: c.status, reason: c.reason, ...(Number.isNaN(ms) ? {} : { sinceMs: ms }) };
  };
  const tallyOf = (objects: readonly (readonly ConditionRead[])[]) => tally(objects, input);
  return {
    nodeClaim: tallyOf(input.claims.map((c) => c.status.conditions.map(fromCondition))),
    node: tallyOf(
      input.nodes.map((n) =>
        (n.conditions ?? []).map((c) => ({
          type: c.type,
          status: c.status,
          ...(c.lastTransitionMs === undefined ? {} : { sinceMs: c.lastTransitionMs }),
        })),
      ),
    ),
    nodePool: tallyOf([...input.pools].map((p) => p.conditions.map(fromCondition))),
    ec2NodeClass: tallyOf(input.nodeClasses.map((c) => (c.status?.conditions ?? []).map(fromCondition))),
  };
}

function tally(objects: readonly (readonly ConditionRead[])[], input: ConditionsInput): ConditionTally[] {
  const { nowMs, sinceMs, untilMs } = input;
  const byKey = new Map<
    string,
    { read: ConditionRead; objects: number; oldestMs?: number; transitions: number }
  >();
  for (const conditions of objects) {
    for (const c of conditions) {
      const key = JSON.stringify([c.type, c.status, c.reason ?? null]);
      const t = byKey.get(key) ?? { read: c, objects: 0, transitions: 0 };
      byKey.set(key, t);
      t.objects += 1;
      if (c.sinceMs === undefined) continue;
      t.oldestMs = Math.min(t.oldestMs ?? c.sinceMs, c.sinceMs);
      if (sinceMs !== undefined && untilMs !== undefined && c.sinceMs > sinceMs && c.sinceMs <= untilMs) {
        t.transitions += 1;
      }
    }
  }
  return [...byKey.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, t]) => ({
      type: t.read.type,
      status: t.read.status,
      ...(t.read.reason === undefined ? {} : { reason: t.read.reason }),
      objects: t.objects,
      ...(t.oldestMs === undefined || nowMs === undefined
        ? {}
        : { longestSeconds: Math.max(0, Math.round((nowMs - t.oldestMs) / 1000)) }),
      transitions: t.transitions,
      ...(steadyConditionStatus(t.read.type) === t.read.status ? { steady: true as const } : {}),
    }));
}

/** How long the NodeClaim and the Node longest in termination have been terminating, if any is. */
export function observeTerminations(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly ClusterNode[],
  nowMs: number | undefined,
): ObservedTerminations | undefined {
  if (nowMs === undefined) return undefined;
  const longest = (times: readonly (number | undefined)[]) => {
    const known = times.filter((t): t is number => t !== undefined);
    return known.length === 0 ? undefined : Math.max(0, Math.round((nowMs - Math.min(...known)) / 1000));
  };
  const nodeClaimSeconds = longest(claims.filter((c) => c.deleting).map((c) => c.deletedAtMs));
  const nodeSeconds = longest(nodes.filter((n) => n.deleting).map((n) => n.deletedAtMs));
  if (nodeClaimSeconds === undefined && nodeSeconds === undefined) return undefined;
  return {
    ...(nodeClaimSeconds === undefined ? {} : { nodeClaimSeconds }),
    ...(nodeSeconds === undefined ? {} : { nodeSeconds }),
  };
}
