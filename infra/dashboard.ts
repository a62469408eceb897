import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  type AwsSeriesKind,
  DASHBOARD_COLUMNS,
  type DashboardSeries,
  type DashboardSpec,
  type DashboardWidget,
} from '../shared/runtime/dashboard.ts';
import { metricsClusterOf } from '../shared/runtime/metrics.ts';
import { dashboardFor } from '../shared/runtime/shadow-dashboard.ts';
import { assertNever } from './construct-kit.ts';
import { seriesMetric } from './flotilla-metrics.ts';
import { NAME_PREFIX, type StackMode } from './stack-mode.ts';

export interface ClusterDashboardProps {
  readonly clusterName: string;
  /** @default 'live' */
  readonly mode?: StackMode;
  /** @default DASHBOARD (shared/runtime/dashboard.ts) */
  readonly spec?: DashboardSpec;
  /** The work queues, by name: their depth. */
  readonly workQueues: Readonly<Record<string, sqs.IQueue>>;
  /** Every dead-letter and on-failure queue, by name: their depth. */
  readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  /** The Lambdas, by name: their durations, errors and throttles. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
}

const WIDGET_HEIGHT = 6;
const NUMBER_HEIGHT = 6;

/** The name of a cluster's dashboard: `Flotilla-<cluster>`, `FlotillaShadow-<cluster>` in a shadow stack. */
export function dashboardNameFor(clusterName: string, mode: StackMode = 'live'): string {
  return `${NAME_PREFIX[mode].pascal}-${clusterName}`;
}

/**
 * The CloudWatch dashboard `dashboardNameFor(cluster, mode)` built from the dashboard spec: a heading per row,
 * then its widgets, Flotilla's metrics filtered to this cluster and the AWS metrics of the stack's
 * queues and Lambdas. Built into `scope` as `Dashboard` (see construct-kit.ts).
 */
export function addDashboard(scope: Construct, props: ClusterDashboardProps): cloudwatch.Dashboard {
  const spec = props.spec ?? dashboardFor(props.mode === 'shadow');
  const period = Duration.seconds(spec.periodSeconds);
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: dashboardNameFor(props.clusterName, props.mode),
    defaultInterval: Duration.hours(12),
  });
  const metricsOf = (series: DashboardSeries, every: Duration): cloudwatch.IMetric[] =>
    series.source === 'flotilla'
      ? [seriesMetric(metricsClusterOf(props.clusterName, props.mode === 'shadow'), series, every)]
      : awsMetrics(props, series.kind, every);
  const widgetOf = (widget: DashboardWidget): cloudwatch.IWidget => {
    // A daily widget: one value per day, over its own range of days.
    const every = widget.days === undefined ? period : Duration.days(1);
    const metrics = widget.series.flatMap((series) => metricsOf(series, every));
    const common = {
      title: widget.title,
      width: widget.width ?? 6,
      ...(widget.days === undefined ? {} : { start: `-P${widget.days}D`, period: every }),
    };
    return widget.kind === 'number'
      ? new cloudwatch.SingleValueWidget({
          ...common,
          height: NUMBER_HEIGHT,
          metrics,
          setPeriodToTimeRange: false,
        })
      : new cloudwatch.GraphWidget({
          ...common,
          height: WIDGET_HEIGHT,
          left: metrics,
          stacked: widget.stacked ?? false,
          leftYAxis: { label: widget.unit, showUnits: false, ...(widget.signed === true ? {} : { min: 0 }) },
        });
  };
  for (const row of spec.rows) {
    dashboard.addWidgets(
      new cloudwatch.TextWidget({ markdown: `## ${row.title}`, width: DASHBOARD_COLUMNS, height: 1 }),
    );
    dashboard.addWidgets(...row.widgets.map(widgetOf));
  }
  return dashboard;
}

function awsMetrics(
  props: ClusterDashboardProps,
  kind: AwsSeriesKind,
  period: Duration,
): cloudwatch.IMetric[] {
  const queues = (of: Readonly<Record<string, sqs.IQueue>>) =>
    Object.entries(of).map(([label, queue]) =>
      queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum', label }),
    );
  const functions = (metric: (fn: lambda.IFunction, label: string) => cloudwatch.Metric) =>
    Object.entries(props.functions).map(([label, fn]) => metric(fn, label));
  switch (kind) {
    case 'workQueueDepth':
      return queues(props.workQueues);
    case 'deadLetterDepth':
      return queues(props.deadLetterQueues);
    case 'lambdaDuration':
      return functions((fn, label) => fn.metricDuration({ period, statistic: 'p90', label }));
    case 'lambdaErrors':
      return functions((fn, label) => fn.metricErrors({ period, statistic: 'Sum', label }));
    case 'lambdaThrottles':
      return functions((fn, label) => fn.metricThrottles({ period, statistic: 'Sum', label }));
    default:
      return assertNever(kind);
  }
}
