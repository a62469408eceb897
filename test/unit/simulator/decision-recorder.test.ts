import { describe, expect, it } from 'vitest';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { makeDecisionRecorder } from '../../../shared/simulator/decision-recorder.ts';
import { writeDecision } from '../../../shared/usecases/decisions/decision.ts';

describe('makeDecisionRecorder', () => {
  it('records decisions as values with their virtual time, and writes every line to the log', () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const log: string[] = [];
    const r = makeDecisionRecorder({ clock, log: (line) => log.push(line) });
    clock.advance(5_000);
    writeDecision(
      { logger: r.logger.child({ holder: 'sim-1' }), metrics: r.metrics },
      {
        kind: 'skip',
        reason: 'no provisionable pods',
        leaseToken: 3,
      },
    );
    r.logger.warn('cluster objects skipped', { count: 1 });
    expect(r.entries).toEqual([
      {
        atMs: Date.parse('2026-01-01T00:00:05Z'),
        level: 'info',
        time: '2026-01-01T00:00:05.000Z',
        message: 'provisioning skipped',
        component: 'flotilla',
        cluster: 'simulated',
        holder: 'sim-1',
        decision: 'skip',
        reason: 'no provisionable pods',
        leaseToken: 3,
      },
    ]);
    expect(log.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ message: 'provisioning skipped', holder: 'sim-1', decision: 'skip' }),
      expect.objectContaining({
        time: '2026-01-01T00:00:05.000Z',
        message: 'metrics',
        component: 'flotilla',
        cluster: 'simulated',
        karpenter_pods_unbound_time_seconds: 0,
      }),
      expect.objectContaining({ level: 'warn', message: 'cluster objects skipped', count: 1 }),
    ]);
    // Metrics lines carry the sink's fields, as a Lambda's do, not a child logger's.
    expect(JSON.parse(log[1] ?? '{}')).not.toHaveProperty('holder');
  });

  it('keeps the metric points of each decision, at its virtual time, under the cluster it names', () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const r = makeDecisionRecorder({ clock, cluster: 'lab' });
    clock.advance(60_000);
    writeDecision(r, {
      kind: 'launchBackoff',
      reason: 'launchFailed',
      action: 'start',
      nodePool: 'gpu',
      failures: 3,
    });
    expect(r.points).toEqual([
      {
        name: 'nodepools_launch_backoff_started_total',
        values: [1],
        timeMs: Date.parse('2026-01-01T00:01:00Z'),
        dimensions: { cluster: 'lab', nodepool: 'gpu' },
      },
    ]);
  });

  it('records what the world does apart, with source simulator, and not in the log', () => {
    const clock = makeManualClock(new Date('2026-01-01T00:00:00Z'));
    const log: string[] = [];
    const r = makeDecisionRecorder({ clock, log: (line) => log.push(line) });
    r.world.info('instance reclaimed', { decision: 'reclaim', instanceId: 'i-1' });
    r.world.debug('not recorded');
    expect(r.entries).toEqual([
      expect.objectContaining({
        message: 'instance reclaimed',
        source: 'simulator',
        decision: 'reclaim',
        instanceId: 'i-1',
      }),
    ]);
    expect(log).toEqual([]);
  });
});
