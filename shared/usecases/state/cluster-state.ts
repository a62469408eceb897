import {
  applyNodeOverlays,
  type DaemonSet,
  type ExistingNode,
  type InFlightNodeClaim,
  type InstanceType,
  isConditionTrue,
  isStaticNodePool,
  type Labels,
  NodeClaimConditionType,
  type OverlayResolution,
  type Pod,
  type SolveInput,
  type SolveOptions,
} from '../../core/index.ts';
import type { Cloud, EC2NodeClass } from '../../ports/cloud.ts';
import type {
  Cluster,
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodeOverlay,
  ClusterNodePool,
  PodDisruptionBudget,
  ReadResult,
  VolumeLimitsRead,
} from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import { takeDeletingNodePods } from './deleting-nodes.ts';
import { type NodePoolSelection, selectNodePools } from './eligibility.ts';
import { readInstanceTypes } from './instance-types.ts';
import { nominatedPodUids } from './new-nodeclaim.ts';
import { resolveClusterOverlays } from './overlays.ts';

// Cluster state, read once per decision, and the one pure step from it to the scheduler's input.
// The provisioner, `flotilla plan` and the simulator all go through here, so a pod is judged
// against the same nodes, in-flight NodeClaims and NodePools whichever of them asks.

/** What the controllers decide from: the cluster's objects in domain terms. */
export interface ClusterState {
  /** Pods waiting for capacity (unschedulable, not bound, not terminal, not gated). */
  readonly pendingPods: readonly Pod[];
  readonly nodes: readonly ClusterNode[];
  readonly nodeClaims: readonly ClusterNodeClaim[];
  readonly nodePools: readonly ClusterNodePool[];
  readonly nodeClasses: readonly EC2NodeClass[];
  /** NodeOverlays, invalid ones included; none when the state was not read from a cluster. */
  readonly nodeOverlays?: readonly ClusterNodeOverlay[];
  readonly daemonSets: readonly DaemonSet[];
  readonly namespaceLabels: ReadonlyMap<string, Labels>;
  /** Read only when asked for (disruption needs them, provisioning does not). */
  readonly podDisruptionBudgets?: readonly PodDisruptionBudget[];
  /** CSI attach limits of the nodes and the drivers of claims; none when not read. */
  readonly volumeLimits?: Omit<VolumeLimitsRead, 'problems'>;
}

export interface ReadClusterStateOptions {
  readonly podDisruptionBudgets?: boolean;
  /**
   * Read the NodeClaims from the API server itself, not the cluster summary: a provisioning run
   * must see every NodeClaim made before it, or it launches the same capacity twice.
   */
  readonly consistentNodeClaims?: boolean;
  /** NodeClaims at least as current as this time (see NodeClaimReadOptions.freshAsOfMs). */
  readonly nodeClaimsFreshAsOfMs?: number;
  /**
   * Read the NodeOverlays; false (Karpenter's NodeOverlay feature gate off) leaves them unread and
   * none apply. @default true
   */
  readonly nodeOverlays?: boolean;
}

/** The cluster state but its pending pods, with what could not be read. */
export interface ClusterObjectsRead {
  readonly objects: Omit<ClusterState, 'pendingPods'>;
  /** Objects left out because they do not convert, as `what: why`. */
  readonly problems: readonly string[];
}

/**
 * Reads the cluster state in parallel. Objects that do not convert are left out and logged once
 * (`cluster objects skipped`, with the first ten problems); they never fail the read.
 * @throws ClusterApiError when a list call fails.
 */
export async function readClusterState(
  cluster: Cluster,
  logger: Logger,
  options: ReadClusterStateOptions = {},
): Promise<ClusterState> {
  const [pods, objects] = await Promise.all([
    cluster.provisionablePods(),
    readClusterObjects(cluster, options),
  ]);
  return withPendingPods(objects, pods, logger);
}

/** What a read leaves out with the NodeOverlay feature gate off. */
export const NO_OVERLAYS: ReadResult<ClusterNodeOverlay> = { items: [], problems: [] };

/**
 * Everything in the cluster state but the pending pods, read in parallel; a provisioning run reads
 * it while its batch window is open and adds the pods its batch closed on (`withPendingPods`).
 * @throws ClusterApiError when a list call fails.
 */
export async function readClusterObjects(
  cluster: Cluster,
  options: ReadClusterStateOptions = {},
): Promise<ClusterObjectsRead> {
  const [
    nodes,
    nodePools,
    nodeClasses,
    nodeOverlays,
    nodeClaims,
    daemonSets,
    namespaceLabels,
    pdbs,
    volumes,
  ] = await Promise.all([
    cluster.nodes(),
    cluster.nodePools(),
    cluster.nodeClasses(),
    // A NodeOverlay list that fails fails the read: planning without overlays would misprice.
    options.nodeOverlays === false ? NO_OVERLAYS : cluster.nodeOverlays(),
    cluster.nodeClaims({
      ...(options.consistentNodeClaims === true ? { consistent: true } : {}),
      ...(options.nodeClaimsFreshAsOfMs === undefined ? {} : { freshAsOfMs: options.nodeClaimsFreshAsOfMs }),
    }),
    cluster.daemonSets(),
    cluster.namespaceLabels(),
    options.podDisruptionBudgets === true ? cluster.podDisruptionBudgets() : undefined,
    cluster.volumeLimits(),
  ]);
  return {
    objects: {
      nodes: nodes.items,
      nodeClaims: nodeClaims.items,
      nodePools: nodePools.items,
      nodeClasses: nodeClasses.items,
      nodeOverlays: nodeOverlays.items,
      daemonSets: daemonSets.items,
      namespaceLabels,
      ...(pdbs === undefined ? {} : { podDisruptionBudgets: pdbs.items }),
      volumeLimits: { nodes: volumes.nodes, claimDrivers: volumes.claimDrivers },
    },
    problems: problemsOf({
      nodes,
      pools: nodePools,
      nodeClasses,
      nodeOverlays,
      nodeClaims,
      daemonSets,
      podDisruptionBudgets: pdbs,
      volumeLimits: { items: [], problems: volumes.problems },
    }),
  };
}

/** The cluster state from its objects and a read of the pending pods; logs what was left out, once. */
export function withPendingPods(
  read: ClusterObjectsRead,
  pods: ReadResult<Pod>,
  logger: Logger,
): ClusterState {
  const problems = [...problemsOf({ pods }), ...read.problems];
  if (problems.length > 0) {
    logger.warn('cluster objects skipped', { count: problems.length, problems: problems.slice(0, 10) });
  }
  return { pendingPods: pods.items, ...read.objects };
}

function problemsOf(reads: Record<string, ReadResult<unknown> | undefined>): string[] {
  return Object.entries(reads).flatMap(([what, r]) =>
    (r?.problems ?? []).map((p) => `${what}: ${p.message}`),
  );
}

/** The scheduler's input for a cluster state, with the NodePool choice it was built on. */
export interface SchedulingInput {
  readonly solve: SolveInput;
  /** Eligible NodePools (with their EC2NodeClass) and the skipped ones with reasons. */
  readonly selection: NodePoolSelection;
  /** Eligible NodePools by name. */
  readonly nodePools: ReadonlyMap<string, ClusterNodePool>;
  /** The EC2NodeClasses of eligible NodePools, by name. */
  readonly nodeClasses: ReadonlyMap<string, EC2NodeClass>;
  /** Instance types per EC2NodeClass of an eligible NodePool, as the catalog has them. */
  readonly instanceTypes: ReadonlyMap<string, readonly InstanceType[]>;
  /**
   * Per eligible NodePool whose types NodeOverlays change: its types with the overlays applied
   * (see poolInstanceTypes). Empty when no overlay applies.
   */
  readonly poolInstanceTypes: ReadonlyMap<string, readonly InstanceType[]>;
  /** The NodeOverlays resolved against the eligible NodePools. */
  readonly overlays: OverlayResolution;
  /** Pods of nodes being deleted scheduled with the pending ones (`rescheduleDeletingNodes`). */
  readonly deletingNodePods: readonly Pod[];
}

export interface SchedulingOptions {
  readonly nowMs: number;
  readonly solveOptions?: SolveOptions;
  /** NodePools whose launches the runaway guard pauses (name → why): left out like unready ones. */
  readonly pausedNodePools?: ReadonlyMap<string, string>;
  /**
   * Schedule the pods of nodes being deleted with the pending pods (takeDeletingNodePods), as the
   * provisioner does so that their replacements launch while the drain waits. @default false
   */
  readonly rescheduleDeletingNodes?: boolean;
  /**
   * `lowerOnly`: a type's memory learned from registered Nodes replaces the VM overhead estimate only
   * where it is smaller. For disruption, whose Nodes may come from the untrusted cluster summary:
   * a Node that claims more memory than the estimate must not let consolidation put pods onto a
   * type too small for them. @default 'learn' (the provisioner, as Karpenter)
   */
  readonly observedMemory?: 'learn' | 'lowerOnly';
}

/**
 * Pure: the scheduler's input from a cluster state, the NodePools chosen from it, and the instance
 * types of their EC2NodeClasses. Nodes count as `toSchedulableNodes` says, NodeClaims whose node
 * has not joined as in-flight capacity (room for pending pods and for the pods of deleting nodes
 * alike, so pods planned for while their node drained find that room again once pending).
 */
export function toSchedulingInput(
  state: ClusterState,
  selection: NodePoolSelection,
  instanceTypes: ReadonlyMap<string, readonly InstanceType[]>,
  options: SchedulingOptions,
): SchedulingInput {
  const nodePools = new Map(selection.eligible.map((e) => [e.pool.pool.name, e.pool]));
  const nodeClasses = new Map(selection.eligible.map((e) => [e.nodeClass.name, e.nodeClass]));
  // A static NodePool launches for its replicas, never for pods (its nodes, once there, take pods
  // like any other): it stays eligible, so its own NodeClaims launch, but plans nothing here.
  const statics = selection.eligible.filter((e) => isStaticNodePool(e.pool.pool));
  const overlays = resolveClusterOverlays(
    state.nodeOverlays ?? [],
    selection.eligible.map((e) => e.pool),
    instanceTypes,
  );
  const poolInstanceTypes = new Map<string, readonly InstanceType[]>();
  for (const [poolName] of overlays.updates) {
    const pool = nodePools.get(poolName);
    if (pool === undefined) continue;
    const types = instanceTypes.get(pool.nodeClassRef.name) ?? [];
    poolInstanceTypes.set(poolName, applyNodeOverlays(overlays, poolName, types));
  }
  const deleting =
    options.rescheduleDeletingNodes === true
      ? takeDeletingNodePods(state.nodes, state.nodeClaims)
      : { pods: [], nodes: state.nodes };
  return {
    solve: {
      pods: deleting.pods.length === 0 ? state.pendingPods : [...state.pendingPods, ...deleting.pods],
      nodePools: [...nodePools.values()].filter((p) => !isStaticNodePool(p.pool)).map((p) => p.pool),
      instanceTypes,
      ...(poolInstanceTypes.size === 0 ? {} : { poolInstanceTypes }),
      // Deleting nodes receive nothing (the adapter marks them unschedulable too).
      nodes: withVolumeLimits(toSchedulableNodes(deleting.nodes, state.nodeClaims), state.volumeLimits),
      ...(state.volumeLimits === undefined || state.volumeLimits.claimDrivers.size === 0
        ? {}
        : { claimDrivers: state.volumeLimits.claimDrivers }),
      nodeClaims: toInFlightNodeClaims(state.nodeClaims, state.nodes),
      daemonSets: state.daemonSets,
      namespaceLabels: state.namespaceLabels,
      nowMs: options.nowMs,
      ...(options.solveOptions === undefined ? {} : { options: options.solveOptions }),
    },
    selection:
      statics.length === 0
        ? selection
        : {
            eligible: selection.eligible,
            skipped: [
              ...selection.skipped,
              ...statics.map((e) => ({ nodePool: e.pool.pool.name, reason: STATIC_NODEPOOL_REASON })),
            ],
          },
    nodePools,
    nodeClasses,
    instanceTypes,
    poolInstanceTypes,
    overlays,
    deletingNodePods: deleting.pods,
  };
}

/**
 * The instance types a NodePool launches from: its EC2NodeClass's, with the NodeOverlays that
 * select them applied. Every price and capacity a decision reads of a pool's types comes from here.
 */
export function poolInstanceTypes(
  input: Pick<SchedulingInput, 'instanceTypes' | 'poolInstanceTypes'>,
  nodePoolName: string | undefined,
  nodeClassName: string,
): readonly InstanceType[] {
  const overlaid = nodePoolName === undefined ? undefined : input.poolInstanceTypes.get(nodePoolName);
  return overlaid ?? input.instanceTypes.get(nodeClassName) ?? [];
}

/** Why a static NodePool takes no part in planning for pods (a pod's FailedScheduling message). */
export const STATIC_NODEPOOL_REASON =
  'it is static (spec.replicas): it launches for its replicas, not for pods';

/**
 * The scheduling input for a cluster state: chooses the NodePools that may launch, reads the
 * instance types of their EC2NodeClasses (readInstanceTypes), then builds the input.
 * @throws CloudApiError / CatalogUnavailableError when instance types cannot be read.
 */
export async function buildSchedulingInput(
  state: ClusterState,
  cloud: Pick<Cloud, 'instanceTypes'>,
  options: SchedulingOptions,
): Promise<SchedulingInput> {
  const selection = selectNodePools(
    state.nodePools,
    state.nodeClasses,
    options.pausedNodePools,
    options.nowMs,
  );
  const instanceTypes = await readInstanceTypes(state, selection, cloud, options);
  return toSchedulingInput(state, selection, instanceTypes, options);
}

/** Each node with its CSI attach limits (its CSINode's), where it has any. */
function withVolumeLimits<N extends ExistingNode>(
  nodes: readonly N[],
  read: ClusterState['volumeLimits'],
): readonly N[] {
  if (read === undefined || read.nodes.size === 0) return nodes;
  return nodes.map((n) => {
    const volumeLimits = read.nodes.get(n.name);
    return volumeLimits === undefined ? n : { ...n, volumeLimits };
  });
}

/**
 * NodeClaims whose node has not joined yet, as the scheduler counts them: not being deleted, and
 * no Node carries their `status.nodeName` or `status.providerId`.
 */
export function toInFlightNodeClaims(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly Pick<ClusterNode, 'name' | 'providerId'>[],
): InFlightNodeClaim[] {
  const names = new Set(nodes.map((n) => n.name));
  const providerIds = new Set(nodes.flatMap((n) => (n.providerId === undefined ? [] : [n.providerId])));
  const out: InFlightNodeClaim[] = [];
  for (const claim of claims) {
    if (claim.deleting) continue;
    const { nodeName, providerId } = claim.status;
    if (nodeName !== undefined && names.has(nodeName)) continue;
    if (providerId !== undefined && providerIds.has(providerId)) continue;
    const launched = isConditionTrue(claim.status.conditions, NodeClaimConditionType.launched);
    const nominated = nominatedPodUids(claim.annotations);
    const instanceTypes = claim.requirements.find(
      (r) => r.key === 'node.kubernetes.io/instance-type' && r.operator === 'In',
    );
    out.push({
      name: claim.name,
      ...(claim.nodePoolName === undefined ? {} : { nodePoolName: claim.nodePoolName }),
      requirements: claim.requirements,
      taints: claim.taints,
      instanceTypeNames: instanceTypes?.values ?? [],
      ...(launched ? { labels: claim.labels } : {}),
      ...(launched && claim.status.allocatable ? { allocatable: claim.status.allocatable } : {}),
      ...(launched && claim.status.capacity ? { capacity: claim.status.capacity } : {}),
      pods: [],
      ...(nominated.length === 0 ? {} : { nominatedPodUids: nominated }),
    });
  }
  return out;
}

/**
 * Nodes as the scheduler counts them. A node with a pod that could not be read takes nothing new.
 * Until a node Flotilla launched is initialized, its
 * kubelet may not have reported allocatable yet, so its NodeClaim's allocatable and capacity
 * stand in; until the claim is Registered, the claim's taints stand in for the Node's (which still
 * carry `karpenter.sh/unregistered`). A claim being deleted makes its node unschedulable, as
 * Karpenter counts a node marked for deletion. Other nodes pass through unchanged.
 */
export function toSchedulableNodes<N extends ClusterNode>(
  nodes: readonly N[],
  claims: readonly ClusterNodeClaim[],
): N[] {
  const byProvider = new Map<string, ClusterNodeClaim>();
  const byNodeName = new Map<string, ClusterNodeClaim>();
  for (const claim of claims) {
    if (claim.status.providerId !== undefined) byProvider.set(claim.status.providerId, claim);
    if (claim.status.nodeName !== undefined) byNodeName.set(claim.status.nodeName, claim);
  }
  return nodes.map((node) => {
    const counted = schedulableNode(node, byProvider, byNodeName);
    // The room a pod that could not be read takes is unknown: nothing new is planned there.
    return (node.unreadablePods ?? []).length > 0 && counted.unschedulable !== true
      ? { ...counted, unschedulable: true }
      : counted;
  });
}

function schedulableNode<N extends ClusterNode>(
  node: N,
  byProvider: ReadonlyMap<string, ClusterNodeClaim>,
  byNodeName: ReadonlyMap<string, ClusterNodeClaim>,
): N {
  // A node Flotilla initialized that is no longer Ready takes nothing new (kube-scheduler sees its
  // not-ready taint); one still coming up, or any other node, is counted as it is.
  if (node.nodePoolName !== undefined && node.initialized && !node.ready && node.unschedulable !== true) {
    return { ...node, unschedulable: true };
  }
  // A Node is its NodeClaim's by providerID or name, whether or not its NodePool labels are on it
  // yet (a Node read the moment it registers has neither them nor a status).
  const claim =
    (node.providerId === undefined ? undefined : byProvider.get(node.providerId)) ??
    byNodeName.get(node.name);
  if (claim === undefined) return node;
  // A NodeClaim being deleted takes its node with it: nothing new goes there.
  const leaving = claim.deleting && node.unschedulable !== true ? { unschedulable: true } : {};
  const claimLabels = { claimLabels: claim.labels };
  if (node.initialized) return { ...node, ...leaving, ...claimLabels };
  const { allocatable, capacity } = claim.status;
  const registered = isConditionTrue(claim.status.conditions, NodeClaimConditionType.registered);
  return {
    ...node,
    ...claimLabels,
    ...(allocatable === undefined ? {} : { allocatable }),
    ...(capacity === undefined ? {} : { capacity }),
    ...(registered ? {} : { taints: claim.taints }),
    ...leaving,
  };
}
