import { describe, expect, it } from 'vitest';
import { makeMemoryAlarms } from '../../../../shared/adapters/memory/index.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { ROLLOUT_ALARMS_ANNOTATION } from '../../../../shared/usecases/disruption/rollout-alarms.ts';
import { explainNode } from '../../../../shared/usecases/explain/node.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { pass, threeNodes, type World } from './pass-world.ts';

// Whole disruption passes over a NodePool whose template changed (its three nodes drifted) and
// whose annotation names a CloudWatch alarm: while the alarm is in ALARM no drift replacement
// starts and the NodePool says why; once it is OK again the rollout goes on.

async function driftedWorld(annotation: string): Promise<World> {
  const world = await threeNodes();
  const pool = world.cluster.get('NodePool', 'on-demand') as { spec: Record<string, unknown> };
  // The user's change: an alarm to watch, and a new label in the template (every node drifts).
  await world.cluster.patchNodePoolMetadata('on-demand', {
    annotations: { [ROLLOUT_ALARMS_ANNOTATION]: annotation },
  });
  const template = pool.spec['template'] as { metadata?: { labels?: Record<string, string> } };
  world.cluster.replaceSpec('NodePool', 'on-demand', {
    ...pool.spec,
    template: { ...template, metadata: { ...template.metadata, labels: { team: 'blue' } } },
  });
  world.clock.advance(60_000);
  await world.step();
  return world;
}

const rolloutPaused = async (world: World) =>
  (await world.cluster.nodePools()).items
    .find((p) => p.pool.name === 'on-demand')
    ?.conditions.find((c) => c.type === 'RolloutPaused');

const events = (world: World, reason: string) =>
  world.cluster.events().filter((e) => e.event.reason === reason && e.event.subject.name === 'on-demand');

describe('drift replacements held by a CloudWatch alarm', () => {
  it('wait while the alarm is in ALARM, with a condition and an Event, and go on once it is OK', async () => {
    const world = await driftedWorld('web-5xx');
    const alarms = makeMemoryAlarms();
    alarms.set('web-5xx', 'ALARM');

    const held = await pass(world, { alarms }, {}, 'pass-1');
    expect(held.decisions).toEqual([]);
    const drifted = (await world.cluster.nodeClaims()).items.filter((c) =>
      c.status.conditions.some((x) => x.type === 'Drifted' && x.status === 'True'),
    );
    expect(drifted).toHaveLength(3);
    expect(await rolloutPaused(world)).toMatchObject({ status: 'True', reason: 'AlarmFiring' });
    expect((await rolloutPaused(world))?.message).toContain('web-5xx in ALARM');
    expect(events(world, 'RolloutPaused')).toHaveLength(1);

    // `flotilla explain node` says what the pass did: each drifted node stays, held by the alarm.
    const explained = await Promise.all(
      drifted.map((c) =>
        explainNode(
          {
            cluster: world.cluster,
            cloud: world.cloud,
            logger: makeLogger({}, { level: 'error', sink: () => {} }),
            metrics: quietMetrics,
            nowMs: world.clock.now().getTime(),
          },
          c.name,
        ),
      ),
    );
    for (const e of explained) {
      expect(e).toMatchObject({ kind: 'node', verdict: 'stays' });
      expect(e.kind === 'node' && e.reasons.map((r) => r.code)).toContain('rolloutPaused');
    }

    // Still in ALARM: nothing new is written.
    world.clock.advance(60_000);
    expect((await pass(world, { alarms }, {}, 'pass-2')).decisions).toEqual([]);
    expect(events(world, 'RolloutPaused')).toHaveLength(1);

    alarms.set('web-5xx', 'OK');
    world.clock.advance(60_000);
    const resumed = await pass(world, { alarms }, {}, 'pass-3');
    expect(resumed.decisions[0]).toMatchObject({ method: 'drift', reason: 'Drifted' });
    expect(await rolloutPaused(world)).toMatchObject({ status: 'False', reason: 'AlarmsClear' });
    expect(events(world, 'RolloutResumed')).toHaveLength(1);

    // Another alarm named while all are clear: the message changes quietly (nothing to resume).
    alarms.set('web-p99', 'OK');
    await world.cluster.patchNodePoolMetadata('on-demand', {
      annotations: { [ROLLOUT_ALARMS_ANNOTATION]: 'web-5xx, web-p99' },
    });
    world.clock.advance(60_000);
    await pass(world, { alarms }, {}, 'pass-4');
    expect((await rolloutPaused(world))?.message).toContain('web-p99');
    expect(events(world, 'RolloutResumed')).toHaveLength(1);
    expect(events(world, 'RolloutPaused')).toHaveLength(1);
  });

  it('wait when the alarm does not exist or the stack gives no CloudWatch access: never read as OK', async () => {
    const world = await driftedWorld('no-such-alarm');
    const missing = await pass(world, { alarms: makeMemoryAlarms() }, {}, 'pass-1');
    expect(missing.decisions).toEqual([]);
    expect(await rolloutPaused(world)).toMatchObject({ status: 'True', reason: 'AlarmUnreadable' });
    world.clock.advance(60_000);
    expect((await pass(world, {}, {}, 'pass-2')).decisions).toEqual([]);
    expect((await rolloutPaused(world))?.message).toContain('no CloudWatch access');
  });

  it('expiration waits too: NodeClaims past expireAfter stay while the alarm is in ALARM', async () => {
    const world = await threeNodes();
    await world.cluster.patchNodePoolMetadata('on-demand', {
      annotations: { [ROLLOUT_ALARMS_ANNOTATION]: 'web-5xx' },
    });
    const alarms = makeMemoryAlarms();
    alarms.set('web-5xx', 'ALARM');
    // Past the default expireAfter of 720h.
    world.clock.advance(721 * 3_600_000);
    const held = await pass(world, { alarms }, {}, 'pass-1');
    expect(held.decisions).toEqual([]);
    expect((await world.cluster.nodeClaims()).items.filter((c) => c.deleting)).toEqual([]);

    alarms.set('web-5xx', 'OK');
    const resumed = await pass(world, { alarms }, {}, 'pass-2');
    expect(resumed.decisions.map((d) => d.method)).toContain('expiration');
  });
});
