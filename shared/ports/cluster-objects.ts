import type {
  Condition,
  DisruptionBudget,
  ExistingNode,
  LabelSelector,
  Labels,
  NodeOverlay,
  NodePool,
  NodeSelectorRequirement,
  Pod,
  PoolSchedules,
  ResourceList,
  Taint,
  Toleration,
  ValidationError,
} from '../core/index.ts';

// The objects the Cluster port reads: Nodes, NodePools, NodeClaims, NodeOverlays, pods being
// drained, PodDisruptionBudgets and volume attachments, in domain terms, and the shape of a list
// read. Quantities are integers (see ResourceList) and times are epoch milliseconds, as named.

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
  /** `metadata.labels['karpenter.sh/nodepool']` when it is a string, else undefined: its NodePool is unknown. */
  readonly nodePool?: string;
  /**
   * True when its labels are readable and have no `karpenter.sh/nodepool` at all: a NodeClaim a
   * user made outside every NodePool (Flotilla does not manage those), certainly none of theirs.
   */
  readonly standalone?: true;
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

/** The group and kind of the only NodeClass Flotilla launches from. */
export const EC2_NODE_CLASS = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' } as const;

/** Whether a reference names an EC2NodeClass. */
export function isEC2NodeClassRef(ref: Pick<NodeClassRef, 'group' | 'kind'>): boolean {
  return ref.group === EC2_NODE_CLASS.group && ref.kind === EC2_NODE_CLASS.kind;
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
/** A NodePool (`karpenter.sh/v1`) with the metadata and status the NodeClaim lifecycle needs. */
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
  /** Flotilla's own schedules (annotation `flotilla.io/schedules`), when it names any. */
  readonly schedules?: PoolSchedules;
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
  /**
   * Its `karpenter.sh/nodepool` label; absent for a standalone NodeClaim (one a user made outside
   * every NodePool, of an EC2NodeClass): launched, registered, expired, interrupted and terminated
   * as any other, never consolidated or drifted, as Karpenter does.
   */
  readonly nodePoolName?: string;
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

/** An owner of an object (`metadata.ownerReferences[]`). */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly blockOwnerDeletion?: boolean;
}
