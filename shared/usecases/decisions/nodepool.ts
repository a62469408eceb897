import type { ResourceList } from '../../core/index.ts';

// The NodePool status controller's decisions (one log line each, written through decision.ts).

/** A NodePool's status was written. `reason` is `status changed`, or the Ready message when not ready. */
export interface UpdateNodePoolDecision {
  readonly kind: 'updateNodePool';
  readonly reason: string;
  readonly nodePool: string;
  readonly conditions: readonly string[];
  readonly nodes?: number;
  readonly resources?: ResourceList;
}

/** A malformed NodePool was marked not Ready; `reason` is the validation problem. */
export interface RejectNodePoolDecision {
  readonly kind: 'rejectNodePool';
  readonly reason: string;
  readonly nodePool: string;
}
