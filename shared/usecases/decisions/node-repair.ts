// The decision line of node repair (decision.ts writes it): one per node replaced, one when a
// NodePool's repairs start or stop being held back, and one per pass for repairs held back by the
// nodes themselves or their unknown NodePool.

/**
 * Node repair replaced a node (`replace`: its NodeClaim deleted forcefully, `reason` the unhealthy
 * cause), or a NodePool's repairs were held back (`block`: more than 20% of its nodes unhealthy,
 * or its disruption budgets for `Unhealthy` allow no more) or resumed (`unblock`), or due repairs
 * were held back by `karpenter.sh/do-not-repair` or by their NodePool not being read (`hold`).
 */
export interface RepairDecision {
  readonly kind: 'repair';
  readonly reason: string;
  readonly action: 'replace' | 'block' | 'unblock' | 'hold';
  /** Absent for a standalone NodeClaim's node (its health is then the whole cluster's). */
  readonly nodePool?: string;
  readonly node?: string;
  readonly nodeClaim?: string;
  readonly instanceId?: string;
  /** `Ready=False`, `AcceleratedHardwareReady=False`, `instanceStatus,systemStatus` … */
  readonly cause?: string;
  /** The unhealthy Node condition's type (`Ready`), or the first failed EC2 check (`instanceStatus`). */
  readonly conditionType?: string;
  /** The NodeClaim's `karpenter.sh/capacity-type` label and `status.imageID`, when it has them. */
  readonly capacityType?: string;
  readonly imageId?: string;
  readonly unhealthySeconds?: number;
  readonly tolerationSeconds?: number;
  /** The pool's unhealthy nodes, nodes and threshold when decided. */
  readonly unhealthyNodes: number;
  readonly poolNodes: number;
  readonly threshold: number;
  /** Due repairs held back (block, hold). */
  readonly held?: number;
  /** Why: the NodePool's `NodeRepairBlocked` reason (block), or what holds the nodes back (hold). */
  readonly heldBy?:
    | 'UnhealthyThresholdExceeded'
    | 'DisruptionBudgetExhausted'
    | 'DoNotRepair'
    | 'NodePoolNotFound'
    | 'NodePoolUnreadable';
  /** The first nodes held back (hold). */
  readonly nodes?: readonly string[];
  /** What the `Unhealthy` budgets allowed before this pass's repairs (block by budget). */
  readonly allowedDisruptions?: number;
  readonly handedOver?: 'termination queue' | 'termination sweep';
}
