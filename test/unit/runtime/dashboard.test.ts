import { describe, expect, it } from 'vitest';
import {
  DASHBOARD,
  type DashboardSpec,
  dashboardProblems,
  freeDimensions,
} from '../../../shared/runtime/dashboard.ts';

const widget = (series: DashboardSpec['rows'][number]['widgets'][number]['series']): DashboardSpec => ({
  periodSeconds: 300,
  rows: [{ title: 'row', widgets: [{ title: 'w', kind: 'graph', unit: 'x', width: 24, series }] }],
});

describe('the dashboard spec', () => {
  it('agrees with the metric catalog and fills whole lines of the grid', () => {
    expect(dashboardProblems(DASHBOARD)).toEqual([]);
  });

  it.each([
    [
      'a dimension set the metric is not emitted under',
      widget([
        {
          source: 'flotilla',
          metric: 'pods_unbound_time_seconds',
          statistic: 'Maximum',
          dimensions: ['cluster', 'nodePool'],
          label: 'x',
        },
      ]),
      'widget "w", pods_unbound_time_seconds: [cluster, nodePool] is not one of its dimension sets',
    ],
    [
      'a sum of a counter read as a gauge',
      widget([
        {
          source: 'flotilla',
          metric: 'nodes_created_total',
          statistic: 'Maximum',
          dimensions: ['cluster'],
          label: 'x',
        },
      ]),
      'widget "w", nodes_created_total: Maximum does not fit a counter',
    ],
    [
      'a filter on a key outside the set',
      widget([
        {
          source: 'flotilla',
          metric: 'nodes_created_total',
          statistic: 'Sum',
          dimensions: ['cluster', 'nodePool'],
          filter: { zone: 'a' },
          label: 'x',
        },
      ]),
      'widget "w", nodes_created_total: filter on zone, which is not a free key of its dimension set',
    ],
    [
      'a sum with nothing to sum over',
      widget([
        {
          source: 'flotilla',
          metric: 'nodes_created_total',
          statistic: 'Sum',
          dimensions: ['cluster'],
          combine: 'sum',
          label: 'x',
        },
      ]),
      'widget "w", nodes_created_total: a sum needs a free dimension to sum over',
    ],
    [
      'a period CloudWatch does not keep for standard-resolution metrics',
      { ...widget([]), periodSeconds: 90 },
      'periodSeconds 90 is not a whole number of minutes',
    ],
    [
      'a row that does not fill its line',
      {
        periodSeconds: 60,
        rows: [{ title: 'r', widgets: [{ title: 'w', kind: 'graph', unit: 'x', series: [] }] }],
      },
      'row "r" is 6 columns wide; rows fill whole lines of 24',
    ],
  ] as const)('finds %s', (_what, spec: DashboardSpec, problem) => {
    expect(dashboardProblems(spec)).toEqual([problem]);
  });

  it('breaks a series down by the keys its filter leaves free', () => {
    expect(
      freeDimensions({
        source: 'flotilla',
        metric: 'nodepools_usage',
        statistic: 'Maximum',
        dimensions: ['cluster', 'nodePool', 'resourceType'],
        filter: { resourceType: 'cpu' },
        label: 'usage',
      }),
    ).toEqual(['nodePool']);
  });
});
