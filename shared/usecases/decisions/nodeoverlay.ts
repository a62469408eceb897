// The NodeOverlay status controller's decision (one log line, written through decision.ts).

/**
 * A NodeOverlay's status was written. `reason` is its ValidationSucceeded reason
 * (`ValidationSucceeded`, `RuntimeValidation`, `Conflict`).
 */
export interface UpdateNodeOverlayDecision {
  readonly kind: 'updateNodeOverlay';
  readonly reason: string;
  readonly nodeOverlay: string;
  readonly validationSucceeded: 'True' | 'False' | 'Unknown';
  /** Why it is not valid, when it is not. */
  readonly detail?: string;
}
