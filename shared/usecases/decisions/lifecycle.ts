// The NodeClaim lifecycle's decisions (one log line each, written through decision.ts).

/** Why the lifecycle deletes a NodeClaim that never became a node. */
export type DeleteReason = 'launch_timeout' | 'registration_timeout';

interface NodeClaimFields {
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim (no NodePool). */
  readonly nodePool?: string;
}

/** How a decision names a NodeClaim: its name and, unless it is standalone, its NodePool. */
export function nodeClaimFields(claim: { readonly name: string; readonly nodePoolName?: string }): {
  readonly nodeClaim: string;
  readonly nodePool?: string;
} {
  return {
    nodeClaim: claim.name,
    ...(claim.nodePoolName === undefined ? {} : { nodePool: claim.nodePoolName }),
  };
}

/** The NodeClaim's Node joined: it is registered and the Node gets the NodeClaim's labels and taints. */
export interface RegisterDecision extends NodeClaimFields {
  readonly kind: 'register';
  readonly reason: 'node joined';
  readonly node: string;
  readonly providerId?: string;
  readonly unregisteredTaintMissing: boolean;
  readonly taintsAdded: number;
  /** The NodeClaim's `topology.kubernetes.io/zone` label. */
  readonly zone?: string;
}

/** The NodeClaim's Node is ready and its startup taints are gone: the NodeClaim is initialized. */
export interface InitializeDecision extends NodeClaimFields {
  readonly kind: 'initialize';
  readonly reason: 'node ready';
  readonly node: string;
}

/** A NodeClaim condition changed while it waits for its Node; `reason` is the condition's. */
export interface WaitDecision extends NodeClaimFields {
  readonly kind: 'wait';
  readonly reason: string;
  readonly condition: string;
  readonly status: string;
  readonly detail: string;
}

/** Flotilla deleted a NodeClaim (which starts its termination). */
export interface DeleteDecision extends NodeClaimFields {
  readonly kind: 'delete';
  /** `launch_timeout`, `registration_timeout` (lifecycle) or `node deleted` (its Node was deleted). */
  readonly reason: string;
  readonly providerId?: string;
  readonly node?: string;
  /** Its `karpenter.sh/capacity-type` label, when it has one. */
  readonly capacityType?: string;
  /** How termination learns of it. */
  readonly handedOver?: 'termination queue' | 'termination sweep';
}
