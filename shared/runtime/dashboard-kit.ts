import { METRICS, type MetricDimensionKey, type MetricName } from './metrics.ts';

// The vocabulary of the operator's dashboard (dashboard.ts has the dashboard itself): series,
// widgets, rows, the helpers that make them, and the checks that hold a dashboard to the metric
// catalog (metrics.ts).

/** A CloudWatch statistic: Sum for counters, Maximum/Minimum/Average for gauges, percentiles for distributions. */
export type Statistic = 'Sum' | 'Maximum' | 'Minimum' | 'Average' | 'SampleCount' | 'p50' | 'p90' | 'p99';

/** The statistics that mean something for each metric kind. */
export const STATISTICS_OF_KIND = {
  counter: ['Sum', 'SampleCount'],
  gauge: ['Maximum', 'Minimum', 'Average'],
  distribution: ['Maximum', 'Average', 'SampleCount', 'p50', 'p90', 'p99'],
} as const satisfies Record<string, readonly Statistic[]>;

/**
 * One line (or, for a breakdown, one line per value) of a Flotilla metric.
 *
 * `dimensions` is one of the metric's catalog dimension sets; the `cluster` dimension is always
 * the dashboard's cluster. Keys fixed in `filter` take that value; when every other key is fixed
 * the series is one metric, otherwise it is a breakdown (a CloudWatch SEARCH over the set): one
 * line per value of the keys left free, or their sum when `combine` is `sum`.
 */
export interface FlotillaSeries {
  readonly source: 'flotilla';
  readonly metric: MetricName;
  readonly statistic: Statistic;
  readonly dimensions: readonly MetricDimensionKey[];
  readonly filter?: Readonly<Partial<Record<MetricDimensionKey, string>>>;
  /** @default 'each' */
  readonly combine?: 'each' | 'sum';
  /** Legend label; a breakdown's lines add the values of their free keys. */
  readonly label: string;
}

/**
 * AWS metrics of the stack's own resources, which the stack fills in: the work queues' and the
 * dead-letter queues' visible messages (Maximum), and each Lambda's duration (p90), errors and
 * throttles (Sum).
 */
export type AwsSeriesKind =
  | 'workQueueDepth'
  | 'deadLetterDepth'
  | 'lambdaDuration'
  | 'lambdaErrors'
  | 'lambdaThrottles';

export interface AwsSeries {
  readonly source: 'aws';
  readonly kind: AwsSeriesKind;
}

export type DashboardSeries = FlotillaSeries | AwsSeries;

export interface DashboardWidget {
  readonly title: string;
  /** `graph`: lines over time; `number`: the latest value of each series. */
  readonly kind: 'graph' | 'number';
  readonly series: readonly DashboardSeries[];
  /** What the left axis measures. */
  readonly unit: string;
  /** Width on CloudWatch's 24-column grid. @default 6 */
  readonly width?: number;
  /** Lines stacked on one another. @default false */
  readonly stacked?: boolean;
  /**
   * One value per UTC day over the last `days` days (the widget's own period and time range), for
   * figures written once a day. @default the dashboard's period and time range
   */
  readonly days?: number;
  /** Values may be negative (a saving that costs): the left axis has no floor at 0. @default false */
  readonly signed?: boolean;
}

export interface DashboardRow {
  readonly title: string;
  readonly widgets: readonly DashboardWidget[];
}

export interface DashboardSpec {
  /** The period of every Flotilla statistic, in seconds (a multiple of 60: EMF is standard resolution). */
  readonly periodSeconds: number;
  readonly rows: readonly DashboardRow[];
}

/** The dashboard's grid width (CloudWatch's). */
export const DASHBOARD_COLUMNS = 24;

export const each = (
  metric: MetricName,
  statistic: Statistic,
  dimensions: readonly MetricDimensionKey[],
  label: string,
  filter?: Readonly<Partial<Record<MetricDimensionKey, string>>>,
): FlotillaSeries => ({
  source: 'flotilla',
  metric,
  statistic,
  dimensions,
  label,
  ...(filter === undefined ? {} : { filter }),
});

export const total = (
  metric: MetricName,
  statistic: Statistic,
  dimensions: readonly MetricDimensionKey[],
  label: string,
) => ({
  ...each(metric, statistic, dimensions, label),
  combine: 'sum' as const,
});

/** An AWS metric of the stack's own resources. */
export const aws = (kind: AwsSeriesKind): AwsSeries => ({ source: 'aws', kind });

/** A graph `width` columns wide (stacked when `stacked`). */
export const graph = (
  title: string,
  unit: string,
  width: number,
  series: readonly DashboardSeries[],
  stacked = false,
): DashboardWidget => ({ title, kind: 'graph', unit, width, series, ...(stacked ? { stacked } : {}) });

/** The dimension keys of `series` left free: a breakdown has one line per value of them. */
export function freeDimensions(series: FlotillaSeries): MetricDimensionKey[] {
  return series.dimensions.filter((key) => key !== 'cluster' && series.filter?.[key] === undefined);
}

/**
 * What is wrong with `spec` against the metric catalog: a dimension set the metric is not emitted
 * under, a filter on a key outside it, a statistic that does not fit the metric's kind, a period
 * CloudWatch cannot keep, a row wider than the grid. Empty when it is sound.
 */
export function dashboardProblems(spec: DashboardSpec): string[] {
  const problems: string[] = [];
  if (spec.periodSeconds < 60 || spec.periodSeconds % 60 !== 0) {
    problems.push(`periodSeconds ${spec.periodSeconds} is not a whole number of minutes`);
  }
  for (const row of spec.rows) {
    const width = row.widgets.reduce((sum, widget) => sum + (widget.width ?? 6), 0);
    if (width % DASHBOARD_COLUMNS !== 0) {
      problems.push(
        `row "${row.title}" is ${width} columns wide; rows fill whole lines of ${DASHBOARD_COLUMNS}`,
      );
    }
    for (const widget of row.widgets) {
      if (
        widget.days !== undefined &&
        !(Number.isInteger(widget.days) && widget.days >= 1 && widget.days <= 455)
      ) {
        problems.push(
          `widget "${widget.title}": days ${widget.days} is not 1 to 455 (CloudWatch keeps daily values 455 days)`,
        );
      }
      for (const series of widget.series) {
        if (series.source === 'aws') continue;
        const where = `widget "${widget.title}", ${series.metric}`;
        const spec = METRICS[series.metric];
        const set = [...series.dimensions].sort().join(',');
        if (!spec.dimensionSets.some((s) => [...s].sort().join(',') === set)) {
          problems.push(`${where}: [${series.dimensions.join(', ')}] is not one of its dimension sets`);
        }
        if (!series.dimensions.includes('cluster')) problems.push(`${where}: no cluster dimension`);
        for (const key of Object.keys(series.filter ?? {})) {
          if (!series.dimensions.includes(key as MetricDimensionKey) || key === 'cluster') {
            problems.push(`${where}: filter on ${key}, which is not a free key of its dimension set`);
          }
        }
        const allowed: readonly Statistic[] = STATISTICS_OF_KIND[spec.kind];
        if (!allowed.includes(series.statistic)) {
          problems.push(`${where}: ${series.statistic} does not fit a ${spec.kind}`);
        }
        if (series.combine === 'sum' && freeDimensions(series).length === 0) {
          problems.push(`${where}: a sum needs a free dimension to sum over`);
        }
      }
    }
  }
  return problems;
}
