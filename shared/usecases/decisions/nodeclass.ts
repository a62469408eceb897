// The EC2NodeClass controller's decisions (one log line each, written through decision.ts).

/**
 * An EC2NodeClass's status was resolved and changed, or a part of it could not be resolved for now
 * (`retrying`). `reason` is `ready`, else the Ready condition's message. A refresh that changes
 * nothing is no decision.
 */
export interface ResolveNodeClassDecision {
  readonly kind: 'resolveNodeClass';
  readonly reason: string;
  readonly nodeClass: string;
  readonly changed: boolean;
  readonly generation?: number;
  readonly ready?: string;
  readonly retrying: readonly string[];
  readonly subnets: number;
  readonly securityGroups: number;
  readonly amis: readonly string[];
  readonly instanceProfile?: string;
}

/** A deleted EC2NodeClass keeps its finalizer while NodeClaims use it. */
export interface WaitForNodeClaimsDecision {
  readonly kind: 'waitForNodeClaims';
  readonly reason: 'NodeClaims still use it';
  readonly nodeClass: string;
  readonly nodeClaims: readonly string[];
  readonly nodeClaimCount: number;
}

/** A deleted EC2NodeClass no NodeClaim uses: what it made is released and its finalizer removed. */
export interface FinalizeNodeClassDecision {
  readonly kind: 'finalizeNodeClass';
  readonly reason: 'no NodeClaim uses it';
  readonly nodeClass: string;
  readonly instanceProfileReleased: boolean;
}

/**
 * A NodeClaim's capacity reservation ended or is ending: an ended reservation's node runs on as
 * on-demand and is relabelled so (`relabelOnDemand`); a capacity block's node is deleted ahead of
 * the block's end (`deleteNodeClaim`).
 */
export interface ReservationEndDecision {
  readonly kind: 'reservationEnd';
  readonly reason: 'capacity reservation ended' | 'capacity block ending';
  readonly action: 'relabelOnDemand' | 'deleteNodeClaim';
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  readonly capacityReservationId: string;
  /** The reservation's state as EC2 names it. */
  readonly reservationState: string;
  readonly endTime?: string;
  /** Nodes relabelled with the NodeClaim. */
  readonly nodes?: readonly string[];
  readonly handedOver?: 'termination queue' | 'termination sweep';
}
