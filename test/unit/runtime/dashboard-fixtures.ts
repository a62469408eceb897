import type {
  DashboardSpec,
  DashboardWidget,
  FlotillaSeries,
  Statistic,
} from '../../../shared/runtime/dashboard.ts';
import type { MetricDimensionKey, MetricName } from '../../../shared/runtime/metrics.ts';

/** A Flotilla series of the dashboard spec, labelled `x` unless `more` says otherwise. */
export const flotillaSeries = (
  metric: MetricName,
  statistic: Statistic,
  dimensions: readonly MetricDimensionKey[],
  more: Partial<Pick<FlotillaSeries, 'filter' | 'combine' | 'label'>> = {},
): FlotillaSeries => ({ source: 'flotilla', metric, statistic, dimensions, label: 'x', ...more });

/** A spec of one full-width graph `w` in one row, showing `series`. */
export const oneWidgetSpec = (
  series: DashboardWidget['series'],
  widget: Partial<DashboardWidget> = {},
): DashboardSpec => ({
  periodSeconds: 300,
  rows: [{ title: 'row', widgets: [{ title: 'w', kind: 'graph', unit: 'x', width: 24, series, ...widget }] }],
});

/** CPU usage per NodePool. */
export const CPU_USAGE = flotillaSeries(
  'karpenter_nodepools_usage',
  'Maximum',
  ['cluster', 'nodepool', 'resource_type'],
  {
    filter: { resource_type: 'cpu' },
    label: 'usage',
  },
);
