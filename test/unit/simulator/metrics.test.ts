import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { METRICS, type MetricPoint } from '../../../shared/runtime/metrics.ts';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario } from '../../../shared/simulator/scenario.ts';
import {
  type EmfValue,
  emfProblems,
  isEmfLine,
  readEmf,
  seriesKey,
  sumBySeries,
} from '../runtime/emf-rules.ts';

// A real run of an example scenario: every metric line Flotilla writes follows CloudWatch's rules,
// the record keeps the same values, and the figures agree with the decisions that made them.

const scenario = path.resolve(import.meta.dirname, '../../../examples/spot-storm.yaml');

let record: SimulationRecord;
const texts: string[] = [];

beforeAll(async () => {
  record = await simulate(loadScenario(scenario), { clusterName: 'storm', log: (line) => texts.push(line) });
  // One simulated run: a cap for a stuck run on a busy machine, not a speed check.
}, 120_000);

const emfTexts = () => texts.filter((t) => isEmfLine(JSON.parse(t) as Record<string, unknown>));
const emfValues = (): EmfValue[] =>
  emfTexts().flatMap((t) => readEmf(JSON.parse(t) as Record<string, unknown>));
const points = (): readonly MetricPoint[] => record.metrics ?? [];
const decisions = (kind: string) => record.decisions.filter((d) => d['decision'] === kind);
const total = (name: string) =>
  points()
    .filter((p) => p.name === name)
    .reduce((sum, p) => sum + p.values.reduce((a, b) => a + b, 0), 0);

describe('the metrics of a simulated run (examples/spot-storm.yaml)', () => {
  it('writes only EMF lines CloudWatch takes whole, under the run’s cluster', () => {
    const lines = emfTexts();
    expect(lines.length).toBeGreaterThan(100);
    for (const text of lines) expect(emfProblems(text), text).toEqual([]);
    expect(new Set(emfValues().map((v) => v.dimensions['cluster']))).toEqual(new Set(['storm']));
  });

  it('keeps in the record the values the EMF lines carry', () => {
    const fromRecord = new Map<string, number>();
    for (const p of points()) {
      const dims = Object.fromEntries(
        [...new Set(METRICS[p.name].dimensionSets.flat())].map((k) => [k, p.dimensions[k] ?? '']),
      );
      const key = seriesKey(p.name, dims);
      fromRecord.set(key, (fromRecord.get(key) ?? 0) + p.values.reduce((a, b) => a + b, 0));
    }
    const fromLines = sumBySeries(emfValues());
    expect([...fromLines.keys()].sort()).toEqual([...fromRecord.keys()].sort());
    for (const [key, sum] of fromLines) expect(sum, key).toBeCloseTo(fromRecord.get(key) ?? Number.NaN, 6);
  });

  it('counts the NodeClaims its decisions created, terminated and disrupted', () => {
    const created =
      decisions('launch').filter((d) => d['reason'] !== 'resumed' && d['outcome'] !== 'fenced').length +
      decisions('disrupt')
        .filter((d) => d['outcome'] === 'started')
        .reduce((n, d) => n + (d['replacements'] as unknown[]).length, 0);
    expect(created).toBeGreaterThan(0);
    expect(total('karpenter_nodeclaims_created_total')).toBe(created);
    const terminated = decisions('finalizeNodeClaim').length;
    expect(terminated).toBeGreaterThan(0);
    expect(total('karpenter_nodeclaims_terminated_total')).toBe(terminated);
    const interrupted = decisions('handleInterruption').filter(
      (d) => d['action'] === 'cordonAndDrain',
    ).length;
    expect(interrupted).toBeGreaterThan(0);
    // A message once, whatever instances it names; the instance status poll's findings are none.
    const messages = decisions('handleInterruption').filter(
      (d) =>
        d['laterInstance'] !== true &&
        !['instanceStatus', 'systemStatus', 'eventStatus'].includes(String(d['interruption'])),
    );
    expect(total('karpenter_interruption_received_messages_total')).toBe(
      messages.length + decisions('ignoreInterruption').length,
    );
    // Karpenter's name of each kind: the spot storm's warnings are spot_interrupted.
    expect(
      points()
        .filter((p) => p.name === 'karpenter_interruption_received_messages_total')
        .some((p) => p.dimensions.message_type === 'spot_interrupted'),
    ).toBe(true);
    expect(
      points()
        .filter((p) => p.name === 'karpenter_nodeclaims_disrupted_total')
        .filter((p) => p.dimensions.reason === 'spot_interrupted')
        .reduce((n, p) => n + (p.values[0] ?? 0), 0),
    ).toBe(interrupted);
    expect(total('karpenter_nodes_created_total')).toBe(decisions('register').length);
    // Launched NodeClaims carry their zone and capacity type into the series.
    const zones = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
    for (const p of points().filter((p) => p.name === 'karpenter_nodes_created_total')) {
      expect(zones).toContain(p.dimensions.zone);
    }
    for (const p of points().filter((p) => p.name === 'karpenter_nodeclaims_terminated_total')) {
      expect(zones).toContain(p.dimensions.zone);
      expect(['spot', 'on-demand']).toContain(p.dimensions.capacity_type);
    }
  });

  it('reports the pending-pod wait at every provisioning run', () => {
    const runs =
      decisions('plan').length +
      decisions('skip').filter((d) => d['reason'] === 'no provisionable pods').length;
    const unbound = points().filter((p) => p.name === 'karpenter_pods_unbound_time_seconds');
    expect(unbound).toHaveLength(runs);
    expect(unbound.some((p) => (p.values[0] ?? 0) > 0)).toBe(true);
    for (const [i, plan] of decisions('plan').entries()) {
      expect(unbound.filter((p) => p.timeMs === plan['atMs'])[0]?.values, String(i)).toEqual([
        plan['oldestPendingSeconds'],
      ]);
    }
  });

  it('observes each NodePool’s cost at every disruption pass, as the run’s own cost samples see it', () => {
    const observed = decisions('observe');
    expect(observed.length).toBeGreaterThan(10);
    const cost = points().filter((p) => p.name === 'karpenter_nodepools_cost_total');
    expect(new Set(cost.map((p) => p.timeMs)).size).toBe(observed.length);
    // At a moment both measured, the NodePools' cost adds up to the run's cost sample (the sample
    // counts every running instance; the observation its NodeClaims at their offering price).
    const byTime = new Map<number, number>();
    for (const p of cost) byTime.set(p.timeMs, (byTime.get(p.timeMs) ?? 0) + (p.values[0] ?? 0));
    const matched = record.samples.filter((s) => byTime.has(s.atMs) && s.costPerHour > 0);
    expect(matched.length).toBeGreaterThan(0);
    for (const s of matched) expect(byTime.get(s.atMs)).toBeCloseTo(s.costPerHour, 2);
    const idle = points().filter((p) => p.name === 'nodepools_idle_cost');
    for (const p of idle) {
      const whole = cost.find(
        (c) => c.timeMs === p.timeMs && c.dimensions.nodepool === p.dimensions.nodepool,
      );
      expect(p.values[0]).toBeLessThanOrEqual((whole?.values[0] ?? 0) + 1e-9);
    }
  });

  it('measures pod startups from creation to start', () => {
    const startups = points()
      .filter((p) => p.name === 'karpenter_pods_startup_duration_seconds')
      .flatMap((p) => p.values);
    expect(startups.length).toBeGreaterThan(0);
    for (const s of startups) expect(s).toBeGreaterThanOrEqual(0);
  });

  it('sums each NodePool’s Nodes at every pass, and never names a node, pod or NodeClaim', () => {
    const observed = decisions('observe');
    const allocatable = points().filter((p) => p.name === 'karpenter_nodes_allocatable');
    expect(new Set(allocatable.map((p) => p.timeMs)).size).toBe(observed.length);
    for (const p of allocatable) expect(['cpu', 'memory']).toContain(p.dimensions.resource_type);
    // Requests never exceed allocatable, DaemonSets' never the pods'.
    const at = (name: string, p: MetricPoint) =>
      points().find(
        (q) =>
          q.name === name &&
          q.timeMs === p.timeMs &&
          q.dimensions.nodepool === p.dimensions.nodepool &&
          q.dimensions.resource_type === p.dimensions.resource_type,
      )?.values[0] ?? 0;
    for (const p of allocatable) {
      expect(at('karpenter_nodes_total_pod_requests', p)).toBeLessThanOrEqual((p.values[0] ?? 0) + 1e-9);
      expect(at('karpenter_nodes_total_daemon_requests', p)).toBeLessThanOrEqual(
        at('karpenter_nodes_total_pod_requests', p) + 1e-9,
      );
    }
    // Bounded dimensions only: no value is a node's, pod's or NodeClaim's name.
    const names = new Set(
      record.decisions.flatMap((d) => [d['node'], d['nodeClaim']]).filter((v) => typeof v === 'string'),
    );
    for (const p of points()) {
      for (const value of Object.values(p.dimensions))
        expect(names.has(value), `${p.name} ${value}`).toBe(false);
    }
  });
});
