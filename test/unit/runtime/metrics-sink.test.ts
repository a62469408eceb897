import { describe, expect, it, vi } from 'vitest';
import { EMF_LIMITS, toEmfDocuments } from '../../../shared/runtime/emf.ts';
import type { MetricPoint } from '../../../shared/runtime/metrics.ts';
import { dropMetrics, makeEmfMetrics } from '../../../shared/runtime/metrics-sink.ts';
import { emfProblems } from './emf-rules.ts';

const T = Date.parse('2026-01-02T03:04:05.000Z');
const fields = { lambda: 'provisioner', cluster: 'prod' };

const point = (
  name: MetricPoint['name'],
  values: number[],
  dimensions: MetricPoint['dimensions'] = {},
): MetricPoint => ({
  name,
  values,
  timeMs: T,
  dimensions: { cluster: 'prod', ...dimensions },
});

function capture() {
  const texts: string[] = [];
  const metrics = makeEmfMetrics({
    cluster: 'prod',
    fields,
    now: () => new Date(T),
    write: (t) => texts.push(t),
  });
  return { metrics, texts };
}

describe('makeEmfMetrics', () => {
  it('names its cluster and clock', () => {
    const { metrics } = capture();
    expect(metrics.cluster).toBe('prod');
    expect(metrics.now().getTime()).toBe(T);
  });

  it('writes each EMF document as one info line with message metrics and its fields', () => {
    const { metrics, texts } = capture();
    const points = [
      point('karpenter_pods_unbound_time_seconds', [4]),
      point('karpenter_nodeclaims_created_total', [1], {
        nodepool: 'default',
        reason: 'provisioned',
        min_values_relaxed: 'false',
      }),
    ];
    metrics.publish(points);
    const documents = toEmfDocuments(points);
    expect(documents.length).toBeGreaterThan(0);
    expect(texts.map((t) => JSON.parse(t) as unknown)).toEqual(
      documents.map((document) => ({
        level: 'info',
        time: '2026-01-02T03:04:05.000Z',
        message: 'metrics',
        ...fields,
        ...document,
      })),
    );
    // The line's keys in the order CloudWatch Logs and the saved queries have always read them.
    expect(Object.keys(JSON.parse(texts[0] ?? '{}') as object).slice(0, 6)).toEqual([
      'level',
      'time',
      'message',
      'lambda',
      'cluster',
      '_aws',
    ]);
    for (const text of texts) expect(emfProblems(text)).toEqual([]);
  });

  it('writes as many lines as CloudWatch’s limits ask for', () => {
    const { metrics, texts } = capture();
    const values = Array.from({ length: EMF_LIMITS.values + 1 }, (_, i) => i);
    metrics.publish([point('karpenter_pods_startup_duration_seconds', values)]);
    expect(texts).toHaveLength(2);
    for (const text of texts) expect(emfProblems(text)).toEqual([]);
  });
});

describe('dropMetrics', () => {
  it('names no cluster, dates by its clock and writes nothing', () => {
    const metrics = dropMetrics(() => new Date(T));
    expect(metrics.cluster).toBeUndefined();
    expect(metrics.now().getTime()).toBe(T);
    const stdout = vi.spyOn(process.stdout, 'write');
    try {
      metrics.publish([point('karpenter_pods_unbound_time_seconds', [1])]);
      expect(stdout).not.toHaveBeenCalled();
    } finally {
      stdout.mockRestore();
    }
  });
});
