// The decision line of node repair (decision.ts writes it): one per node replaced, and one when a
// NodePool's repairs start or stop being held back.

/**
 * Node repair replaced a node (`replace`: its NodeClaim deleted forcefully, `reason` the unhealthy
 * cause), or a NodePool's repairs were held back (`block`: more than 20% of its nodes unhealthy,
 * or its disruption budgets for `Unhealthy` allow no more) or resumed (`unblock`).
 */
export interface RepairDecision {
  readonly kind: 'repair';
  readonly reason: string;
  readonly action: 'replace' | 'block' | 'unblock';
  readonly nodePool: string;
  readonly node?: string;
  readonly nodeClaim?: string;
  readonly instanceId?: string;
  /** `Ready=False`, `AcceleratedHardwareReady=False`, `instanceStatus,systemStatus` … */
  readonly cause?: string;
  readonly unhealthySeconds?: number;
  readonly tolerationSeconds?: number;
  /** The pool's unhealthy nodes, nodes and threshold when decided. */
  readonly unhealthyNodes: number;
  readonly poolNodes: number;
  readonly threshold: number;
  /** Due repairs held back (block). */
  readonly held?: number;
  /** Why (block): the NodePool's `NodeRepairBlocked` reason. */
  readonly heldBy?: 'UnhealthyThresholdExceeded' | 'DisruptionBudgetExhausted';
  /** What the `Unhealthy` budgets allowed before this pass's repairs (block by budget). */
  readonly allowedDisruptions?: number;
  readonly handedOver?: 'termination queue' | 'termination sweep';
}
