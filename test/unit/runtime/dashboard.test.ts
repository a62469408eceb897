import { describe, expect, it } from 'vitest';
import {
  DASHBOARD,
  type DashboardSpec,
  dashboardProblems,
  freeDimensions,
} from '../../../shared/runtime/dashboard.ts';
import { dashboardFor } from '../../../shared/runtime/shadow-dashboard.ts';
import { CPU_USAGE, flotillaSeries, oneWidgetSpec } from './dashboard-fixtures.ts';

describe('the dashboard spec', () => {
  it('agrees with the metric catalog and fills whole lines of the grid', () => {
    expect(dashboardProblems(DASHBOARD)).toEqual([]);
    expect(dashboardProblems(dashboardFor(true))).toEqual([]);
  });

  it.each<[string, DashboardSpec, string]>([
    [
      'a dimension set the metric is not emitted under',
      oneWidgetSpec([
        flotillaSeries('karpenter_pods_unbound_time_seconds', 'Maximum', ['cluster', 'nodepool']),
      ]),
      'widget "w", karpenter_pods_unbound_time_seconds: [cluster, nodepool] is not one of its dimension sets',
    ],
    [
      'a counter read as a gauge',
      oneWidgetSpec([flotillaSeries('karpenter_nodes_created_total', 'Maximum', ['cluster'])]),
      'widget "w", karpenter_nodes_created_total: Maximum does not fit a counter',
    ],
    [
      'a filter on a key outside the set',
      oneWidgetSpec([
        flotillaSeries('karpenter_nodes_created_total', 'Sum', ['cluster', 'nodepool'], {
          filter: { zone: 'a' },
        }),
      ]),
      'widget "w", karpenter_nodes_created_total: filter on zone, which is not a free key of its dimension set',
    ],
    [
      'a sum with nothing to sum over',
      oneWidgetSpec([
        flotillaSeries('karpenter_nodes_created_total', 'Sum', ['cluster'], { combine: 'sum' }),
      ]),
      'widget "w", karpenter_nodes_created_total: a sum needs a free dimension to sum over',
    ],
    [
      'a period CloudWatch does not keep for standard-resolution metrics',
      { ...oneWidgetSpec([]), periodSeconds: 90 },
      'periodSeconds 90 is not a whole number of minutes',
    ],
    [
      'a daily widget over more days than CloudWatch keeps daily values',
      oneWidgetSpec([], { width: 24, days: 500 }),
      'widget "w": days 500 is not 1 to 455 (CloudWatch keeps daily values 455 days)',
    ],
    [
      'a row that does not fill its line',
      oneWidgetSpec([], { width: 6 }),
      'row "row" is 6 columns wide; rows fill whole lines of 24',
    ],
  ])('finds %s', (_what, spec, problem) => {
    expect(dashboardProblems(spec)).toEqual([problem]);
  });

  it('breaks a series down by the keys its filter leaves free', () => {
    expect(freeDimensions(CPU_USAGE)).toEqual(['nodepool']);
  });
});
