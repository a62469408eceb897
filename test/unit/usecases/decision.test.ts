import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import {
  DECISION_MESSAGES,
  type Decision,
  type MetricsSink,
  toDecisionLine,
  writeDecision,
  writeDecisions,
} from '../../../shared/usecases/decisions/decision.ts';
import { toMetricPoints } from '../../../shared/usecases/decisions/metrics.ts';
import { quietMetrics, recordingMetrics } from '../../fixtures/metrics.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger(
    { component: 'test' },
    {
      level: 'debug',
      sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
      now: () => new Date('2026-01-02T03:04:05.000Z'),
    },
  );
  return { logger, lines };
}

const pods = (n: number) => Array.from({ length: n }, (_, i) => ({ namespace: 'default', name: `web-${i}` }));

const launch: Decision = {
  kind: 'launch',
  reason: 'provisioning',
  outcome: 'launched',
  nodePool: 'default',
  nodeClaim: 'default-abc',
  pods: pods(12),
  instanceTypes: Array.from({ length: 15 }, (_, i) => `m5.${i}xlarge`),
  capacityType: 'spot',
  round: 0,
  leaseToken: 7,
  instanceId: 'i-1',
  instanceType: 'm5.0xlarge',
  zone: 'us-east-1a',
  pricePerHour: 0.096,
};

describe('decision lines', () => {
  it('gives every kind its own message', () => {
    const messages = Object.values(DECISION_MESSAGES);
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('writes decision and reason first, pod and instance-type counts with bounded samples', () => {
    const line = toDecisionLine(launch);
    expect(line.level).toBe('info');
    expect(line.message).toBe('launch decided');
    expect(Object.keys(line.fields).slice(0, 2)).toEqual(['decision', 'reason']);
    expect(line.fields).toMatchObject({
      decision: 'launch',
      reason: 'provisioning',
      podCount: 12,
      instanceTypeCount: 15,
      pricePerHour: 0.096,
    });
    expect(line.fields['pods']).toEqual(pods(10).map((p) => `default/${p.name}`));
    expect(line.fields['instanceTypes']).toHaveLength(10);
    expect(line.fields).not.toHaveProperty('kind');
  });

  it('leaves undefined keys out and writes a rejected NodePool as a warning', () => {
    const line = toDecisionLine({ kind: 'rejectNodePool', reason: 'spec.limits: bad', nodePool: 'x' });
    expect(line).toEqual({
      level: 'warn',
      message: 'nodepool failed validation',
      fields: { decision: 'rejectNodePool', reason: 'spec.limits: bad', nodePool: 'x' },
    });
    const skip = toDecisionLine({ kind: 'skip', reason: 'lease held', lease: 'provisioner' });
    expect(Object.keys(skip.fields)).toEqual(['decision', 'reason', 'lease']);
  });
});

describe('writeDecision', () => {
  const T = Date.parse('2026-01-02T03:04:05.000Z');
  const clock = { now: () => new Date(T) };

  it('writes one JSON line through the logger', () => {
    const { logger, lines } = capture();
    writeDecision({ logger: logger.child({ holder: 'h-1' }), metrics: quietMetrics }, launch);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      message: 'launch decided',
      component: 'test',
      holder: 'h-1',
      decision: 'launch',
      outcome: 'launched',
      podCount: 12,
    });
  });

  it('hands each decision to the sink’s observer with its logger’s fields, its points and its line, and still writes the line', () => {
    const { logger, lines } = capture();
    const metrics = recordingMetrics({ cluster: 'prod', clock });
    const skip: Decision = { kind: 'skip', reason: 'no provisionable pods', leaseToken: 1 };
    writeDecision({ logger: logger.child({ holder: 'h-2' }), metrics }, launch);
    writeDecision({ logger, metrics }, skip);
    logger.warn('not a decision');
    expect(metrics.observed).toEqual([
      [
        launch,
        { component: 'test', holder: 'h-2' },
        toMetricPoints(launch, { cluster: 'prod', timeMs: T }),
        toDecisionLine(launch),
      ],
      [
        skip,
        { component: 'test' },
        toMetricPoints(skip, { cluster: 'prod', timeMs: T }),
        toDecisionLine(skip),
      ],
    ]);
    expect(metrics.points).toEqual(metrics.observed.flatMap(([, , points]) => points));
    expect(lines.map((l) => l['message'])).toEqual([
      'launch decided',
      'provisioning skipped',
      'not a decision',
    ]);
    expect(lines[0]?.['holder']).toBe('h-2');
  });

  it('publishes the points of decisions written together once, dated at one moment of the sink’s clock', () => {
    const { logger, lines } = capture();
    let nowMs = T;
    const metrics = recordingMetrics({ cluster: 'prod', clock: { now: () => new Date(nowMs++) } });
    const skip: Decision = { kind: 'skip', reason: 'no provisionable pods', leaseToken: 1 };
    writeDecisions({ logger, metrics }, [launch, skip]);
    expect(lines.map((l) => l['message'])).toEqual(['launch decided', 'provisioning skipped']);
    expect(metrics.batches).toHaveLength(1);
    expect(metrics.points.length).toBeGreaterThan(1);
    expect(new Set(metrics.points.map((p) => p.timeMs))).toEqual(new Set([T]));
    expect(new Set(metrics.points.map((p) => p.dimensions.cluster))).toEqual(new Set(['prod']));
  });

  it('publishes nothing for decisions without points, nor to a sink that names no cluster', () => {
    const { logger, lines } = capture();
    const published: unknown[] = [];
    const sink = (cluster: string | undefined): MetricsSink => ({
      cluster,
      now: () => {
        if (cluster === undefined) throw new Error('a sink without a cluster dates nothing');
        return new Date(T);
      },
      publish: (points) => published.push(points),
    });
    writeDecision({ logger, metrics: sink('prod') }, { kind: 'skip', reason: 'lease held', lease: 'p' });
    writeDecision({ logger, metrics: sink(undefined) }, launch);
    expect(published).toEqual([]);
    expect(lines).toHaveLength(2);
  });
});

describe('the metrics of a standalone NodeClaim', () => {
  const standalone: Decision = {
    kind: 'launch',
    reason: 'standalone',
    outcome: 'launched',
    nodeClaim: 'by-hand',
    pods: [],
    instanceTypes: ['m5.large'],
    capacityType: 'on-demand',
    round: 0,
    leaseToken: 7,
    instanceId: 'i-1',
    instanceType: 'm5.large',
    zone: 'us-east-1a',
  };

  it('counts no NodeClaim created (a user made it), and names no NodePool', () => {
    const points = toMetricPoints(standalone, { cluster: 'prod', timeMs: 0 });
    expect(points.map((p) => p.name)).not.toContain('karpenter_nodeclaims_created_total');
    expect(points.length).toBeGreaterThan(0);
    const registered = toMetricPoints(
      {
        kind: 'register',
        reason: 'node joined',
        nodeClaim: 'by-hand',
        node: 'n1',
        unregisteredTaintMissing: false,
        taintsAdded: 0,
      },
      { cluster: 'prod', timeMs: 0 },
    );
    expect(registered).toEqual([
      expect.objectContaining({
        name: 'karpenter_nodes_created_total',
        dimensions: expect.objectContaining({ nodepool: 'none' }),
      }),
    ]);
  });
});
