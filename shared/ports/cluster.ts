import type {
  DaemonSet,
  DisruptionBudget,
  ExistingNode,
  LabelSelector,
  Labels,
  NodeOverlay,
  NodePool,
  NodeSelectorRequirement,
  Pod,
  ResourceList,
  Taint,
  Toleration,
  ValidationError,
} from '../core/index.ts';
import type { Condition, ConditionStatus, EC2NodeClass, EC2NodeClassStatus } from './cloud.ts';

// The Cluster port: what the use cases read from and write to Kubernetes, in domain terms. The
// @kubernetes/client-node adapter lives in shared/adapters/kube. Quantities are integers (see
// ResourceList) and times are epoch milliseconds or RFC 3339 strings, as named.

export type { Condition, ConditionStatus };

/**
 * One list read. Objects that could not be converted are left out of `items` and reported in
 * `problems` (each names the object and the field); one malformed object never fails the read.
 */
export interface ReadResult<T> {
  readonly items: readonly T[];
  readonly problems: readonly ValidationError[];
}

/** What is known of a NodeClaim that could not be read: enough to tell which instance may be its. */
export interface UnreadableNodeClaim {
  /** `metadata.name` (the API server always has one). */
  readonly name: string;
  /** `status.providerID` when it is a string, else undefined: its instance, if any, is unknown. */
  readonly providerId?: string;
  readonly problem: string;
}

/** The NodeClaims read, and what is known of those that could not be. */
export interface NodeClaimRead extends ReadResult<ClusterNodeClaim> {
  readonly unreadable: readonly UnreadableNodeClaim[];
}

/** How current a NodeClaim read must be. */
export interface NodeClaimReadOptions {
  /** From the API server itself. */
  readonly consistent?: boolean;
  /**
   * At least as current as this time (epoch ms), e.g. the end of the previous disruption pass, so
   * that what it wrote shows: a cluster summary known current only up to an earlier time is not
   * used for this read.
   */
  readonly freshAsOfMs?: number;
  /** Only those labelled `karpenter.sh/nodepool=<nodePool>`: a label-selected list from the API server. */
  readonly nodePool?: string;
}

/** How a Node list is read: as NodeClaims are (NodeClaimReadOptions). */
export type NodeReadOptions = Pick<NodeClaimReadOptions, 'consistent' | 'nodePool'>;

/** A pod bound to a node (from `spec.nodeName`), not yet finished. */
export interface BoundPod {
  readonly pod: Pod;
  readonly nodeName: string;
}

/** `spec.template.spec.nodeClassRef` of a NodePool or `spec.nodeClassRef` of a NodeClaim. */
export interface NodeClassRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

/** A Node, as the scheduler sees it plus what the NodeClaim lifecycle needs. */
export interface ClusterNode extends ExistingNode {
  readonly uid: string;
  /** `spec.providerID`, e.g. `aws:///us-west-2a/i-0123…`. */
  readonly providerId?: string;
  readonly annotations: Labels;
  readonly finalizers: readonly string[];
  /** The `Ready` condition is True. */
  readonly ready: boolean;
  /**
   * `status.conditions` as type, status and transition time (node repair reads them). Absent when
   * the Node reports none.
   */
  readonly conditions?: readonly NodeCondition[];
  readonly deleting: boolean;
  readonly createdAtMs?: number;
  /** `metadata.deletionTimestamp` in epoch milliseconds, when `deleting`. */
  readonly deletedAtMs?: number;
  /** `metadata.ownerReferences` (a registered Node is owned by its NodeClaim). */
  readonly ownerReferences?: readonly OwnerReference[];
  /**
   * Pods bound to the node that could not be read, each as `pod "ns/name": field: problem`. What
   * they request and whether they may move is unknown, so the node is never taken for empty or
   * roomy: no disruption candidate, and no room for new pods in the scheduler's plan.
   */
  readonly unreadablePods?: readonly string[];
}

/** One of a Node's `status.conditions`. */
export interface NodeCondition {
  readonly type: string;
  /** `True`, `False` or `Unknown` as the kubelet (or an agent) wrote it. */
  readonly status: string;
  /** `lastTransitionTime` in epoch ms; undefined when absent or not a timestamp. */
  readonly lastTransitionMs?: number;
}

/** A Node without its pods, for the steps that need none (and should not pay for reading them). */
export type NodeInfo = Omit<ClusterNode, 'pods' | 'unreadablePods'>;

/** The node without its pods. */
export function toNodeInfo(node: ClusterNode): NodeInfo {
  const { pods: _pods, unreadablePods: _unreadable, ...info } = node;
  return info;
}

/** A NodePool (`karpenter.sh/v1`) with the metadata and status the NodeClaim lifecycle needs. */
export type { DisruptionBudget, DisruptionReason } from '../core/index.ts';

/** `spec.disruption` of a NodePool, with the CRD's defaults filled in. */
export interface NodePoolDisruption {
  /** `Balanced` (Karpenter v1.14) weighs a command's savings against its disruption cost. */
  readonly consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized' | 'Balanced';
  /** Go duration or `Never`. */
  readonly consolidateAfter: string;
  readonly budgets: readonly DisruptionBudget[];
}

/** What the API server fills in when `spec.disruption` (or part of it) is left out. */
export const DEFAULT_NODEPOOL_DISRUPTION: NodePoolDisruption = {
  consolidationPolicy: 'WhenEmptyOrUnderutilized',
  consolidateAfter: '0s',
  budgets: [{ nodes: '10%' }],
};

export interface ClusterNodePool {
  /** The scheduling view (requirements with minValues, labels, taints, limits, weight). */
  readonly pool: NodePool;
  readonly uid: string;
  readonly generation?: number;
  readonly nodeClassRef: NodeClassRef;
  /** `spec.template.metadata.annotations`, copied onto each NodeClaim. */
  readonly templateAnnotations: Labels;
  /** `metadata.annotations` of the NodePool itself (Flotilla's settings, the hash). */
  readonly annotations?: Labels;
  /** Go duration or `Never`. @default '720h' */
  readonly expireAfter: string;
  readonly terminationGracePeriod?: string;
  /** `spec.disruption`: consolidation policy and delay, and disruption budgets. */
  readonly disruption: NodePoolDisruption;
  /** `metadata.annotations[karpenter.sh/nodepool-hash]` and `-hash-version`, when set. */
  readonly hash?: string;
  readonly hashVersion?: string;
  readonly conditions: readonly Condition[];
  /** The `Ready` condition is True (the provisioner skips pools that are not). */
  readonly ready: boolean;
  readonly deleting: boolean;
  /** `status.resources`: capacity the pool's nodes provide. */
  readonly resources?: ResourceList;
  readonly nodes?: number;
  /** `status.nodeClassObservedGeneration`: the NodeClass generation the conditions reflect. */
  readonly nodeClassObservedGeneration?: number;
}

/**
 * A NodeOverlay (`karpenter.sh/v1alpha1`) as read: the overlay when it is valid, else why not.
 * One that is malformed or fails validation is still read (its status says why), never dropped.
 */
export interface ClusterNodeOverlay {
  readonly name: string;
  readonly generation?: number;
  readonly conditions: readonly Condition[];
  /** What it changes; absent when `invalid` is set. */
  readonly overlay?: NodeOverlay;
  /** Why it cannot be applied (Karpenter's RuntimeValidation), as a sentence naming the field. */
  readonly invalid?: string;
}

/** `status` of a NodeClaim. */
export interface NodeClaimStatus {
  readonly providerId?: string;
  readonly imageId?: string;
  readonly nodeName?: string;
  readonly capacity?: ResourceList;
  readonly allocatable?: ResourceList;
  readonly conditions: readonly Condition[];
  /** `status.lastPodEventTime` in epoch milliseconds, when set. */
  readonly lastPodEventMs?: number;
}

/** A NodeClaim (`karpenter.sh/v1`) as stored in the cluster. */
export interface ClusterNodeClaim {
  readonly name: string;
  readonly uid: string;
  readonly nodePoolName: string;
  readonly nodeClassRef: NodeClassRef;
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly finalizers: readonly string[];
  readonly requirements: readonly NodeSelectorRequirement[];
  /** `spec.resources.requests`. */
  readonly requests: ResourceList;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  readonly expireAfter?: string;
  readonly terminationGracePeriod?: string;
  readonly createdAtMs?: number;
  readonly deleting: boolean;
  /** `metadata.deletionTimestamp` in epoch milliseconds, when `deleting`. */
  readonly deletedAtMs?: number;
  /** `metadata.resourceVersion` as read: a write against it fails if the NodeClaim changed since. */
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly status: NodeClaimStatus;
}

/** A pod on a node that is being drained: what eviction order and grace periods need. */
export interface DrainPod {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Labels;
  readonly annotations: Labels;
  /** `spec.priorityClassName`; `system-cluster-critical` and `system-node-critical` drain last. */
  readonly priorityClassName?: string;
  /** Owned by a DaemonSet (ownerReference kind DaemonSet). */
  readonly daemonSet: boolean;
  /** A static pod's mirror (annotation `kubernetes.io/config.mirror`): never evicted. */
  readonly mirror: boolean;
  readonly phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  readonly tolerations: readonly Toleration[];
  /** `metadata.deletionTimestamp` in epoch milliseconds, when the pod is terminating. */
  readonly deletedAtMs?: number;
  /** `status.startTime` in epoch milliseconds (a do-not-disrupt duration counts from it). */
  readonly startedAtMs?: number;
  /** `spec.terminationGracePeriodSeconds`. @default 30 */
  readonly terminationGracePeriodSeconds: number;
  /** Names of the PersistentVolumes bound to the pod's PersistentVolumeClaims. */
  readonly volumeNames: readonly string[];
}

/** A pod to act on, with the UID precondition the Eviction API and deletes carry. */
export interface PodKey {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/**
 * What the Eviction API answered: `evicted` (accepted), `gone` (404, 409 because the UID
 * precondition no longer matches, or 403 because the pod's namespace is being deleted and takes
 * the pod with it), `blocked` (429: a PodDisruptionBudget allows no disruption now, or the pod
 * matches several budgets).
 */
export type EvictionOutcome = 'evicted' | 'gone' | 'blocked';

/** A `storage.k8s.io/v1` VolumeAttachment on a node. */
export interface VolumeAttachment {
  readonly name: string;
  readonly nodeName: string;
  /** `spec.source.persistentVolumeName`, when the attachment is of a PersistentVolume. */
  readonly persistentVolumeName?: string;
}

/** What CSI attach limits need (SolveInput.claimDrivers, ExistingNode.volumeLimits). */
export interface VolumeLimitsRead {
  /** Node name → driver → the most volumes it attaches there (its CSINode's allocatable counts). */
  readonly nodes: ReadonlyMap<string, Readonly<Record<string, number>>>;
  /**
   * `namespace/claim` → the CSI driver of the claim's volume; left empty (and the claims unread)
   * when no node has a limit.
   */
  readonly claimDrivers: ReadonlyMap<string, string>;
  /** CSINodes and claims that could not be read (left out). */
  readonly problems: readonly ValidationError[];
}

/** A DaemonSet-free summary of a PodDisruptionBudget (`policy/v1`), for disruption and eviction. */
export interface PodDisruptionBudget {
  readonly namespace: string;
  readonly name: string;
  /** Undefined selects nothing; `{}` selects every pod of the namespace. */
  readonly selector?: LabelSelector;
  /** An integer or a percentage such as `"50%"`. */
  readonly minAvailable?: number | string;
  readonly maxUnavailable?: number | string;
  /** `status.disruptionsAllowed`: evictions allowed now. */
  readonly disruptionsAllowed: number;
  readonly currentHealthy: number;
  readonly desiredHealthy: number;
  readonly expectedPods: number;
  readonly unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
}

/** A NodeClaim to create, in Karpenter's v1 shape. */
export interface NewNodeClaim {
  /** Deterministic (derived from the decision), so a repeated create is recognised. */
  readonly name: string;
  /** The owning NodePool: its name labels the claim and its uid is the ownerReference. */
  readonly nodePool: { readonly name: string; readonly uid: string };
  readonly nodeClassRef: NodeClassRef;
  /** Labels besides `karpenter.sh/nodepool` and the NodeClass label, which are added. */
  readonly labels: Labels;
  /** Annotations besides the NodePool hash ones, which are added from `nodePoolHash`. */
  readonly annotations: Labels;
  readonly nodePoolHash?: { readonly hash: string; readonly version: string };
  readonly requirements: readonly NodeSelectorRequirement[];
  readonly requests: ResourceList;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  readonly expireAfter?: string;
  readonly terminationGracePeriod?: string;
}

/**
 * A condition to set. `lastTransitionTime` is the write time when the status changes and is kept
 * otherwise, as Kubernetes conditions require.
 */
export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  /** CamelCase, e.g. `NodeNotFound`; empty allowed only for True. */
  readonly reason: string;
  readonly message: string;
}

/** Changes to NodeClaim status; absent fields are left as they are. */
export interface NodeClaimStatusPatch {
  readonly providerId?: string;
  readonly imageId?: string;
  readonly nodeName?: string;
  readonly capacity?: ResourceList;
  readonly allocatable?: ResourceList;
  /** Merged by type into the existing conditions. */
  readonly conditions?: readonly ConditionUpdate[];
  /** Condition types to remove (as Karpenter clears `Drifted` or `Consolidatable`). */
  readonly removeConditions?: readonly string[];
  /** `status.lastPodEventTime` (RFC 3339): when a pod last arrived on or left the node. */
  readonly lastPodEventTime?: string;
}

/** Changes to an object's metadata. `null` removes a label or annotation. */
export interface MetadataPatch {
  readonly labels?: Readonly<Record<string, string | null>>;
  readonly annotations?: Readonly<Record<string, string | null>>;
  readonly addFinalizers?: readonly string[];
  readonly removeFinalizers?: readonly string[];
}

/** An owner of an object (`metadata.ownerReferences[]`). */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly blockOwnerDeletion?: boolean;
}

/** Changes to a Node: metadata plus taints added or removed (matched by key and effect). */
export interface NodePatch extends MetadataPatch {
  readonly addTaints?: readonly Taint[];
  readonly removeTaints?: readonly Taint[];
  /** Owners to add; one with the same uid already there is left as it is. */
  readonly addOwnerReferences?: readonly OwnerReference[];
}

/** Changes to a NodePool's metadata: labels and annotations only, `null` removing one. */
export type NodePoolMetadataPatch = Pick<MetadataPatch, 'labels' | 'annotations'>;

/** Changes to NodePool status; absent fields are left as they are. */
export interface NodePoolStatusPatch {
  readonly conditions?: readonly ConditionUpdate[];
  readonly resources?: ResourceList;
  readonly nodes?: number;
  readonly nodeClassObservedGeneration?: number;
}

/** The object an event is about. */
export type EventSubject =
  | { readonly kind: 'Pod'; readonly namespace: string; readonly name: string; readonly uid?: string }
  | {
      readonly kind: 'NodeClaim' | 'NodePool' | 'Node' | 'EC2NodeClass';
      readonly name: string;
      readonly uid?: string;
    };

/**
 * A Kubernetes Event. Occurrences with the same dedupe key (eventDedupeKey: subject, reason and
 * dedupe values) are one Event: a repeat within the dedupe window is dropped, a later one counted
 * on the same object (its message and type replaced by the latest), as Karpenter's recorder keys
 * them.
 */
export interface ClusterEvent {
  readonly subject: EventSubject;
  readonly type: 'Normal' | 'Warning';
  /** CamelCase, e.g. `FailedScheduling`, `InsufficientCapacityError`. */
  readonly reason: string;
  readonly message: string;
  /**
   * What tells occurrences apart besides the subject and reason (Karpenter's dedupe values: a
   * disruption reason, a command, an annotation value). @default [type, message]
   */
  readonly dedupeValues?: readonly string[];
  /** The dedupe window of this Event, in seconds. @default the adapter's window */
  readonly dedupeSeconds?: number;
}

/** The key under which occurrences of an Event are one: subject, reason and dedupe values. Pure. */
export function eventDedupeKey(event: ClusterEvent): string {
  const s = event.subject;
  return [
    s.kind,
    s.kind === 'Pod' ? s.namespace : '',
    s.name,
    event.reason,
    ...(event.dedupeValues ?? [event.type, event.message]),
  ].join('\n');
}

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

/**
 * The owner list after a NodePatch's `addOwnerReferences`: owners whose uid is not there yet are
 * appended. Undefined when nothing changes.
 */
export function mergeOwnerReferences<T extends { readonly uid: string }>(
  current: readonly T[],
  add: readonly OwnerReference[] | undefined,
): (T | OwnerReference)[] | undefined {
  const fresh = (add ?? []).filter((o) => !current.some((c) => c.uid === o.uid));
  return fresh.length === 0 ? undefined : [...current, ...fresh];
}
