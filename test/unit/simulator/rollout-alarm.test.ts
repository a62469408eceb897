import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../../shared/simulator/record.ts';
import { loadScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';

// The rollout-alarm example: a drift rollout whose NodePool names a CloudWatch alarm. While the
// alarm is in ALARM (13m to 25m) no replacement starts; the one in flight when it fired finishes;
// once it is OK the rollout goes on and every node is replaced.

const examples = path.resolve(import.meta.dirname, '../../../examples');
const MINUTE = 60_000;
const minute = (r: SimulationRecord, time: unknown) =>
  (Date.parse(String(time)) - r.scenario.startMs) / MINUTE;

describe('the rollout-alarm example', () => {
  const record = simulate(loadScenario(path.join(examples, 'rollout-alarm.yaml')));

  it('starts no drift replacement while the alarm is in ALARM, and finishes the rollout once it is OK', async () => {
    const r = await record;
    const started = r.decisions.filter(
      (d) => d['decision'] === 'disrupt' && d['reason'] === 'Drifted' && d['outcome'] === 'started',
    );
    const startedAt = started.map((d) => minute(r, d['time']));
    expect(startedAt.filter((m) => m < 13).length).toBeGreaterThan(0);
    expect(startedAt.filter((m) => m >= 13 && m < 25)).toEqual([]);
    expect(startedAt.filter((m) => m >= 25).length).toBeGreaterThan(0);
    // Every node of the old AMI went, for drift.
    const before = r.launches.filter((l) => (l.atMs - r.scenario.startMs) / MINUTE < 10);
    const driftedAway = new Set(r.disruptions.flatMap((d) => (d.reason === 'Drifted' ? [d.nodeClaim] : [])));
    expect(driftedAway).toEqual(new Set(before.map((l) => l.nodeClaim)));
    // The hold, as its decision lines say it.
    const holds = r.decisions.filter((d) => d['decision'] === 'rolloutHold');
    expect(holds.map((d) => [d['action'], d['reason'], minute(r, d['time'])])).toEqual([
      ['start', 'AlarmFiring', 13],
      ['end', 'AlarmsClear', 25],
    ]);
    // The summary names the hold with the budgets and nodes that held disruption.
    expect(renderSummary(r)).toContain(
      'rollout of web held by alarm(s) web-5xx (AlarmFiring) for 12m00s (00:13 to 00:25): drift and expiration waited',
    );
    // The pods ran all along.
    for (const s of r.samples.filter((x) => (x.atMs - r.scenario.startMs) / MINUTE >= 2)) {
      expect(s).toMatchObject({ runningPods: 12, pendingPods: 0 });
    }
  });
});
