import type { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { type FlotillaSeries, freeDimensions, type Statistic } from '../shared/runtime/dashboard.ts';
import { METRIC_NAMESPACE, type MetricName } from '../shared/runtime/metrics.ts';

// Flotilla's own metrics (shared/runtime/metrics.ts) as CloudWatch metrics of one cluster, for the
// dashboard and the alarms.

/** A catalog metric over the `[cluster]` roll-up of `clusterName`. */
export function clusterMetric(
  clusterName: string,
  metric: MetricName,
  statistic: Statistic,
  period: Duration,
  label?: string,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRIC_NAMESPACE,
    metricName: metric,
    dimensionsMap: { cluster: clusterName },
    statistic,
    period,
    ...(label === undefined ? {} : { label }),
  });
}

/**
 * A series of the dashboard spec for `clusterName`: one metric when its filter fixes every key but
 * `cluster`, otherwise a SEARCH over exactly its dimension set (one line per value of the free
 * keys, labelled with them), or the SUM of that search.
 */
export function seriesMetric(
  clusterName: string,
  series: FlotillaSeries,
  period: Duration,
): cloudwatch.IMetric {
  const free = freeDimensions(series);
  const fixed: Record<string, string> = { cluster: clusterName, ...series.filter };
  if (free.length === 0) {
    return new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: series.metric,
      dimensionsMap: fixed,
      statistic: series.statistic,
      period,
      label: series.label,
    });
  }
  const terms = Object.entries(fixed).map(([key, value]) => `${key}="${value}"`);
  const schema = [METRIC_NAMESPACE, ...series.dimensions].join(',');
  const search = `SEARCH('{${schema}} MetricName="${series.metric}" ${terms.join(' ')}', '${series.statistic}', ${period.toSeconds()})`;
  const combined = series.combine === 'sum';
  return new cloudwatch.MathExpression({
    expression: combined ? `SUM(${search})` : search,
    usingMetrics: {},
    period,
    label: combined ? series.label : [series.label, ...free.map((key) => `\${PROP('Dim.${key}')}`)].join(' '),
  });
}
