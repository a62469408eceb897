import { toEmfDocuments } from './emf.ts';
import { type LogFields, toLogLine } from './logger.ts';
import type { MetricPoint } from './metrics.ts';

// The metrics sinks the runtime builds, beside the logger (as Powertools' Metrics beside its
// Logger): a Lambda's, which writes CloudWatch Embedded Metric Format lines, and one that drops
// everything for scripts and tests that measure nothing. The use cases' decision writer publishes
// to them (shared/usecases/decisions/sink.ts: a MetricsSink is a publisher that may also observe).

/** Where metric points go, and the moment and cluster they are made for. */
export interface MetricsPublisher {
  /** The `cluster` dimension every point carries; undefined: decisions yield no points (scripts, tests). */
  readonly cluster: string | undefined;
  /** The moment decisions written now are dated. */
  now(): Date;
  /** The points of decisions written together (one moment); never called with none. */
  publish(points: readonly MetricPoint[]): void;
}

export interface EmfMetricsOptions {
  /** The cluster's name: the `cluster` dimension of every point. */
  readonly cluster: string;
  /** Added to every line, as the logger adds its fields (the Lambda's `lambda` and `cluster`). */
  readonly fields: LogFields;
  /** Dates the points, and the `time` of the lines. @default the system clock */
  readonly now?: () => Date;
  /** Where lines go. @default standard output (CloudWatch Logs in Lambda) */
  readonly write?: (line: string) => void;
}

/**
 * A sink that encodes the points it is given as Embedded Metric Format documents (toEmfDocuments)
 * and writes each as one JSON line: `level` info, `time`, message `metrics`, then `fields`, then the
 * document. Whatever the log level: no level may drop metrics. CloudWatch Logs turns the lines into
 * metrics; the saved queries read them as the logger's lines.
 */
export function makeEmfMetrics(options: EmfMetricsOptions): MetricsPublisher {
  const now = options.now ?? (() => new Date());
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  return {
    cluster: options.cluster,
    now,
    publish: (points) => {
      for (const document of toEmfDocuments(points)) {
        write(toLogLine('info', now(), 'metrics', { ...options.fields, ...document }));
      }
    },
  };
}

/** A sink for what measures nothing (scripts, tests): no cluster, so decisions yield no points. */
export function dropMetrics(now: () => Date = () => new Date()): MetricsPublisher {
  return { cluster: undefined, now, publish: () => {} };
}
