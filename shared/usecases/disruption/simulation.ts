import {
  DEFAULT_FIT_SCORING,
  type ExistingNode,
  type FitScoring,
  type InFlightNodeClaim,
  isReschedulable,
  type NodeClaimPlan,
  type Pod,
  type SolveInput,
  type SolveResult,
  solve,
  type UnschedulablePod,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import { COMMAND_ANNOTATION, commandsInFlight, decodeCommand } from '../state/command-record.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { DisruptionCandidate, DisruptionSimulation, SimulationOptions } from './method.ts';

// The scheduling simulations disruption runs on the provisioner's own input. Pure.

/**
 * Schedules the pods of `candidates` as if their nodes were gone, as Karpenter's
 * SimulateScheduling does: together with the pods waiting for capacity (the provisioner's pending
 * pods, as the pass read them), so that a command cannot take the room they are about to get; and
 * with the pods of nodes already going (being deleted, or the candidates of a command in flight),
 * so that a second command does not plan on the room a first command's replacement was launched
 * for. Every node and NodeClaim on its way is capacity, but the candidates' pods may land only on
 * initialized nodes and on disruption replacements: a candidate pod the simulation puts on a node
 * that has not initialized, or on a NodeClaim the provisioner launched for pending pods, counts as
 * having no place (Karpenter's "would schedule against uninitialized node").
 *
 * `unschedulable` lists only pods that are not pending (pending pods that still find no place do
 * not hold a command back); `nodeClaims` are the new nodes some non-pending pod needs, and
 * `pendingOnlyNodeClaims` counts the new nodes only pending pods need (the provisioner's to launch).
 */
export function simulateWithout(
  input: SchedulingInput | undefined,
  state: ClusterState,
  claims: readonly ClusterNodeClaim[],
  candidates: readonly DisruptionCandidate[],
  options: SimulationOptions = {},
): DisruptionSimulation {
  if (input === undefined)
    return { nodeClaims: [], placements: [], unschedulable: [], pendingOnlyNodeClaims: 0 };
  const leaving = new Set(candidates.map((c) => c.node.name));
  const disrupting = new Set([...commandsInFlight(claims).commands.values()].flatMap((r) => r.candidates));
  const nodeFor = nodeIndex(state.nodes);
  const going: ClusterNode[] = [];
  for (const claim of claims) {
    if (!claim.deleting && !disrupting.has(claim.name)) continue;
    const node = nodeFor(claim);
    if (node !== undefined && !leaving.has(node.name)) going.push(node);
  }
  for (const node of going) leaving.add(node.name);
  const replacements = recordedReplacements(claims);
  const replacementNodes = new Set(
    claims.flatMap((c) =>
      replacements.has(c.name) && c.status.nodeName !== undefined ? [c.status.nodeName] : [],
    ),
  );
  const nodes = (input.solve.nodes ?? []).filter((n) => !leaving.has(n.name));
  const pending = new Set(input.solve.pods.map((p) => p.uid));
  const candidatePods = candidates.flatMap((c) => c.reschedulablePods);
  const result = solve({
    ...input.solve,
    pods: [...input.solve.pods, ...candidatePods, ...going.flatMap((n) => n.pods.filter(isReschedulable))],
    nodes,
    // As Karpenter's disruption: pods past a full capacity reservation go to other capacity.
    options: {
      ...input.solve.options,
      reservedOfferingMode: 'fallback',
      ...(options.maxNewNodeClaims === undefined ? {} : { maxNewNodeClaims: options.maxNewNodeClaims }),
    },
  });
  // Capacity that is not there yet and that the provisioner launched is promised to pending pods:
  // only initialized nodes and disruption replacements take the pods of the nodes that go.
  const uninitialized = new Set(
    nodes.flatMap((n) => (n.initialized || replacementNodes.has(n.name) ? [] : [n.name])),
  );
  const mine = new Set(candidatePods.map((p) => p.uid));
  const misplaced: UnschedulablePod[] = [];
  for (const p of result.placements) {
    if (!mine.has(p.pod.uid)) continue;
    const where =
      p.kind === 'existingNode'
        ? uninitialized.has(p.nodeName)
          ? `node ${p.nodeName}, which has not initialized`
          : undefined
        : replacements.has(p.nodeClaimName)
          ? undefined
          : `nodeClaim ${p.nodeClaimName}, launched for pending pods`;
    if (where !== undefined) {
      misplaced.push({ pod: p.pod, reasons: [], message: `would schedule against ${where}` });
    }
  }
  const forPendingOnly = (plan: SolveResult['nodeClaims'][number]) =>
    plan.pods.every((p) => pending.has(p.uid));
  const needed = result.nodeClaims.filter((c) => !forPendingOnly(c));
  const unschedulable = [...result.unschedulable.filter((u) => !pending.has(u.pod.uid)), ...misplaced];
  let leftovers: readonly UnschedulablePod[] | undefined;
  const replay = () => {
    if (leftovers !== undefined) return leftovers;
    // Pending pods are queued before the moved ones: each is where the simulation put it.
    const pendingOn = new Map(input.solve.pods.map((p) => [p.uid, p]));
    // Nodes by name, in-flight NodeClaims (replacements without a node yet) by theirs.
    const onNode = new Map<string, Pod[]>();
    const onClaim = new Map<string, Pod[]>();
    for (const p of result.placements) {
      const pod = pendingOn.get(p.pod.uid);
      if (pod === undefined) continue;
      const [where, name] = p.kind === 'existingNode' ? [onNode, p.nodeName] : [onClaim, p.nodeClaimName];
      const waiting = where.get(name);
      if (waiting === undefined) where.set(name, [pod]);
      else waiting.push(pod);
    }
    leftovers = bindLeftovers({
      base: input.solve,
      nodes: nodes.map((n) => {
        const waiting = onNode.get(n.name);
        const node = waiting === undefined ? n : { ...n, pods: [...n.pods, ...waiting] };
        // A node that has not initialized takes none of the moved pods, but kube-scheduler counts
        // its pods in topology spreads and pod (anti-)affinity as any node's.
        return n.initialized || replacementNodes.has(n.name) ? node : { ...node, unschedulable: true };
      }),
      replacementClaims: replacements,
      pendingOnClaims: onClaim,
      plans: needed.map((plan) => ({
        plan,
        pending: plan.pods.flatMap((ref) => pendingOn.get(ref.uid) ?? []),
      })),
      moved: [...candidatePods, ...going.flatMap((n) => n.pods.filter(isReschedulable))],
      mine,
    });
    return leftovers;
  };
  return {
    nodeClaims: needed,
    placements: result.placements,
    unschedulable,
    pendingOnlyNodeClaims: result.nodeClaims.filter(forPendingOnly).length,
    ...(unschedulable.length > 0 || candidatePods.length === 0 ? {} : { kubeSchedulerLeftovers: replay }),
  };
}

/** Where kube-scheduler's NodeResourcesFit strategy sends each pod, among the nodes it fits. */
const BINDS_TO: Record<FitScoring, string> = {
  LeastAllocated: 'the nodes with the most room',
  MostAllocated: 'the fullest nodes they fit',
};

/** Why a command does not hold when kube-scheduler could leave `leftovers` without a node. */
export function leftoverWhy(leftovers: readonly UnschedulablePod[]): string | undefined {
  const [first] = leftovers;
  if (first === undefined) return undefined;
  return `${leftovers.length} pods would have no place (${first.pod.namespace}/${first.pod.name}: ${first.message})`;
}

/**
 * The candidates' pods kube-scheduler could leave without a node once the command's replacements
 * are ready: it binds the moved pods one at a time, each where its NodeResourcesFit strategy scores
 * best (the cluster's, `kubeSchedulerScoring`: by default LeastAllocated, the node with the most
 * room left), not where the simulation packed them: spreading pods out can leave the largest
 * without a hole big enough, and so can packing the small ones into the holes it needed. Replayed
 * smallest pod first, the order that leaves the least room for the largest, over the ready nodes
 * that stay, the replacements of commands in flight and this command's replacements (each as its
 * smallest candidate type), with no new node.
 * Nodes not initialized yet take none of them but count in topology, as `nodes` marks them.
 */
function bindLeftovers(o: {
  readonly base: SolveInput;
  readonly nodes: readonly ExistingNode[];
  /** NodeClaims command records name as replacements. */
  readonly replacementClaims: ReadonlySet<string>;
  /** Pending pods the simulation put on in-flight NodeClaims, by NodeClaim name. */
  readonly pendingOnClaims: ReadonlyMap<string, readonly Pod[]>;
  /** The command's replacements, each with the pending pods the simulation put on it. */
  readonly plans: readonly { readonly plan: NodeClaimPlan; readonly pending: readonly Pod[] }[];
  /** The pods that move: the candidates' and those of nodes already going. */
  readonly moved: readonly Pod[];
  /** Uids of the candidates' pods. */
  readonly mine: ReadonlySet<string>;
}): UnschedulablePod[] {
  const { base, nodes, replacementClaims, pendingOnClaims, plans, moved, mine } = o;
  const scoring = base.options?.kubeSchedulerScoring ?? DEFAULT_FIT_SCORING;
  const claims: InFlightNodeClaim[] = [
    ...(base.nodeClaims ?? []).flatMap(({ nominatedPodUids: _pending, ...claim }) => {
      if (!replacementClaims.has(claim.name)) return [];
      const waiting = pendingOnClaims.get(claim.name);
      return [waiting === undefined ? claim : { ...claim, pods: [...claim.pods, ...waiting] }];
    }),
    ...plans.map(({ plan, pending }) => ({
      name: plan.name,
      nodePoolName: plan.nodePoolName,
      requirements: plan.requirements,
      taints: plan.taints,
      instanceTypeNames: plan.instanceTypes.map((t) => t.name),
      pods: pending,
    })),
  ];
  // Only the NodePools of NodeClaims and uninitialized nodes count (their types, their start-up
  // taints): no node is planned, and no limit is in play.
  const pools = new Set([
    ...claims.flatMap((c) => (c.nodePoolName === undefined ? [] : [c.nodePoolName])),
    ...nodes.flatMap((n) => (n.initialized || n.nodePoolName === undefined ? [] : [n.nodePoolName])),
  ]);
  const { maxCostPerHour: _limit, ...options } = base.options ?? {};
  const replay = solve({
    ...base,
    nodePools: base.nodePools.filter((p) => pools.has(p.name)),
    pods: moved,
    nodes,
    nodeClaims: claims,
    options: {
      ...options,
      reservedOfferingMode: 'fallback',
      maxNewNodeClaims: 0,
      existingNodeScoring: scoring,
      queueOrder: 'smallestFirst',
    },
  });
  return replay.unschedulable
    .filter((u) => mine.has(u.pod.uid))
    .map((u) => ({
      pod: u.pod,
      reasons: [],
      message: `kube-scheduler, binding pods to ${BINDS_TO[scoring]}, could leave it without a node`,
    }));
}

/** Every NodeClaim a command record names as a replacement. */
function recordedReplacements(claims: readonly ClusterNodeClaim[]): Set<string> {
  const out = new Set<string>();
  for (const claim of claims) {
    const value = claim.annotations[COMMAND_ANNOTATION];
    const record = value === undefined ? undefined : decodeCommand(value);
    if (record !== undefined && !('problem' in record)) for (const r of record.replacements) out.add(r);
  }
  return out;
}

/** Nodes the scheduler would give pending pods now: Karpenter's nominated nodes. */
export function nominatedNodes(state: ClusterState, input: SchedulingInput | undefined): Set<string> {
  if (state.pendingPods.length === 0 || input === undefined) return new Set();
  const result = solve(input.solve);
  return new Set(result.placements.flatMap((p) => (p.kind === 'existingNode' ? [p.nodeName] : [])));
}
