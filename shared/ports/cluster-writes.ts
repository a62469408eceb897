import type { ConditionStatus, Labels, NodeSelectorRequirement, ResourceList, Taint } from '../core/index.ts';
import type { NodeClassRef, OwnerReference } from './cluster-objects.ts';

// What the Cluster port writes: a NodeClaim to create, and patches of status, metadata and
// taints. Absent fields are left as they are; `null` removes a label or annotation.

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
