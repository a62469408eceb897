import type { Clock } from '../ports/clock.ts';
import { type LogFields, type Logger, makeLogger } from '../runtime/logger.ts';
import type { MetricPoint } from '../runtime/metrics.ts';
import { observeDecisions, toDecisionLine } from '../usecases/decisions/decision.ts';

// The simulator's decision log: Flotilla's decisions as the use cases made them (values handed over
// by observeDecisions, not log text read back) and what the simulated world did in their place
// (EC2 warning of and reclaiming spot instances), each with its virtual time.

/** What the use cases write: a Logger, and every decision written through it is recorded. */
export interface DecisionRecorder {
  /** The log entries so far, in order: `atMs`, `level`, `time`, `message`, then the fields. */
  readonly entries: readonly Readonly<Record<string, unknown>>[];
  /**
   * The metric points of those decisions, in order: what the Lambdas write as EMF beside each
   * decision's line (the same function, decisionMetrics), for the report and dashboard to chart.
   */
  readonly metrics: readonly MetricPoint[];
  /**
   * Flotilla's logger. Its lines go to `log`; each decision written through it (or a child) is also
   * recorded as an entry: the fields of its line (toDecisionLine) after the child loggers' fields.
   */
  readonly logger: Logger;
  /**
   * What the world does in place of AWS: each line at info level or above is recorded as an entry
   * with `source: 'simulator'`. Not written to `log`: Flotilla does not write these.
   */
  readonly world: Logger;
}

export interface DecisionRecorderOptions {
  readonly clock: Clock;
  /** Every line Flotilla writes, decisions and others, as JSON. @default dropped */
  readonly log?: (line: string) => void;
  /** The cluster Flotilla's lines and metrics name (the metrics' `cluster` dimension). @default 'simulated' */
  readonly cluster?: string;
}

export function makeDecisionRecorder(options: DecisionRecorderOptions): DecisionRecorder {
  const { clock } = options;
  const base: LogFields = { component: 'flotilla', cluster: options.cluster ?? 'simulated' };
  const entries: Record<string, unknown>[] = [];
  const metrics: MetricPoint[] = [];
  const record = (level: string, message: string, fields: LogFields) => {
    const at = clock.now();
    entries.push({ atMs: at.getTime(), level, time: at.toISOString(), message, ...base, ...fields });
  };
  const lines = makeLogger(base, { level: 'info', now: () => clock.now(), sink: options.log ?? (() => {}) });
  const logger = observeDecisions(lines, (decision, context, points) => {
    const line = toDecisionLine(decision);
    record(line.level, line.message, { ...context, ...line.fields });
    metrics.push(...points);
  });
  const world = makeWorldLogger(record, { source: 'simulator' }, clock);
  return { entries, metrics, logger, world };
}

function makeWorldLogger(
  record: (level: string, message: string, fields: LogFields) => void,
  fields: LogFields,
  clock: Clock,
): Logger {
  return {
    fields,
    now: () => clock.now(),
    // The world measures nothing Flotilla does.
    metrics: () => {},
    debug: () => {},
    info: (message, extra) => record('info', message, { ...fields, ...extra }),
    warn: (message, extra) => record('warn', message, { ...fields, ...extra }),
    error: (message, extra) => record('error', message, { ...fields, ...extra }),
    child: (more) => makeWorldLogger(record, { ...fields, ...more }, clock),
  };
}
