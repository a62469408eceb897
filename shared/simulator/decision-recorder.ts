import type { Clock } from '../ports/clock.ts';
import { type LogFields, type Logger, makeLogger } from '../runtime/logger.ts';
import type { MetricPoint } from '../runtime/metrics.ts';
import { makeEmfMetrics } from '../runtime/metrics-sink.ts';
import { type MetricsSink, toDecisionLine } from '../usecases/decisions/decision.ts';

// The simulator's decision log: Flotilla's decisions as the use cases made them (values handed to
// the metrics sink's observer, not log text read back) and what the simulated world did in their
// place (EC2 warning of and reclaiming spot instances), each with its virtual time.

/** What the use cases write to: a Logger and a metrics sink that records every decision written. */
export interface DecisionRecorder {
  /** The log entries so far, in order: `atMs`, `level`, `time`, `message`, then the fields. */
  readonly entries: readonly Readonly<Record<string, unknown>>[];
  /**
   * The metric points of those decisions, in order: what the Lambdas publish as EMF beside each
   * decision's line (the same function, toMetricPoints), for the report and dashboard to chart.
   */
  readonly points: readonly MetricPoint[];
  /** Flotilla's logger. Its lines go to `log`. */
  readonly logger: Logger;
  /**
   * Flotilla's metrics sink, on the virtual clock, under the cluster: it keeps the points in
   * `points` and writes them to `log` as the Lambdas' EMF lines, and records each decision written
   * as an entry: the fields of the logger its line went to (a child's included), then those of its
   * line (toDecisionLine).
   */
  readonly metrics: MetricsSink;
  /**
   * What the world does in place of AWS: each line at info level or above is recorded as an entry
   * with `source: 'simulator'`. Not written to `log`: Flotilla does not write these.
   */
  readonly world: Logger;
}

export interface DecisionRecorderOptions {
  readonly clock: Clock;
  /** Every line Flotilla writes, decisions, metrics and others, as JSON. @default dropped */
  readonly log?: (line: string) => void;
  /** The cluster Flotilla's lines and metrics name (the metrics' `cluster` dimension). @default 'simulated' */
  readonly cluster?: string;
}

export function makeDecisionRecorder(options: DecisionRecorderOptions): DecisionRecorder {
  const { clock } = options;
  const cluster = options.cluster ?? 'simulated';
  const base: LogFields = { component: 'flotilla', cluster };
  const entries: Record<string, unknown>[] = [];
  const points: MetricPoint[] = [];
  const record = (level: string, message: string, fields: LogFields) => {
    const at = clock.now();
    entries.push({ atMs: at.getTime(), level, time: at.toISOString(), message, ...base, ...fields });
  };
  const now = () => clock.now();
  const { log } = options;
  const logger = makeLogger(base, { level: 'info', now, sink: log ?? (() => {}) });
  // The points as the Lambdas write them, only when someone reads the lines.
  const emf = log === undefined ? undefined : makeEmfMetrics({ cluster, fields: base, now, write: log });
  const metrics: MetricsSink = {
    cluster,
    now,
    publish: (published) => {
      points.push(...published);
      emf?.publish(published);
    },
    observe: (decision, fields) => {
      const line = toDecisionLine(decision);
      record(line.level, line.message, { ...fields, ...line.fields });
    },
  };
  const world = makeWorldLogger(record, { source: 'simulator' });
  return { entries, points, logger, metrics, world };
}

function makeWorldLogger(
  record: (level: string, message: string, fields: LogFields) => void,
  fields: LogFields,
): Logger {
  return {
    fields,
    debug: () => {},
    info: (message, extra) => record('info', message, { ...fields, ...extra }),
    warn: (message, extra) => record('warn', message, { ...fields, ...extra }),
    error: (message, extra) => record('error', message, { ...fields, ...extra }),
    child: (more) => makeWorldLogger(record, { ...fields, ...more }),
  };
}
