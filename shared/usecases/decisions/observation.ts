// Parts of a disruption pass's observation (the `observe` decision, disruption.ts) that Karpenter's
// node and status condition metrics come from.

/** cpu in cores and memory in bytes. */
export interface CpuMemory {
  readonly cpu: number;
  readonly memoryBytes: number;
}

/**
 * What a NodePool's Nodes hold, summed over them as Karpenter's per-node gauges are summed:
 * allocatable, the requests of the pods bound to them (DaemonSet pods included) and of their
 * DaemonSet pods alone, and capacity less allocatable.
 */
export interface NodePoolNodeTotals {
  readonly allocatable: CpuMemory;
  readonly podRequests: CpuMemory;
  readonly daemonRequests: CpuMemory;
  readonly systemOverhead: CpuMemory;
  /** The age of its oldest Node, whole seconds (absent without a Node of known creation). */
  readonly oldestNodeSeconds?: number;
}

/** The objects of one kind that have one condition type at one status and reason. */
export interface ConditionTally {
  readonly type: string;
  readonly status: string;
  /** The condition's reason (absent for Nodes: the kubelet's reasons are not read). */
  readonly reason?: string;
  /** Objects with it now. */
  readonly objects: number;
  /** How long the object longest in it has had it, whole seconds (absent when no time is known). */
  readonly longestSeconds?: number;
  /** Objects whose condition took this status within the observation's window. */
  readonly transitions: number;
  /** The condition's steady state (True for what an object needs, False for trouble): not published as a count. */
  readonly steady?: true;
}

/** The status conditions of each kind the pass read, tallied. */
export interface ObservedConditions {
  readonly nodeClaim: readonly ConditionTally[];
  readonly node: readonly ConditionTally[];
  readonly nodePool: readonly ConditionTally[];
  readonly ec2NodeClass: readonly ConditionTally[];
}

/** How long the object longest in termination of each kind has been terminating, whole seconds. */
export interface ObservedTerminations {
  readonly nodeClaimSeconds?: number;
  readonly nodeSeconds?: number;
}

/** One consolidation move a pass weighed, as Karpenter's Balanced evaluator counts it. */
export interface ConsolidationMoveTally {
  readonly nodePool: string;
  /** The NodePool's consolidation policy. */
  readonly policy: string;
  readonly decision: 'approved' | 'rejected';
  readonly count: number;
  /** The Balanced scores of these moves (Balanced NodePools only; finite ones). */
  readonly scores: readonly number[];
}
