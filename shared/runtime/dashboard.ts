import { METRICS, type MetricDimensionKey, type MetricName } from './metrics.ts';

// The operator's dashboard of one cluster, as data: rows of widgets, each naming the catalog
// metrics it shows (metrics.ts), the statistic and the catalog dimension set. The stack renders
// it as a CloudWatch dashboard (infra/dashboard.ts) and the simulator as a picture
// (shared/simulator/dashboard-svg.ts), so both show the same thing.

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

const aws = (kind: AwsSeriesKind): AwsSeries => ({ source: 'aws', kind });

/** A graph `width` columns wide (stacked when `stacked`). */
export const graph = (
  title: string,
  unit: string,
  width: number,
  series: readonly DashboardSeries[],
  stacked = false,
): DashboardWidget => ({ title, kind: 'graph', unit, width, series, ...(stacked ? { stacked } : {}) });

const STACKED = true;
export const CLUSTER = ['cluster'] as const;
export const BY_POOL = ['cluster', 'nodePool'] as const;
export const BY_REASON = ['cluster', 'reason'] as const;
const BY_RESOURCE = ['cluster', 'nodePool', 'resourceType'] as const;

/** Flotilla's dashboard: every catalog metric appears on it at least once. */
export const DASHBOARD: DashboardSpec = {
  periodSeconds: 300,
  rows: [
    {
      title: 'Capacity and cost per NodePool',
      widgets: [
        {
          title: 'Cost now ($/hour)',
          kind: 'number',
          unit: 'USD/hour',
          width: 4,
          series: [
            total('nodepools_cost_total', 'Maximum', BY_POOL, 'cost'),
            total('nodepools_idle_cost', 'Maximum', BY_POOL, 'idle'),
          ],
        },
        graph(
          'Cost per NodePool ($/hour)',
          'USD/hour',
          10,
          [each('nodepools_cost_total', 'Maximum', BY_POOL, 'cost')],
          STACKED,
        ),
        graph(
          'Idle cost per NodePool ($/hour, unrequested share)',
          'USD/hour',
          10,
          [each('nodepools_idle_cost', 'Maximum', BY_POOL, 'idle')],
          STACKED,
        ),
        graph('CPU usage and limit per NodePool (cores)', 'cores', 6, [
          each('nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resourceType: 'cpu' }),
          each('nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resourceType: 'cpu' }),
        ]),
        graph('Memory usage and limit per NodePool (bytes)', 'bytes', 6, [
          each('nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resourceType: 'memory' }),
          each('nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resourceType: 'memory' }),
        ]),
        graph('Utilization per NodePool (requests ÷ allocatable, %)', '%', 6, [
          each('nodepools_utilization_percent', 'Average', BY_RESOURCE, 'utilization'),
        ]),
        graph(
          'Nodes per NodePool',
          'nodes',
          6,
          [each('cluster_state_node_count', 'Maximum', BY_POOL, 'nodes')],
          STACKED,
        ),
      ],
    },
    {
      title: 'Pending pods and pod startup',
      widgets: [
        graph('Oldest pending pod (s)', 'seconds', 6, [
          each('pods_unbound_time_seconds', 'Maximum', CLUSTER, 'oldest pending'),
        ]),
        graph('Pending and unschedulable pods', 'pods', 6, [
          each('scheduler_queue_depth', 'Maximum', CLUSTER, 'pending (queue depth)'),
          each('scheduler_unschedulable_pods_count', 'Maximum', CLUSTER, 'unschedulable'),
        ]),
        graph('Pod startup, created → Running (s)', 'seconds', 6, [
          each('pods_startup_duration_seconds', 'p50', CLUSTER, 'p50'),
          each('pods_startup_duration_seconds', 'p90', CLUSTER, 'p90'),
        ]),
        graph('Scheduling simulation duration (s)', 'seconds', 6, [
          each('scheduler_scheduling_duration_seconds', 'p50', CLUSTER, 'p50'),
          each('scheduler_scheduling_duration_seconds', 'Maximum', CLUSTER, 'max'),
        ]),
      ],
    },
    {
      title: 'Launches and terminations',
      widgets: [
        graph('NodeClaims created and terminated', 'NodeClaims', 8, [
          each('nodeclaims_created_total', 'Sum', CLUSTER, 'created'),
          each('nodeclaims_terminated_total', 'Sum', CLUSTER, 'terminated'),
        ]),
        graph(
          'NodeClaims created by reason',
          'NodeClaims',
          8,
          [each('nodeclaims_created_total', 'Sum', BY_REASON, 'created')],
          STACKED,
        ),
        graph('Nodes created and terminated', 'nodes', 8, [
          each('nodes_created_total', 'Sum', CLUSTER, 'created'),
          each('nodes_terminated_total', 'Sum', CLUSTER, 'terminated'),
        ]),
        graph(
          'Launch failures by reason',
          'launches',
          8,
          [each('cloudprovider_instance_launch_failures_total', 'Sum', BY_REASON, 'failed')],
          STACKED,
        ),
        graph('Runaway guard pauses per NodePool', 'pauses', 8, [
          each('nodepools_launch_backoff_started_total', 'Sum', BY_POOL, 'paused'),
        ]),
        graph(
          'Pods drained by reason',
          'pods',
          8,
          [each('pods_drained_total', 'Sum', BY_REASON, 'drained')],
          STACKED,
        ),
      ],
    },
    {
      title: 'Disruption',
      widgets: [
        graph(
          'Disruption decisions by reason',
          'decisions',
          8,
          [each('voluntary_disruption_decisions_total', 'Sum', BY_REASON, 'decisions')],
          STACKED,
        ),
        graph(
          'NodeClaims disrupted by reason',
          'NodeClaims',
          8,
          [each('nodeclaims_disrupted_total', 'Sum', BY_REASON, 'disrupted')],
          STACKED,
        ),
        graph('Eligible nodes by reason', 'nodes', 8, [
          each('voluntary_disruption_eligible_nodes', 'Maximum', BY_REASON, 'eligible'),
        ]),
        graph(
          'Nodes held back, by why',
          'nodes',
          12,
          [each('voluntary_disruption_blocked_nodes', 'Maximum', BY_REASON, 'held')],
          STACKED,
        ),
        graph('Allowed disruptions per NodePool', 'nodes', 12, [
          each('nodepools_allowed_disruptions', 'Minimum', BY_POOL, 'allowed'),
        ]),
        graph('What the decided commands save ($/hour)', 'USD/hour', 24, [
          each('voluntary_disruption_savings', 'Maximum', BY_REASON, 'saves'),
        ]),
      ],
    },
    {
      title: 'Interruptions and errors',
      widgets: [
        graph(
          'Interruption messages by kind',
          'messages',
          12,
          [each('interruption_received_messages_total', 'Sum', BY_REASON, 'messages')],
          STACKED,
        ),
        graph(
          'Cloud provider errors by error',
          'errors',
          12,
          [each('cloudprovider_errors_total', 'Sum', BY_REASON, 'errors')],
          STACKED,
        ),
      ],
    },
    {
      title: 'Queues and Lambdas',
      widgets: [
        graph('Work queue depth', 'messages', 5, [aws('workQueueDepth')]),
        graph('Dead-letter queue depth', 'messages', 5, [aws('deadLetterDepth')]),
        graph('Lambda duration p90 (ms)', 'ms', 5, [aws('lambdaDuration')]),
        graph('Lambda errors', 'errors', 5, [aws('lambdaErrors')]),
        graph('Lambda throttles', 'throttles', 4, [aws('lambdaThrottles')]),
      ],
    },
  ],
};

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
