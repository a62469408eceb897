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

const each = (
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

const total = (
  metric: MetricName,
  statistic: Statistic,
  dimensions: readonly MetricDimensionKey[],
  label: string,
) => ({
  ...each(metric, statistic, dimensions, label),
  combine: 'sum' as const,
});

const aws = (kind: AwsSeriesKind): AwsSeries => ({ source: 'aws', kind });

const CLUSTER = ['cluster'] as const;
const BY_POOL = ['cluster', 'nodePool'] as const;
const BY_REASON = ['cluster', 'reason'] as const;
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
        {
          title: 'Cost per NodePool ($/hour)',
          kind: 'graph',
          unit: 'USD/hour',
          width: 10,
          stacked: true,
          series: [each('nodepools_cost_total', 'Maximum', BY_POOL, 'cost')],
        },
        {
          title: 'Idle cost per NodePool ($/hour, unrequested share)',
          kind: 'graph',
          unit: 'USD/hour',
          width: 10,
          stacked: true,
          series: [each('nodepools_idle_cost', 'Maximum', BY_POOL, 'idle')],
        },
        {
          title: 'CPU usage and limit per NodePool (cores)',
          kind: 'graph',
          unit: 'cores',
          series: [
            each('nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resourceType: 'cpu' }),
            each('nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resourceType: 'cpu' }),
          ],
        },
        {
          title: 'Memory usage and limit per NodePool (bytes)',
          kind: 'graph',
          unit: 'bytes',
          series: [
            each('nodepools_usage', 'Maximum', BY_RESOURCE, 'usage', { resourceType: 'memory' }),
            each('nodepools_limit', 'Maximum', BY_RESOURCE, 'limit', { resourceType: 'memory' }),
          ],
        },
        {
          title: 'Utilization per NodePool (requests ÷ allocatable, %)',
          kind: 'graph',
          unit: '%',
          series: [each('nodepools_utilization_percent', 'Average', BY_RESOURCE, 'utilization')],
        },
        {
          title: 'Nodes per NodePool',
          kind: 'graph',
          unit: 'nodes',
          stacked: true,
          series: [each('cluster_state_node_count', 'Maximum', BY_POOL, 'nodes')],
        },
      ],
    },
    {
      title: 'Pending pods and pod startup',
      widgets: [
        {
          title: 'Oldest pending pod (s)',
          kind: 'graph',
          unit: 'seconds',
          series: [each('pods_unbound_time_seconds', 'Maximum', CLUSTER, 'oldest pending')],
        },
        {
          title: 'Pending and unschedulable pods',
          kind: 'graph',
          unit: 'pods',
          series: [
            each('scheduler_queue_depth', 'Maximum', CLUSTER, 'pending (queue depth)'),
            each('scheduler_unschedulable_pods_count', 'Maximum', CLUSTER, 'unschedulable'),
          ],
        },
        {
          title: 'Pod startup, created → Running (s)',
          kind: 'graph',
          unit: 'seconds',
          series: [
            each('pods_startup_duration_seconds', 'p50', CLUSTER, 'p50'),
            each('pods_startup_duration_seconds', 'p90', CLUSTER, 'p90'),
          ],
        },
        {
          title: 'Scheduling simulation duration (s)',
          kind: 'graph',
          unit: 'seconds',
          series: [
            each('scheduler_scheduling_duration_seconds', 'p50', CLUSTER, 'p50'),
            each('scheduler_scheduling_duration_seconds', 'Maximum', CLUSTER, 'max'),
          ],
        },
      ],
    },
    {
      title: 'Launches and terminations',
      widgets: [
        {
          title: 'NodeClaims created and terminated',
          kind: 'graph',
          width: 8,
          unit: 'NodeClaims',
          series: [
            each('nodeclaims_created_total', 'Sum', CLUSTER, 'created'),
            each('nodeclaims_terminated_total', 'Sum', CLUSTER, 'terminated'),
          ],
        },
        {
          title: 'NodeClaims created by reason',
          kind: 'graph',
          width: 8,
          unit: 'NodeClaims',
          stacked: true,
          series: [each('nodeclaims_created_total', 'Sum', BY_REASON, 'created')],
        },
        {
          title: 'Nodes created and terminated',
          kind: 'graph',
          width: 8,
          unit: 'nodes',
          series: [
            each('nodes_created_total', 'Sum', CLUSTER, 'created'),
            each('nodes_terminated_total', 'Sum', CLUSTER, 'terminated'),
          ],
        },
        {
          title: 'Launch failures by reason',
          kind: 'graph',
          width: 8,
          unit: 'launches',
          stacked: true,
          series: [each('cloudprovider_instance_launch_failures_total', 'Sum', BY_REASON, 'failed')],
        },
        {
          title: 'Runaway guard pauses per NodePool',
          kind: 'graph',
          width: 8,
          unit: 'pauses',
          series: [each('nodepools_launch_backoff_started_total', 'Sum', BY_POOL, 'paused')],
        },
        {
          title: 'Pods drained by reason',
          kind: 'graph',
          width: 8,
          unit: 'pods',
          stacked: true,
          series: [each('pods_drained_total', 'Sum', BY_REASON, 'drained')],
        },
      ],
    },
    {
      title: 'Disruption',
      widgets: [
        {
          title: 'Disruption decisions by reason',
          kind: 'graph',
          width: 8,
          unit: 'decisions',
          stacked: true,
          series: [each('voluntary_disruption_decisions_total', 'Sum', BY_REASON, 'decisions')],
        },
        {
          title: 'NodeClaims disrupted by reason',
          kind: 'graph',
          width: 8,
          unit: 'NodeClaims',
          stacked: true,
          series: [each('nodeclaims_disrupted_total', 'Sum', BY_REASON, 'disrupted')],
        },
        {
          title: 'Eligible nodes by reason',
          kind: 'graph',
          width: 8,
          unit: 'nodes',
          series: [each('voluntary_disruption_eligible_nodes', 'Maximum', BY_REASON, 'eligible')],
        },
        {
          title: 'Nodes held back, by why',
          kind: 'graph',
          width: 12,
          unit: 'nodes',
          stacked: true,
          series: [each('voluntary_disruption_blocked_nodes', 'Maximum', BY_REASON, 'held')],
        },
        {
          title: 'Allowed disruptions per NodePool',
          kind: 'graph',
          width: 12,
          unit: 'nodes',
          series: [each('nodepools_allowed_disruptions', 'Minimum', BY_POOL, 'allowed')],
        },
      ],
    },
    {
      title: 'Interruptions and errors',
      widgets: [
        {
          title: 'Interruption messages by kind',
          kind: 'graph',
          unit: 'messages',
          width: 12,
          stacked: true,
          series: [each('interruption_received_messages_total', 'Sum', BY_REASON, 'messages')],
        },
        {
          title: 'Cloud provider errors by error',
          kind: 'graph',
          unit: 'errors',
          width: 12,
          stacked: true,
          series: [each('cloudprovider_errors_total', 'Sum', BY_REASON, 'errors')],
        },
      ],
    },
    {
      title: 'Queues and Lambdas',
      widgets: [
        {
          title: 'Work queue depth',
          kind: 'graph',
          unit: 'messages',
          width: 5,
          series: [aws('workQueueDepth')],
        },
        {
          title: 'Dead-letter queue depth',
          kind: 'graph',
          unit: 'messages',
          width: 5,
          series: [aws('deadLetterDepth')],
        },
        {
          title: 'Lambda duration p90 (ms)',
          kind: 'graph',
          unit: 'ms',
          width: 5,
          series: [aws('lambdaDuration')],
        },
        {
          title: 'Lambda errors',
          kind: 'graph',
          unit: 'errors',
          width: 5,
          series: [aws('lambdaErrors')],
        },
        {
          title: 'Lambda throttles',
          kind: 'graph',
          unit: 'throttles',
          width: 4,
          series: [aws('lambdaThrottles')],
        },
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
