// A shadow stack's daily comparison (shared/usecases/shadow/day.ts): one line and the day's metrics.

/** What one side of a day's comparison came to. */
export interface ComparedSide {
  /** USD per hour on average over the window the lines cover. */
  readonly pricePerHour: number;
  /** USD over that window. */
  readonly dollars: number;
  /**
   * Seconds a pod waited: on the live side from its creation to its start, on Flotilla's the
   * oldest pending pod's age when a shadow run decided a launch. Absent when none was seen.
   */
  readonly podWaitP50Seconds?: number;
  readonly podWaitP90Seconds?: number;
}

/** One choice that makes the sides differ, as the report words it. */
export interface ComparedDifference {
  readonly kind: string;
  readonly nodePool: string;
  /** USD Flotilla would have saved over the window (negative: it would have cost more). */
  readonly dollars: number;
  readonly from: string;
  readonly until: string;
  readonly why: string;
}

/**
 * A UTC day of a shadow stack's lines compared (the model of `flotilla shadow report`):
 * `compared`, or `no observation` when the day holds no observation of the live cluster (the
 * shadow's disruption Lambda did not run, or its lines are not in the groups read).
 */
export interface CompareDecision {
  readonly kind: 'compare';
  readonly reason: 'compared' | 'no observation';
  /** The UTC day, YYYY-MM-DD. */
  readonly day: string;
  /** The first and last shadow line of the day read, RFC 3339; the window the figures cover. */
  readonly from?: string;
  readonly to?: string;
  /** Hours between them. */
  readonly hours: number;
  readonly live?: ComparedSide;
  readonly flotilla?: ComparedSide;
  /** USD per hour Flotilla would have saved over the window, by kind of difference. */
  readonly savingsPerHour?: Readonly<Record<string, number>>;
  /** The largest differences (DECISION_SAMPLE_SIZE at most); `differenceCount` says how many there were. */
  readonly differences?: readonly ComparedDifference[];
  readonly differenceCount?: number;
  /** Shadow lines read, and those that lacked what their kind carries (left out). */
  readonly lines: number;
  readonly unreadableLines: number;
}
