// The interruption controller's decisions (one log line each, written through decision.ts).

/** What Flotilla did about one instance of an interruption event. */
export interface HandleInterruptionDecision {
  readonly kind: 'handleInterruption';
  /** The Event reason recorded (`SpotInterrupted`, …), or why nothing was done. */
  readonly reason: string;
  readonly action: 'cordonAndDrain' | 'forcefulTermination' | 'event' | 'alreadyDeleting' | 'noNodeClaim';
  /** The interruption's kind (`spotInterruption`, `rebalanceRecommendation`, …). */
  readonly interruption: string;
  readonly eventId: string;
  readonly instanceId: string;
  readonly nodeClaim?: string;
  readonly nodePool?: string;
  /** The spot offering backed off, `<capacityType>:<instanceType>:<zone>`. */
  readonly unavailableOffering?: string;
  /** Where a NodeClaim deleted for it went for its drain (`termination sweep` when the queue refused it). */
  readonly handedOver?: 'termination queue' | 'termination sweep';
  /** The NodeClaim's `karpenter.sh/capacity-type` label, when it has one. */
  readonly capacityType?: string;
  /**
   * Not the message's first instance (an AWS Health event may name several): the message was
   * received, and is counted, once, with its first.
   */
  readonly laterInstance?: true;
  /** On the message's first instance, for a message from the queue: seconds since its event's time. */
  readonly queuedSeconds?: number;
}

/** An interruption event of a kind Flotilla does not act on. */
export interface IgnoreInterruptionDecision {
  readonly kind: 'ignoreInterruption';
  readonly reason: string;
  readonly interruption: string;
  readonly eventId: string;
  /** For a message from the queue: seconds since its event's time. */
  readonly queuedSeconds?: number;
}
