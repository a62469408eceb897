import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { computeCost } from '../../../shared/simulator/stats.ts';
import { small, web } from './scenarios.ts';

// Samples observe the run and never drive it: the virtual clock moves on the world's own events
// (controllers' schedules, expiries, kubelet boots, the scheduler), so the sample interval changes
// what the charts show and nothing else.

/**
 * Two pods of 3 cpu, one per xlarge node, a third from 7m; every node expires after 10 minutes,
 * so replacements boot while the expired nodes drain and the evicted pods wait for them.
 */
const scenario = (sampleInterval: string) =>
  parseScenario(
    small({
      disruption: '          expireAfter: 10m\n',
      workloads: web(2, '    scale:\n      - { at: 7m, replicas: 3 }\n'),
    }).replace('bootDelay: 30s', `bootDelay: 30s\nsampleInterval: ${sampleInterval}`),
  );

const INTERVALS = ['1s', '10s', '60s'] as const;
const runs = new Map(INTERVALS.map((i) => [i, simulate(scenario(i))] as const));
const record = async (interval: (typeof INTERVALS)[number]): Promise<SimulationRecord> => {
  const run = runs.get(interval);
  if (run === undefined) throw new Error(`no run for ${interval}`);
  return run;
};

describe('the sample interval', () => {
  it('samples at the interval asked for', async () => {
    expect((await record('1s')).samples).toHaveLength(30 * 60 + 1);
    expect((await record('10s')).samples).toHaveLength(30 * 6 + 1);
    expect((await record('60s')).samples).toHaveLength(30 + 1);
  });

  it('changes no decision: the decision logs at 1 s, 10 s and 60 s are the same', async () => {
    const reference = await record('1s');
    const drains = reference.decisions.filter((d) => d['message'] === 'drain step');
    expect(drains.length).toBeGreaterThan(0);
    for (const interval of ['10s', '60s'] as const) {
      const other = await record(interval);
      expect(other.decisions).toEqual(reference.decisions);
      expect(other.launches).toEqual(reference.launches);
      expect(other.terminations).toEqual(reference.terminations);
      expect(other.disruptions).toEqual(reference.disruptions);
    }
  });

  it('changes no pod wait: waits run from creation to binding, whenever samples are taken', async () => {
    const reference = await record('1s');
    // The pods evicted from expired nodes wait for their replacements to boot.
    expect(Math.max(...reference.podWaitsMs)).toBeGreaterThan(0);
    expect((await record('10s')).podWaitsMs).toEqual(reference.podWaitsMs);
    expect((await record('60s')).podWaitsMs).toEqual(reference.podWaitsMs);
  });

  it('keeps an outage shorter than the interval in the samples', async () => {
    const fine = await record('1s');
    const coarse = await record('60s');
    const most = (r: SimulationRecord) => Math.max(...r.samples.map((s) => s.peakPendingPods ?? 0));
    expect(most(fine)).toBeGreaterThan(0);
    expect(most(coarse)).toBe(most(fine));
    // Each coarse sample's peak is the most any fine sample of its minute saw, and at least what
    // it sees itself.
    for (const s of coarse.samples) {
      const minute = fine.samples.filter((f) => f.atMs > s.atMs - 60_000 && f.atMs <= s.atMs);
      expect(s.peakPendingPods).toBe(Math.max(0, ...minute.map((f) => f.peakPendingPods ?? 0)));
      expect(s.peakPendingPods).toBeGreaterThanOrEqual(s.pendingPods);
    }
    // A sample that sees no pod pending still shows the ones its interval saw.
    expect(coarse.samples.some((s) => s.pendingPods === 0 && (s.peakPendingPods ?? 0) > 0)).toBe(true);
  });

  it('changes no total cost: each instance is billed from its launch to its termination', async () => {
    const reference = await record('1s');
    const endMs = reference.scenario.startMs + reference.scenario.durationMs;
    const gone = new Map(reference.terminations.map((t) => [t.nodeClaim, t.atMs]));
    // Expired nodes are replaced mid-run: some instances end between two 60 s samples.
    expect(reference.terminations.length).toBeGreaterThan(0);
    const byHand = reference.launches.reduce(
      (sum, l) => sum + (l.pricePerHour * ((gone.get(l.nodeClaim) ?? endMs) - l.atMs)) / 3_600_000,
      0,
    );
    for (const interval of INTERVALS) {
      expect(computeCost(await record(interval))?.totalUsd, interval).toBeCloseTo(byHand, 9);
    }
  });
});
