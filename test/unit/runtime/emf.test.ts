import { describe, expect, it } from 'vitest';
import { EMF_LIMITS, toEmfDocuments } from '../../../shared/runtime/emf.ts';
import { METRIC_SPECS, type MetricPoint } from '../../../shared/runtime/metrics.ts';
import { emfProblems, readEmf } from './emf-rules.ts';

const T = Date.parse('2026-03-01T12:00:00Z');

const valid = {
  _aws: {
    Timestamp: T,
    CloudWatchMetrics: [
      { Namespace: 'Flotilla', Dimensions: [['cluster']], Metrics: [{ Name: 'x_total', Unit: 'Count' }] },
    ],
  },
  cluster: 'prod',
  x_total: 1,
};

const directive = (over: Record<string, unknown>) => ({
  ...valid,
  _aws: { ...valid._aws, CloudWatchMetrics: [{ ...valid._aws.CloudWatchMetrics[0], ...over }] },
});

describe('the EMF rules the tests hold lines to', () => {
  it('take a valid line', () => {
    expect(emfProblems(JSON.stringify(valid))).toEqual([]);
  });

  it.each([
    ['no _aws', { cluster: 'prod', x_total: 1 }, '_aws is not an object'],
    [
      'a Timestamp in seconds as text',
      { ...valid, _aws: { ...valid._aws, Timestamp: '1700000000' } },
      'Timestamp',
    ],
    ['no directive', { ...valid, _aws: { Timestamp: T, CloudWatchMetrics: [] } }, 'CloudWatchMetrics'],
    ['an empty Namespace', directive({ Namespace: '' }), 'Namespace'],
    [
      'Dimensions not arrays of keys',
      directive({ Dimensions: ['cluster'] }),
      'Dimensions[0] is not an array',
    ],
    ['a dimension missing from the line', directive({ Dimensions: [['cluster', 'nodePool']] }), 'nodePool'],
    ['a dimension that is a number', { ...valid, cluster: 7 }, 'cluster'],
    [
      '31 keys in a dimension set',
      directive({ Dimensions: [Array.from({ length: 31 }, () => 'cluster')] }),
      'has 31 keys',
    ],
    [
      'a unit CloudWatch does not know',
      directive({ Metrics: [{ Name: 'x_total', Unit: 'Dollars' }] }),
      'unit',
    ],
    ['a metric missing from the line', { ...valid, x_total: undefined }, 'x_total'],
    ['a metric as text', { ...valid, x_total: '1' }, 'x_total'],
    ['an empty array of values', { ...valid, x_total: [] }, 'empty array'],
    ['101 values', { ...valid, x_total: Array.from({ length: 101 }, () => 1) }, '101 values'],
    [
      '101 metrics',
      {
        ...directive({
          Metrics: Array.from({ length: 101 }, (_, i) => ({ Name: `m${i}`, Unit: 'Count' })),
        }),
        ...Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`m${i}`, 1])),
      },
      '101 metrics',
    ],
    [
      'a metric declared twice',
      directive({
        Metrics: [
          { Name: 'x_total', Unit: 'Count' },
          { Name: 'x_total', Unit: 'Count' },
        ],
      }),
      'declared twice',
    ],
  ])('reject %s', (_, line, problem) => {
    expect(emfProblems(JSON.stringify(line)).join('; ')).toContain(problem);
  });

  it('reject a value that is not finite (JSON writes it as null)', () => {
    expect(emfProblems(JSON.stringify({ ...valid, x_total: Number.NaN }))).toEqual([
      'metric x_total is not on the line as a finite number',
    ]);
  });
});

const point = (over: Partial<MetricPoint> & Pick<MetricPoint, 'name'>): MetricPoint => ({
  values: [1],
  timeMs: T,
  dimensions: { cluster: 'prod' },
  ...over,
});

describe('toEmfDocuments', () => {
  it('has fewer metrics in its catalog than a document may hold', () => {
    expect(METRIC_SPECS.length).toBeLessThan(EMF_LIMITS.metrics);
  });

  it('puts points that agree on the dimension keys they name in one document, a directive per dimension sets', () => {
    const docs = toEmfDocuments([
      point({ name: 'karpenter_pods_unbound_time_seconds', values: [4] }),
      point({ name: 'karpenter_cluster_state_node_count', values: [1] }),
      point({
        name: 'karpenter_nodepools_cost_total',
        values: [0.5],
        dimensions: { cluster: 'prod', nodepool: 'a' },
      }),
      point({
        name: 'nodepools_launch_backoff_started_total',
        values: [1],
        dimensions: { cluster: 'prod', nodepool: 'a' },
      }),
      point({
        name: 'karpenter_nodepools_cost_total',
        values: [2],
        dimensions: { cluster: 'prod', nodepool: 'b' },
      }),
    ]);
    // The cluster-wide metrics name no nodepool: they ride on NodePool a's line.
    expect(docs).toHaveLength(2);
    for (const doc of docs) expect(emfProblems(JSON.stringify(doc))).toEqual([]);
    expect(docs[0]).toEqual({
      _aws: {
        Timestamp: T,
        CloudWatchMetrics: [
          {
            Namespace: 'Flotilla',
            Dimensions: [['cluster']],
            Metrics: [
              { Name: 'karpenter_pods_unbound_time_seconds', Unit: 'Seconds' },
              { Name: 'karpenter_cluster_state_node_count', Unit: 'Count' },
            ],
          },
          {
            Namespace: 'Flotilla',
            Dimensions: [['cluster', 'nodepool']],
            Metrics: [{ Name: 'karpenter_nodepools_cost_total', Unit: 'None' }],
          },
          {
            Namespace: 'Flotilla',
            Dimensions: [['cluster'], ['cluster', 'nodepool']],
            Metrics: [{ Name: 'nodepools_launch_backoff_started_total', Unit: 'Count' }],
          },
        ],
      },
      cluster: 'prod',
      nodepool: 'a',
      karpenter_pods_unbound_time_seconds: 4,
      karpenter_cluster_state_node_count: 1,
      karpenter_nodepools_cost_total: 0.5,
      nodepools_launch_backoff_started_total: 1,
    });
    expect(docs[1]).toMatchObject({ nodepool: 'b', karpenter_nodepools_cost_total: 2 });
    // As CloudWatch reads them: each metric with the dimensions its sets name, no other.
    expect(docs.flatMap(readEmf).map((v) => [v.name, v.dimensions])).toEqual([
      ['karpenter_pods_unbound_time_seconds', { cluster: 'prod' }],
      ['karpenter_cluster_state_node_count', { cluster: 'prod' }],
      ['karpenter_nodepools_cost_total', { cluster: 'prod', nodepool: 'a' }],
      ['nodepools_launch_backoff_started_total', { cluster: 'prod', nodepool: 'a' }],
      ['karpenter_nodepools_cost_total', { cluster: 'prod', nodepool: 'b' }],
    ]);
  });

  it('keeps one series of a metric per document', () => {
    // Usage by resource type: one line per resource type, each NodePool's cost on the first.
    const docs = toEmfDocuments([
      ...['cpu', 'memory', 'nodes'].map((resource_type) =>
        point({
          name: 'karpenter_nodepools_usage',
          values: [1],
          dimensions: { cluster: 'prod', nodepool: 'a', resource_type },
        }),
      ),
      point({
        name: 'karpenter_nodepools_cost_total',
        values: [0.5],
        dimensions: { cluster: 'prod', nodepool: 'a' },
      }),
    ]);
    expect(
      docs.map((d) => [
        d['resource_type'],
        d['karpenter_nodepools_usage'],
        d['karpenter_nodepools_cost_total'],
      ]),
    ).toEqual([
      ['cpu', 1, 0.5],
      ['memory', 1, undefined],
      ['nodes', 1, undefined],
    ]);
  });

  it('merges values of one series into an array and splits arrays at 100 values', () => {
    const values = Array.from({ length: 250 }, (_, i) => i / 10);
    const docs = toEmfDocuments([
      point({ name: 'karpenter_pods_startup_duration_seconds', values: values.slice(0, 120) }),
      point({ name: 'karpenter_pods_startup_duration_seconds', values: values.slice(120) }),
      point({ name: 'karpenter_pods_unbound_time_seconds', values: [3] }),
    ]);
    expect(docs.map((d) => (d['karpenter_pods_startup_duration_seconds'] as number[]).length)).toEqual([
      100, 100, 50,
    ]);
    expect(docs.flatMap((d) => d['karpenter_pods_startup_duration_seconds'] as number[])).toEqual(values);
    expect(docs.map((d) => d['karpenter_pods_unbound_time_seconds'])).toEqual([3, undefined, undefined]);
    for (const doc of docs) expect(emfProblems(JSON.stringify(doc))).toEqual([]);
  });

  it('drops values that are not finite, and points left without values', () => {
    const docs = toEmfDocuments([
      point({ name: 'karpenter_pods_unbound_time_seconds', values: [Number.NaN] }),
      point({ name: 'karpenter_pods_startup_duration_seconds', values: [1, Number.POSITIVE_INFINITY, 2] }),
    ]);
    expect(docs.flatMap(readEmf).map((v) => [v.name, v.values])).toEqual([
      ['karpenter_pods_startup_duration_seconds', [1, 2]],
    ]);
  });

  it('keeps points of different moments apart', () => {
    const docs = toEmfDocuments([
      point({ name: 'karpenter_pods_unbound_time_seconds' }),
      point({ name: 'karpenter_pods_unbound_time_seconds', timeMs: T + 60_000 }),
    ]);
    expect(docs.map((d) => d._aws.Timestamp)).toEqual([T, T + 60_000]);
  });
});
