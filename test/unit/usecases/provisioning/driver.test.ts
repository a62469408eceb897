import { describe, expect, it, vi } from 'vitest';
import { makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import { QueueSendError } from '../../../../shared/ports/errors.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import {
  type ProvisionerDriverDeps,
  provisionForMessages,
  runProvisioner,
} from '../../../../shared/usecases/provisioning/driver.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// The provisioner's invocation on the in-memory cluster and cloud: the real provisioning run and
// controllers pass, with the NodePools and EC2NodeClasses of an example scenario.

async function makeWorld() {
  const world = scenarioWorld();
  const { clock, cluster } = world;
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const followUps: { holder: string; nodeClaims: readonly string[] }[] = [];
  const deps: ProvisionerDriverDeps = {
    ...provisionerSteps(world, logger),
    scheduleFollowUp: async (holder, nodeClaims) => {
      followUps.push({ holder, nodeClaims });
      return { delaySeconds: 5 };
    },
  };
  const pendingPod = (name: string) => addPendingPod(cluster, name);
  return {
    cluster,
    clock,
    deps,
    followUps,
    pendingPod,
    logged: (message: string) => lines.filter((l) => l['message'] === message),
  };
}

describe('runProvisioner', () => {
  it('provisions, runs the controllers pass, and asks for a follow-up while the new NodeClaims have not initialized', async () => {
    const w = await makeWorld();
    w.pendingPod('web-1');
    const result = await runProvisioner(w.deps, 'invocation-1');
    expect(result.kind).toBe('provisioned');
    const claims = (await w.cluster.nodeClaims()).items.map((c) => c.name);
    expect(claims).toHaveLength(1);
    expect(w.followUps).toEqual([{ holder: 'invocation-1', nodeClaims: claims }]);
    expect(w.logged('follow-up scheduled')).toEqual([
      expect.objectContaining({
        decision: 'followUp',
        reason: 'nodeClaims not initialized yet',
        nodeClaims: claims,
        nodeClaimCount: 1,
        delaySeconds: 5,
      }),
    ]);
  });

  it('tells what the run planned: its queue, the NodeClaims for it, and how long the oldest pod waited', async () => {
    const w = await makeWorld();
    w.pendingPod('web-1');
    w.clock.advance(90_000);
    w.pendingPod('web-2');
    await runProvisioner(w.deps, 'invocation-1');
    const [planned] = w.logged('provisioning planned');
    expect(planned).toMatchObject({
      decision: 'plan',
      reason: 'planned',
      queued: 2,
      placed: 0,
      unschedulable: 0,
      rounds: 1,
      nodeClaims: 1,
    });
    // Created 90 s before the run began, and the batch waited a quiet second more.
    expect(planned?.['oldestPendingSeconds']).toBeGreaterThanOrEqual(90);
    expect(planned?.['oldestPendingSeconds']).toBeLessThan(100);
    expect(planned?.['planMs']).toBeGreaterThanOrEqual(0);
    expect(w.logged('provisioning planned')).toHaveLength(1);
  });

  it('asks for no follow-up when there is nothing to wait for', async () => {
    const w = await makeWorld();
    const result = await runProvisioner(w.deps, 'invocation-1');
    expect(result).toMatchObject({ kind: 'skipped' });
    expect(w.followUps).toEqual([]);
  });

  it('reads no pods, nor Nodes with their pods, when nothing is pending', async () => {
    const w = await makeWorld();
    w.pendingPod('web-1');
    await runProvisioner(w.deps, 'invocation-1');
    w.cluster.removePod('default', 'web-1');
    // The pods are most of the cluster summary: reading none of them keeps an idle run cheap.
    const podReads = [vi.spyOn(w.cluster, 'nodes'), vi.spyOn(w.cluster, 'boundPods')];
    const result = await runProvisioner(w.deps, 'invocation-2');
    expect(result).toEqual({ kind: 'skipped', why: 'no provisionable pods' });
    for (const read of podReads) expect(read).not.toHaveBeenCalled();
  });

  it('keeps the run when the follow-up cannot be sent, and says so', async () => {
    const w = await makeWorld();
    w.pendingPod('web-1');
    const result = await runProvisioner(
      { ...w.deps, scheduleFollowUp: () => Promise.reject(new Error('AccessDenied: sqs:SendMessage')) },
      'invocation-1',
    );
    expect(result.kind).toBe('provisioned');
    expect(w.logged('follow-up not scheduled')).toEqual([
      expect.objectContaining({
        level: 'error',
        fallback: 'pending-pods schedule',
        nodeClaims: [expect.any(String)],
      }),
    ]);
  });
});

describe('provisionForMessages', () => {
  const podEvent = (name: string) => ({
    kind: 'podEvent' as const,
    event: {
      version: 'flotilla.pod-event/v1' as const,
      kind: 'PodUnschedulable' as const,
      cluster: 'simulated',
      namespace: 'default',
      name,
      uid: `uid-${name}`,
      observedAt: '2026-01-01T00:00:00Z',
    },
  });

  it('runs once for the whole batch', async () => {
    const w = await makeWorld();
    w.pendingPod('web-1');
    w.pendingPod('web-2');
    const holders: string[] = [];
    const triggers: string[] = [];
    const deps: ProvisionerDriverDeps = {
      ...w.deps,
      provision: (holder, trigger) => {
        holders.push(holder);
        triggers.push(trigger);
        return w.deps.provision(holder, trigger);
      },
    };
    const outcome = await provisionForMessages(deps, 'invocation-1', [
      { id: 'm1', message: podEvent('web-1') },
      { id: 'm2', message: podEvent('web-2') },
    ]);
    expect(outcome).toEqual({ failed: [] });
    expect(holders).toEqual(['invocation-1']);
    // A message asks for the run: what it launches is read from the API server itself.
    expect(triggers).toEqual(['queue']);
    expect((await w.cluster.nodeClaims()).items.length).toBeGreaterThan(0);
    expect(w.followUps).toHaveLength(1);
  });

  it('fails every item when the run throws, naming the pods', async () => {
    const w = await makeWorld();
    const outcome = await provisionForMessages(
      { ...w.deps, provision: () => Promise.reject(new Error('the API server is unreachable')) },
      'invocation-1',
      [
        { id: 'm1', message: podEvent('web-1') },
        {
          id: 'm2',
          message: {
            kind: 'followUp',
            followUp: {
              version: 'flotilla.follow-up/v1',
              kind: 'LifecycleFollowUp',
              cluster: 'simulated',
              nodeClaims: ['default-0a1b2c3d4e'],
              requestedAt: '2026-01-01T00:00:05Z',
            },
          },
        },
      ],
    );
    expect(outcome).toEqual({ failed: ['m1', 'm2'] });
    expect(w.logged('provisioning failed')).toEqual([
      expect.objectContaining({ level: 'error', pods: ['default/web-1'] }),
    ]);
  });

  const deletion = (object: 'Node' | 'NodeClaim', name: string) => ({
    kind: 'nodeDeletion' as const,
    deletion: {
      version: 'flotilla.node-deletion/v1' as const,
      kind: 'NodeDeleting' as const,
      cluster: 'simulated',
      object,
      name,
      uid: `uid-${name}`,
      observedAt: '2026-01-01T00:00:00Z',
    },
  });

  it('sends the deletions on to termination before the run, each object once', async () => {
    const world = scenarioWorld();
    const queue = makeMemoryTerminationQueue(world.clock);
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { now: () => world.clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
    const order: string[] = [];
    const steps = provisionerSteps(world, logger, {
      ports: {
        relayDeletion: async (request) => {
          order.push('relay');
          await queue.enqueue(request, 0);
        },
      },
    });
    const outcome = await provisionForMessages(
      {
        ...steps,
        provision: (holder, trigger) => {
          order.push('run');
          return steps.provision(holder, trigger);
        },
      },
      'invocation-1',
      [
        { id: 'm1', message: deletion('Node', 'node-a') },
        { id: 'm2', message: deletion('NodeClaim', 'default-0a1b2c3d4e') },
        { id: 'm3', message: deletion('Node', 'node-a') },
      ],
    );
    expect(outcome).toEqual({ failed: [] });
    expect(order).toEqual(['relay', 'relay', 'run']);
    expect(queue.receive()).toEqual([{ node: 'node-a' }, { nodeClaim: 'default-0a1b2c3d4e', relayed: true }]);
  });

  it('runs all the same when a deletion cannot be sent on, leaving it to the termination sweep', async () => {
    const world = scenarioWorld();
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { now: () => world.clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
    const steps = provisionerSteps(world, logger, {
      ports: {
        relayDeletion: () => Promise.reject(new QueueSendError('the termination queue refused it')),
      },
    });
    let runs = 0;
    const outcome = await provisionForMessages(
      {
        ...steps,
        provision: (h, t) => {
          runs += 1;
          return steps.provision(h, t);
        },
      },
      'invocation-1',
      [{ id: 'm1', message: deletion('Node', 'node-a') }],
    );
    expect(outcome).toEqual({ failed: [] });
    expect(runs).toBe(1);
    expect(lines.filter((l) => l['message'] === 'deletion not relayed to termination')).toEqual([
      expect.objectContaining({ level: 'warn', object: 'Node/node-a', fallback: 'termination sweep' }),
    ]);
  });

  it('sends nothing on in a shadow stack, which has no termination', async () => {
    const world = scenarioWorld();
    const queue = makeMemoryTerminationQueue(world.clock);
    const logger = makeLogger({}, { now: () => world.clock.now(), sink: () => undefined });
    const steps = provisionerSteps(world, logger, {
      ports: { relayDeletion: (request) => queue.enqueue(request, 0) },
      config: { shadow: true },
    });
    expect(steps.relayDeletions).toBeUndefined();
    await provisionForMessages(steps, 'invocation-1', [{ id: 'm1', message: deletion('Node', 'node-a') }]);
    expect(queue.size()).toBe(0);
  });
});
