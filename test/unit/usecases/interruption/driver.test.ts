import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MemoryTag, makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import { makeMemoryLeaseStore } from '../../../../shared/adapters/memory/lease.ts';
import {
  type InterruptionMessage,
  parseInterruptionEvent,
} from '../../../../shared/messages/interruption-event.ts';
import {
  handleInterruptionBatch,
  type InterruptionDriverDeps,
} from '../../../../shared/usecases/interruption/driver.ts';
import { setUpInterruption } from '../../../../shared/usecases/interruption/setup.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// The interruption batch driver on the in-memory cluster, cloud and termination queue, with events
// parsed from real EventBridge JSON.

const CLUSTER = 'interrupt-test';

function makeWorld() {
  const {
    clock,
    memory: cluster,
    cloud,
    lines,
    logger,
    metrics,
  } = memoryWorld(CLUSTER, new Date('2026-11-21T10:00:00Z'));
  const terminationQueue = makeMemoryTerminationQueue(clock);
  // The interruption Lambda as its handler sets it up, its NodeClaim reads counted.
  const ports = { cluster, cloud, terminationQueue, logger, metrics };
  const interruption = setUpInterruption(ports);
  let reads = 0;
  const deps: InterruptionDriverDeps = {
    ...interruption,
    indexNodeClaims: () => {
      reads += 1;
      return interruption.indexNodeClaims();
    },
  };

  /** A running spot NodeClaim; returns its instance id. */
  async function spotClaim(name: string): Promise<string> {
    const instance = cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      capacityType: 'spot',
      tags: {
        [MemoryTag.cluster(CLUSTER)]: 'owned',
        [MemoryTag.nodePool]: 'default',
        [MemoryTag.nodeClaim]: name,
      },
    });
    await cluster.createNodeClaim(
      newNodeClaim(name, {
        labels: {
          'node.kubernetes.io/instance-type': 'm5.large',
          'topology.kubernetes.io/zone': 'us-east-1a',
          'karpenter.sh/capacity-type': 'spot',
        },
      }),
    );
    await cluster.patchNodeClaimStatus(name, { providerId: instance.providerId, conditions: [] });
    return instance.instanceId;
  }

  return {
    clock,
    cluster,
    terminationQueue,
    lines,
    metrics,
    ports,
    deps,
    spotClaim,
    reads: () => reads,
    logged: (message: string) => lines.filter((l) => l['message'] === message),
  };
}

/** An EventBridge event from a fixture, about `instanceId`, with event id `id`, parsed. */
function event(fixture: string, instanceId: string, id: string): InterruptionMessage {
  const json = JSON.parse(
    readFileSync(new URL(`../../../fixtures/events/${fixture}.json`, import.meta.url), 'utf8'),
  ) as { id: string; detail: Record<string, unknown> };
  const parsed = parseInterruptionEvent(
    JSON.stringify({ ...json, id, detail: { ...json.detail, 'instance-id': instanceId } }),
  );
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.message;
}

describe('handleInterruptionBatch', () => {
  it('reads the NodeClaims once per batch and handles an event delivered twice once', async () => {
    const w = makeWorld();
    const a = await w.spotClaim('a');
    const b = await w.spotClaim('b');
    const outcome = await handleInterruptionBatch(w.deps, [
      { id: 'm1', message: event('spot-interruption', a, 'event-a') },
      { id: 'm2', message: event('spot-interruption', a, 'event-a') },
      { id: 'm3', message: event('rebalance', b, 'event-b') },
    ]);
    expect(outcome).toEqual({ failed: [] });
    expect(w.reads()).toBe(1);
    expect((await w.cluster.nodeClaim('a'))?.deleting).toBe(true);
    expect((await w.cluster.nodeClaim('b'))?.deleting).toBe(false);
    expect(w.terminationQueue.receive()).toEqual([{ nodeClaim: 'a' }]);
    expect(w.logged('interruption duplicate')).toEqual([
      expect.objectContaining({ messageId: 'm2', eventId: 'event-a', kind: 'spotInterruption' }),
    ]);
    expect(w.logged('interruption handled').map((l) => [l['nodeClaim'], l['action']])).toEqual([
      ['a', 'cordonAndDrain'],
      ['b', 'event'],
    ]);
  });

  it('counts each message once, with its age, and each NodeClaim it deletes, as Karpenter’s metrics do', async () => {
    const w = makeWorld();
    const a = await w.spotClaim('a');
    const b = await w.spotClaim('b');
    const health = JSON.parse(
      readFileSync(new URL('../../../fixtures/events/health-scheduled-change.json', import.meta.url), 'utf8'),
    ) as { detail: Record<string, unknown> };
    const parsed = parseInterruptionEvent(
      JSON.stringify({
        ...health,
        detail: { ...health.detail, affectedEntities: [{ entityValue: a }, { entityValue: b }] },
      }),
    );
    if (!parsed.ok) throw new Error(parsed.problem);
    // Handled 2.5 s after the event's time.
    w.clock.advance(2_500);
    await handleInterruptionBatch(w.deps, [{ id: 'm1', message: parsed.message }]);
    expect(
      w.logged('interruption handled').map((l) => [l['nodeClaim'], l['queuedSeconds'], l['laterInstance']]),
    ).toEqual([
      ['a', 2.5, undefined],
      ['b', undefined, true],
    ]);
    const points = (name: string) =>
      w.metrics.points.filter((p) => p.name === name).map((p) => [p.dimensions, p.values]);
    const cluster = { cluster: CLUSTER };
    expect(points('karpenter_interruption_received_messages_total')).toEqual([
      [{ ...cluster, message_type: 'scheduled_change' }, [1]],
    ]);
    expect(points('karpenter_interruption_message_queue_duration_seconds')).toEqual([[cluster, [2.5]]]);
    const disrupted = { ...cluster, reason: 'scheduled_change', nodepool: 'default', capacity_type: 'spot' };
    expect(points('karpenter_nodeclaims_disrupted_total')).toEqual([
      [disrupted, [1]],
      [disrupted, [1]],
    ]);
  });

  it('concurrent invocations with the same event: one acts, the other hands its delivery back to the queue', async () => {
    const w = makeWorld();
    const a = await w.spotClaim('a');
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const leased = setUpInterruption({
      ...w.ports,
      eventLeases: { store: makeMemoryLeaseStore(), clusterName: CLUSTER, clock: w.clock },
    });
    // The first invocation is still acting when the second arrives.
    const slow: InterruptionDriverDeps = {
      ...leased,
      handle: async (message, claims) => {
        await gate;
        return w.deps.handle(message, claims);
      },
    };
    const first = handleInterruptionBatch(
      slow,
      [{ id: 'm1', message: event('spot-interruption', a, 'event-a') }],
      'one',
    );
    const second = await handleInterruptionBatch(
      leased,
      [{ id: 'm2', message: event('spot-interruption', a, 'event-a') }],
      'two',
    );
    expect(second).toEqual({ failed: ['m2'] });
    expect(w.logged('interruption in progress elsewhere')).toEqual([
      expect.objectContaining({ messageId: 'm2', eventId: 'event-a' }),
    ]);
    release();
    expect(await first).toEqual({ failed: [] });
    // Redelivered after the first is done: it finds the NodeClaim deleting and changes nothing.
    expect(
      await handleInterruptionBatch(
        leased,
        [{ id: 'm2', message: event('spot-interruption', a, 'event-a') }],
        'three',
      ),
    ).toEqual({ failed: [] });
    expect(w.logged('interruption handled').map((l) => l['action'])).toEqual([
      'cordonAndDrain',
      'alreadyDeleting',
    ]);
    expect(w.terminationQueue.receive()).toEqual([{ nodeClaim: 'a' }]);
  });

  it('fails only the item whose handling throws; the others are done', async () => {
    const w = makeWorld();
    const a = await w.spotClaim('a');
    const b = await w.spotClaim('b');
    const deps: InterruptionDriverDeps = {
      ...w.deps,
      handle: async (message, claims) => {
        if (message.eventId === 'event-a')
          throw new Error('the API server refused: etcdserver: request timed out');
        return w.deps.handle(message, claims);
      },
    };
    const outcome = await handleInterruptionBatch(deps, [
      { id: 'm1', message: event('spot-interruption', a, 'event-a') },
      { id: 'm2', message: event('state-change-stopping', b, 'event-b') },
    ]);
    expect(outcome).toEqual({ failed: ['m1'] });
    expect((await w.cluster.nodeClaim('b'))?.deleting).toBe(true);
    expect(w.logged('interruption failed')).toEqual([
      expect.objectContaining({ level: 'error', messageId: 'm1', eventId: 'event-a', instanceIds: [a] }),
    ]);
  });

  it('fails every item when the NodeClaims cannot be read', async () => {
    const w = makeWorld();
    const deps: InterruptionDriverDeps = {
      ...w.deps,
      indexNodeClaims: () => Promise.reject(new Error('the API server is unreachable')),
    };
    const outcome = await handleInterruptionBatch(deps, [
      { id: 'm1', message: event('spot-interruption', 'i-0aaaaaaaaaaaaaaaa', 'event-a') },
      { id: 'm2', message: event('rebalance', 'i-0bbbbbbbbbbbbbbbb', 'event-b') },
    ]);
    expect(outcome).toEqual({ failed: ['m1', 'm2'] });
    expect(w.logged('interruption batch failed')).toEqual([
      expect.objectContaining({ reason: 'reading NodeClaims failed', messages: 2 }),
    ]);
  });

  it('does not read the NodeClaims for an empty batch', async () => {
    const w = makeWorld();
    expect(await handleInterruptionBatch(w.deps, [])).toEqual({ failed: [] });
    expect(w.reads()).toBe(0);
  });
});
