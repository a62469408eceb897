import { describe, expect, it } from 'vitest';
import {
  followUpVersion,
  podEventVersion,
  type QueueMessage,
} from '../../../../shared/messages/pod-event.ts';
import type { Cluster } from '../../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { batchPods } from '../../../../shared/usecases/provisioning/batch.ts';
import { latestPodEventAtMs } from '../../../../shared/usecases/provisioning/driver.ts';
import type { BatchItem } from '../../../../shared/usecases/state/batch.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { watched } from '../../../fixtures/watched.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// When a provisioning run reads what: the cluster's objects and the offering catalog while the batch
// window is open, the pods once more when it closes, and nothing of it again before the plan.

interface WorldOptions {
  /** A read that fails. */
  readonly fail?: { readonly method: keyof Cluster; readonly error: Error };
  /** What happens in the cluster during the first batch wait. */
  readonly duringWait?: () => void;
}

function makeWorld({ fail, duringWait }: WorldOptions = {}) {
  const world = scenarioWorld();
  const { clock, cluster: memory, cloud } = world;
  const calls: string[] = [];
  const cluster = watched(memory, (method) => {
    calls.push(method);
    return fail?.method === method ? Promise.reject(fail.error) : undefined;
  });
  const instanceTypes = cloud.instanceTypes.bind(cloud);
  const launch = cloud.launch.bind(cloud);
  const pendingPod = (name: string) => addPendingPod(memory, name);
  const run = () =>
    provisionerSteps(world, makeLogger({}, { sink: () => {} }), {
      ports: {
        cluster,
        cloud: {
          ...cloud,
          instanceTypes: (nodeClass) => {
            calls.push('instanceTypes');
            return instanceTypes(nodeClass);
          },
          launch: (request, record, options) => {
            calls.push(`launch firstSend=${options?.firstSend === true}`);
            return launch(request, record, options);
          },
        },
        sleep: async (ms) => {
          if (!calls.includes('batch wait')) duringWait?.();
          calls.push('batch wait');
          // The reads started before the wait run while it lasts.
          await new Promise((resolve) => setTimeout(resolve, 5));
          clock.advance(ms);
        },
      },
    }).provision('run-1');
  return { calls, pendingPod, run, memory };
}

describe('a provisioning run reads during its batch window', () => {
  it('reads the cluster objects and the catalog while the window is open, and the pods only as the batch polls them', async () => {
    const w = makeWorld();
    w.pendingPod('web-1');
    const result = await w.run();
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.claims.filter((c) => c.kind === 'launched')).toHaveLength(1);

    const wait = w.calls.indexOf('batch wait');
    const before = w.calls.slice(0, wait);
    // The first poll, then every read of the state, then the catalog, all before the window closed.
    expect(before[0]).toBe('provisionablePods');
    for (const read of ['nodes', 'nodePools', 'nodeClasses', 'nodeClaims', 'daemonSets', 'namespaceLabels']) {
      expect(before).toContain(read);
    }
    expect(w.calls.slice(0, w.calls.indexOf('instanceTypes'))).toContain('nodeClaims');
    // The poll that closed the batch is the one the plan uses: two pod reads in all.
    expect(w.calls.filter((c) => c === 'provisionablePods')).toHaveLength(2);
    const after = w.calls.slice(wait + 1);
    expect(after.slice(0, after.indexOf('createNodeClaim'))).not.toContain('nodeClaims');
    // A launch just planned is a first send: the cloud looks up no instance before it.
    expect(w.calls).toContain('launch firstSend=true');
  });

  it('plans for the pods of the last poll: a pod gone by then is not planned for', async () => {
    const w = makeWorld({
      // Gone while the window is open (bound elsewhere, or deleted).
      duringWait: () => w.memory.removePod('default', 'web-2'),
    });
    w.pendingPod('web-1');
    w.pendingPod('web-2');
    const run = w.run();
    const result = await run;
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.pods).toBe(1);
  });

  it('fails with the read error of the objects when one fails while the window is open', async () => {
    const error = new Error('nodes could not be listed');
    const w = makeWorld({ fail: { method: 'nodes', error } });
    w.pendingPod('web-1');
    await expect(w.run()).rejects.toBe(error);
  });
});

describe('the batch window of a run a pod event triggered', () => {
  /** batchPods from a first read of the world's pods, the waits recorded. */
  async function batch(eventBeforeMs: number | undefined, arriving: readonly string[] = []) {
    const { clock, cluster } = scenarioWorld();
    addPendingPod(cluster, 'web-1');
    const waits: number[] = [];
    const lines: Record<string, unknown>[] = [];
    const startMs = clock.now().getTime();
    const result = await batchPods(
      {
        cluster,
        clock,
        sleep: async (ms) => {
          waits.push(ms);
          const next = arriving[waits.length - 1];
          if (next !== undefined) addPendingPod(cluster, next);
          clock.advance(ms);
        },
      },
      { logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }), metrics: quietMetrics },
      await cluster.provisionablePods(),
      {
        idleMs: 1000,
        maxMs: 10_000,
        ...(eventBeforeMs === undefined ? {} : { eventAtMs: startMs - eventBeforeMs }),
      },
    );
    return { waits, pods: result.pods, last: result.last.items.length, decision: lines[0] };
  }

  it('waits only what is left of the idle window after the event', async () => {
    const b = await batch(400);
    expect(b.waits).toEqual([600]);
    expect(b.decision).toMatchObject({ decision: 'batch', reason: 'idle', sinceEventMs: 400 });
  });

  it('closes on the first read when the event is older than the idle window', async () => {
    const b = await batch(1500);
    expect(b.waits).toEqual([]);
    expect(b).toMatchObject({ pods: 1, last: 1 });
    expect(b.decision).toMatchObject({ reason: 'idle', sinceEventMs: 1500, durationMs: 0 });
  });

  it('waits whole idle windows again once a new pod arrives', async () => {
    const b = await batch(400, ['web-2']);
    expect(b.waits).toEqual([600, 1000]);
    expect(b).toMatchObject({ pods: 2, last: 2 });
  });

  it('counts a shim clock ahead of the run as no time passed, and a scheduled run waits a whole window', async () => {
    expect((await batch(-5000)).waits).toEqual([1000]);
    const scheduled = await batch(undefined);
    expect(scheduled.waits).toEqual([1000]);
    expect(scheduled.decision).not.toHaveProperty('sinceEventMs');
  });
});

describe('the latest pod event of a queue batch', () => {
  const podEvent = (observedAt: string): QueueMessage => ({
    kind: 'podEvent' as const,
    event: {
      version: podEventVersion,
      kind: 'PodUnschedulable' as const,
      cluster: 'c',
      namespace: 'default',
      name: 'p',
      uid: 'u',
      observedAt,
    },
  });

  it('is the latest observedAt of the pod events; follow-ups do not count', () => {
    const items: BatchItem<QueueMessage>[] = [
      { id: '1', message: podEvent('2026-11-26T10:00:01.000Z') },
      { id: '2', message: podEvent('2026-11-26T10:00:03.500Z') },
      {
        id: '3',
        message: {
          kind: 'followUp' as const,
          followUp: {
            version: followUpVersion,
            kind: 'LifecycleFollowUp' as const,
            cluster: 'c',
            nodeClaims: ['a'],
            requestedAt: '2026-11-26T10:00:09.000Z',
          },
        },
      },
    ];
    expect(latestPodEventAtMs(items)).toBe(Date.parse('2026-11-26T10:00:03.500Z'));
    expect(latestPodEventAtMs(items.slice(2))).toBeUndefined();
  });
});
