import type { LogFields, Logger, LogLevel } from '../../runtime/logger.ts';
import type { MetricPoint } from '../../runtime/metrics.ts';
import type { MetricsPublisher } from '../../runtime/metrics-sink.ts';
import type { Decision } from './types.ts';

// Where decisions go besides their log line: the metrics sink, which stands beside the logger as
// Powertools' Metrics stands beside its Logger. A Lambda's sink writes CloudWatch Embedded Metric
// Format lines (shared/runtime/metrics-sink.ts); the simulator's keeps the points and records each
// decision as a value; a script's or test's measures nothing.

/** A decision's line: its level, fixed message and fields. */
export interface DecisionLine {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: LogFields;
}

/**
 * Receives each decision written, as a value: with the fields of the logger its line went to (a
 * child logger's included, e.g. `holder`), the metric points it yielded (toMetricPoints) and the
 * line as written (toDecisionLine).
 */
export type DecisionObserver = (
  decision: Decision,
  fields: LogFields,
  points: readonly MetricPoint[],
  line: DecisionLine,
) => void;

/**
 * Where the metrics of decisions go (`cluster`: the dimension every point carries, undefined for a
 * script's or test's sink, which gets none; `now()`: the moment decisions written now are dated;
 * `publish`: the points of decisions written together), and who else hears of each decision.
 */
export interface MetricsSink extends MetricsPublisher {
  /** Receives every decision written, as a value (the simulator's record). */
  readonly observe?: DecisionObserver;
}

/** What writeDecision writes to: the decision's line to `logger`, its points to `metrics`. */
export interface DecisionOutput {
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}
