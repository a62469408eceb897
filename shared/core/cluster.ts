import type { Labels } from './labels.ts';
import type { Pod } from './pod.ts';
import type { NodeSelectorRequirement } from './requirements.ts';
import type { ResourceList } from './resources.ts';
import type { Taint } from './taints.ts';

/** A node that exists in the cluster, with the pods bound to it. */
export interface ExistingNode {
  readonly name: string;
  /** The owning NodePool, when Flotilla (or Karpenter) launched it. */
  readonly nodePoolName?: string;
  readonly labels: Labels;
  readonly taints?: readonly Taint[];
  /** Schedulable resources (integers, see ResourceList). */
  readonly allocatable: ResourceList;
  /** Full capacity, counted against NodePool limits. @default allocatable */
  readonly capacity?: ResourceList;
  /** Pods bound to the node (DaemonSet pods included). */
  readonly pods: readonly Pod[];
  /** Registered, ready and start-up taints removed. Uninitialized nodes ignore start-up taints. */
  readonly initialized: boolean;
  /** Cordoned, or marked for deletion: receives nothing. */
  readonly unschedulable?: boolean;
  /**
   * CSI attach limits from the node's CSINode (`spec.drivers[].allocatable.count`): driver name →
   * the most volumes of that driver the node attaches. A driver not listed has no limit.
   */
  readonly volumeLimits?: Readonly<Record<string, number>>;
  /**
   * Its NodeClaim's labels, when it has one: they price the node against dollar limits (instance
   * type, zone, capacity type) where the Node's own labels may come from the cluster summary.
   * @default labels
   */
  readonly claimLabels?: Labels;
}

/** A NodeClaim that was created but whose node is not registered yet. */
export interface InFlightNodeClaim {
  readonly name: string;
  /** Absent for a standalone NodeClaim: it takes pods once launched, and counts in no limit. */
  readonly nodePoolName?: string;
  /** `spec.requirements` of the claim. */
  readonly requirements: readonly NodeSelectorRequirement[];
  readonly taints?: readonly Taint[];
  /** Candidate instance types still possible (from `node.kubernetes.io/instance-type In`). */
  readonly instanceTypeNames: readonly string[];
  /** Labels known once launched (instance type, zone, capacity type). */
  readonly labels?: Labels;
  /** Known once launched; otherwise the smallest candidate's allocatable is assumed. */
  readonly allocatable?: ResourceList;
  /** Known once launched; otherwise the largest candidate's capacity counts toward limits. */
  readonly capacity?: ResourceList;
  /** Pods already nominated to this claim. */
  readonly pods: readonly Pod[];
  /**
   * Uids of pending pods an earlier decision planned onto this claim: they go back onto it before
   * anything else is placed (each relaxed only as far as it must be to fit there again), so pods
   * planned onto a node on its way are not planned for again, as a pod with a preference would be.
   */
  readonly nominatedPodUids?: readonly string[];
}

/** A DaemonSet: its pod template decides where it runs and what it takes from each node. */
export interface DaemonSet {
  readonly namespace: string;
  readonly name: string;
  readonly template: Pod;
}
