/** What an EC2 or AWS Health interruption event asks for, in Karpenter's vocabulary. */
export type InterruptionKind =
  | 'spotInterruption'
  | 'rebalanceRecommendation'
  | 'scheduledChange'
  | 'instanceStopped'
  | 'instanceTerminated'
  | 'capacityReservationInterruption'
  | 'noop';

/** One interruption event in domain terms (parsed at the edge from its EventBridge shape). */
export interface Interruption {
  readonly kind: InterruptionKind;
  /** The event's id, for logs and Event messages. */
  readonly eventId: string;
  /** Instances the event is about; empty for `noop`. */
  readonly instanceIds: readonly string[];
  /** Why a `noop` is one (unknown detail-type, a state or category that needs no action). */
  readonly why?: string;
}
