import type { DaemonSet, Labels, Pod } from '../core/index.ts';
import type { ClusterEvent } from './cluster-events.ts';
import type {
  BoundPod,
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodeOverlay,
  ClusterNodePool,
  DrainPod,
  EvictionOutcome,
  NodeClaimRead,
  NodeClaimReadOptions,
  NodeInfo,
  NodeReadOptions,
  PodDisruptionBudget,
  PodKey,
  ReadResult,
  VolumeAttachment,
  VolumeLimitsRead,
} from './cluster-objects.ts';
import type {
  ConditionUpdate,
  MetadataPatch,
  NewNodeClaim,
  NodeClaimStatusPatch,
  NodePatch,
  NodePoolMetadataPatch,
  NodePoolStatusPatch,
} from './cluster-writes.ts';
import type { EC2NodeClass, EC2NodeClassStatus } from './ec2nodeclass.ts';

// The Cluster port: what the use cases read from and write to Kubernetes, in domain terms. The
// @kubernetes/client-node adapter lives in shared/adapters/kube. The objects it reads are in
// cluster-objects.ts, what it writes in cluster-writes.ts and its Events in cluster-events.ts;
// this module names them all.

export type { Condition, ConditionStatus } from '../core/index.ts';
export * from './cluster-events.ts';
export * from './cluster-objects.ts';
export * from './cluster-writes.ts';

/**
 * Kubernetes as the use cases need it. Reads convert at the edge into shared/core types; writes
 * are idempotent. Every call has a timeout and the adapter bounds concurrent API calls. The list
 * reads of pods, Nodes and NodeClaims may be served from the cluster summary (ports/summary.ts),
 * as current as it is; single gets (`nodeClaim`, `node`, `podsOnNode`) and `consistent` (or
 * `nodePool`) reads always ask the API server, and whatever deletes confirms with them.
 * Errors other than malformed objects are thrown as `ClusterApiError` (shared/adapters/kube).
 */
export interface Cluster {
  /** Pods kube-scheduler gave up on that Flotilla may provision for (Karpenter's IsProvisionable). */
  provisionablePods(): Promise<ReadResult<Pod>>;
  /** Every pod bound to a node and not finished (Succeeded/Failed pods are left out). */
  boundPods(): Promise<ReadResult<BoundPod>>;
  /** Every Node with the pods bound to it. */
  nodes(): Promise<ReadResult<ClusterNode>>;
  /** Every Node (or a NodePool's), without reading a single pod; `consistent` as for nodeClaims. */
  nodeInfos(options?: NodeReadOptions): Promise<ReadResult<NodeInfo>>;
  nodePools(): Promise<ReadResult<ClusterNodePool>>;
  nodeClasses(): Promise<ReadResult<EC2NodeClass>>;
  /** Every NodeOverlay, malformed ones included (with `invalid` set). */
  nodeOverlays(): Promise<ReadResult<ClusterNodeOverlay>>;
  /**
   * Every NodeClaim; those that could not be read are listed with what is known of them. As the
   * other list reads of pods, Nodes and NodeClaims, it may come from the cluster summary (seconds
   * behind, as an informer cache is) unless `consistent` asks the API server itself.
   */
  nodeClaims(options?: NodeClaimReadOptions): Promise<NodeClaimRead>;
  daemonSets(): Promise<ReadResult<DaemonSet>>;
  podDisruptionBudgets(): Promise<ReadResult<PodDisruptionBudget>>;
  /** Namespace name → labels, for pod-affinity `namespaceSelector`. */
  namespaceLabels(): Promise<ReadonlyMap<string, Labels>>;
  /** Every node's CSI attach limits (CSINode objects) and the CSI driver of each claim. */
  volumeLimits(): Promise<VolumeLimitsRead>;

  /**
   * Creates the NodeClaim with finalizer `karpenter.sh/termination` and an ownerReference to its
   * NodePool. Returns false when a NodeClaim of that name already exists (a repeated create).
   */
  createNodeClaim(claim: NewNodeClaim): Promise<boolean>;
  /**
   * Patches the status subresource; re-reads and retries on conflict. `asRead`: the NodeClaim as
   * a list read it, with its resourceVersion: the first patch is made against it without reading
   * the NodeClaim again (a conflict if it changed since, and then from a fresh read). Not used for
   * a patch of capacity or allocatable, whose keys are replaced from a fresh read.
   * @throws ClusterNotFoundError
   */
  patchNodeClaimStatus(name: string, patch: NodeClaimStatusPatch, asRead?: ClusterNodeClaim): Promise<void>;
  /** @throws ClusterNotFoundError */
  patchNodeClaimMetadata(name: string, patch: MetadataPatch): Promise<void>;
  /** @throws ClusterNotFoundError */
  patchNode(name: string, patch: NodePatch): Promise<void>;
  /** Deletes (finalizers still run). A NodeClaim already gone counts as success. */
  deleteNodeClaim(name: string): Promise<void>;
  /** @throws ClusterNotFoundError */
  patchNodePoolStatus(name: string, patch: NodePoolStatusPatch): Promise<void>;
  /**
   * Labels and annotations of a NodePool (the runaway guard's state is an annotation): one merge
   * patch of the keys named, never its spec.
   * @throws ClusterNotFoundError
   */
  patchNodePoolMetadata(name: string, patch: NodePoolMetadataPatch): Promise<void>;
  /**
   * Replaces an EC2NodeClass's status (lists and fields whole; an absent instance profile is
   * removed) through the status subresource.
   * @throws ClusterNotFoundError
   */
  patchNodeClassStatus(name: string, status: EC2NodeClassStatus): Promise<void>;
  /**
   * Merges the conditions (by type, observedGeneration the overlay's) into a NodeOverlay's status
   * through the status subresource.
   * @throws ClusterNotFoundError
   */
  patchNodeOverlayStatus(name: string, conditions: readonly ConditionUpdate[]): Promise<void>;
  /** Labels, annotations and finalizers of an EC2NodeClass. @throws ClusterNotFoundError */
  patchNodeClassMetadata(name: string, patch: MetadataPatch): Promise<void>;
  /**
   * Records an Event: an occurrence whose dedupe key (eventDedupeKey) was recorded within its dedupe
   * window is dropped, a later one counted on the same Event object, across invocations.
   */
  recordEvent(event: ClusterEvent): Promise<void>;

  // Termination and interruption.

  /** One NodeClaim, or undefined when it does not exist. */
  nodeClaim(name: string): Promise<ClusterNodeClaim | undefined>;
  /** One Node (its pods left empty), or undefined when it does not exist. */
  node(name: string): Promise<ClusterNode | undefined>;
  /**
   * One Node with its unfinished pods, both as the API server has them now (two requests), or
   * undefined when it does not exist: how a Node a decision counts on is confirmed.
   */
  nodeWithPods(name: string): Promise<ClusterNode | undefined>;
  /** Pods bound to `nodeName`, terminal ones included (the drain decides what to skip). */
  podsOnNode(nodeName: string): Promise<ReadResult<DrainPod>>;
  /** Asks the Eviction API (`policy/v1`) to evict the pod, with a UID precondition. */
  evictPod(pod: PodKey): Promise<EvictionOutcome>;
  /** Deletes the pod with the given grace period (UID precondition); a pod already gone counts as success. */
  deletePod(pod: PodKey, gracePeriodSeconds: number): Promise<void>;
  /** VolumeAttachments whose `spec.nodeName` is `nodeName`. */
  volumeAttachments(nodeName: string): Promise<readonly VolumeAttachment[]>;
  /** Deletes the Node (finalizers still run); a Node already gone counts as success. */
  deleteNode(name: string): Promise<void>;
}
