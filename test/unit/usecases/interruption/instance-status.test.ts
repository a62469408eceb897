import { describe, expect, it } from 'vitest';
import { MemoryTag, makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import { Annotation } from '../../../../shared/core/index.ts';
import {
  pollInstanceStatus,
  statusInterruptions,
  UNHEALTHY_THRESHOLD_MS,
} from '../../../../shared/usecases/interruption/instance-status.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// EC2's instance status poll on the in-memory cluster and cloud: failed checks replace an instance
// forcefully after 2 minutes, scheduled events drain it gracefully, another cluster's instances are
// left alone.

const CLUSTER = 'status-test';
const T0 = Date.parse('2026-12-03T10:00:00Z');

function makeWorld() {
  const { clock, memory: cluster, cloud, lines, logger, metrics } = memoryWorld(CLUSTER, new Date(T0));
  const terminationQueue = makeMemoryTerminationQueue(clock);
  const ports = {
    cluster,
    cloud,
    terminationQueue,
    logger,
    metrics,
    clock,
    readHealth: cloud.instanceHealth,
  };

  /** A running NodeClaim of this cluster (or, `foreign`, an instance of another); returns its instance id. */
  async function claim(name: string, foreign = false): Promise<string> {
    const instance = cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      launchTime: new Date(T0 - 3_600_000),
      tags: foreign
        ? { [MemoryTag.cluster('other')]: 'owned' }
        : {
            [MemoryTag.cluster(CLUSTER)]: 'owned',
            [MemoryTag.nodePool]: 'default',
            [MemoryTag.nodeClaim]: name,
          },
    });
    if (foreign) return instance.instanceId;
    await cluster.createNodeClaim(
      newNodeClaim(name, { labels: { 'karpenter.sh/capacity-type': 'on-demand' } }),
    );
    await cluster.patchNodeClaimStatus(name, { providerId: instance.providerId, conditions: [] });
    return instance.instanceId;
  }
  return { clock, cluster, cloud, terminationQueue, lines, ports, claim, metrics };
}

describe('statusInterruptions', () => {
  const now = T0;
  it('takes a failed check once it has failed for 2 minutes, and a scheduled event at once', () => {
    expect(
      statusInterruptions(
        [
          {
            instanceId: 'i-new',
            problems: [{ category: 'instanceStatus', name: 'reachability', sinceMs: now - 60_000 }],
          },
          {
            instanceId: 'i-old',
            problems: [
              { category: 'systemStatus', name: 'reachability', sinceMs: now - UNHEALTHY_THRESHOLD_MS },
            ],
          },
          { instanceId: 'i-untimed', problems: [{ category: 'instanceStatus', name: 'reachability' }] },
          { instanceId: 'i-retiring', problems: [{ category: 'eventStatus', name: 'instance-retirement' }] },
          {
            instanceId: 'i-both',
            problems: [
              { category: 'eventStatus', name: 'system-reboot' },
              { category: 'instanceStatus', name: 'reachability', sinceMs: now - 600_000 },
            ],
          },
        ],
        now,
      ),
    ).toEqual([
      { kind: 'systemStatus', eventId: 'status:i-old:systemStatus', instanceIds: ['i-old'] },
      { kind: 'eventStatus', eventId: 'status:i-retiring:eventStatus', instanceIds: ['i-retiring'] },
      { kind: 'instanceStatus', eventId: 'status:i-both:instanceStatus', instanceIds: ['i-both'] },
    ]);
  });
});

describe('pollInstanceStatus', () => {
  it('replaces an impaired instance forcefully, with its termination deadline now', async () => {
    const w = makeWorld();
    const id = await w.claim('broken');
    w.cloud.setInstanceHealth(id, [
      { category: 'instanceStatus', name: 'reachability', sinceMs: T0 - 150_000 },
    ]);
    const result = await pollInstanceStatus(w.ports, T0);
    expect(result.outcomes).toEqual([{ instanceId: id, nodeClaim: 'broken', action: 'forcefulTermination' }]);
    const claim = await w.cluster.nodeClaim('broken');
    expect(claim?.deleting).toBe(true);
    expect(claim?.annotations[Annotation.terminationTimestamp]).toBe('2026-12-03T10:00:00Z');
    expect(claim?.status.conditions.find((c) => c.type === 'DisruptionReason')).toMatchObject({
      status: 'True',
      reason: 'InstanceStatusFailure',
    });
    expect(w.terminationQueue.receive()).toEqual([{ nodeClaim: 'broken' }]);
  });

  it('drains an instance with a scheduled event gracefully, and leaves a check failing for less than 2 minutes', async () => {
    const w = makeWorld();
    const retiring = await w.claim('retiring');
    const flaky = await w.claim('flaky');
    w.cloud.setInstanceHealth(retiring, [{ category: 'eventStatus', name: 'instance-retirement' }]);
    w.cloud.setInstanceHealth(flaky, [
      { category: 'instanceStatus', name: 'reachability', sinceMs: T0 - 30_000 },
    ]);
    const result = await pollInstanceStatus(w.ports, T0);
    expect(result.outcomes).toEqual([
      { instanceId: retiring, nodeClaim: 'retiring', action: 'cordonAndDrain' },
    ]);
    const drained = await w.cluster.nodeClaim('retiring');
    expect(drained?.deleting).toBe(true);
    expect(drained?.annotations[Annotation.terminationTimestamp]).toBeUndefined();
    expect((await w.cluster.nodeClaim('flaky'))?.deleting).toBe(false);
  });

  it("reads no NodeClaim when nothing is reported, and leaves another cluster's instance alone", async () => {
    const w = makeWorld();
    await w.claim('fine');
    expect(await pollInstanceStatus(w.ports, T0)).toEqual({ reported: 0, outcomes: [] });
    const other = await w.claim('theirs', true);
    w.cloud.setInstanceHealth(other, [
      { category: 'systemStatus', name: 'reachability', sinceMs: T0 - 600_000 },
    ]);
    expect(await pollInstanceStatus(w.ports, T0)).toEqual({ reported: 1, outcomes: [] });
    expect((await w.cluster.nodeClaim('fine'))?.deleting).toBe(false);
  });

  it('counts each instance acted on as Karpenter’s unhealthy instance status, and no queue message', async () => {
    const w = makeWorld();
    const broken = await w.claim('broken');
    const retiring = await w.claim('retiring');
    w.cloud.setInstanceHealth(broken, [
      { category: 'systemStatus', name: 'reachability', sinceMs: T0 - 600_000 },
    ]);
    w.cloud.setInstanceHealth(retiring, [{ category: 'eventStatus', name: 'instance-retirement' }]);
    await pollInstanceStatus(w.ports, T0);
    // A second poll finds them deleting already: nothing is counted again.
    await pollInstanceStatus(w.ports, T0 + 60_000);
    const points = (name: string) =>
      w.metrics.points.filter((p) => p.name === name).map((p) => [p.dimensions, p.values[0]]);
    const cluster = { cluster: CLUSTER };
    expect(points('karpenter_interruption_instance_status_unhealthy_total')).toEqual([
      [{ ...cluster, category: 'SystemStatus' }, 1],
      [{ ...cluster, category: 'EventStatus' }, 1],
    ]);
    expect(points('karpenter_nodeclaims_disrupted_total')).toEqual([
      [{ ...cluster, reason: 'system_status', nodepool: 'default', capacity_type: 'on-demand' }, 1],
      [{ ...cluster, reason: 'event_status', nodepool: 'default', capacity_type: 'on-demand' }, 1],
    ]);
    expect(points('karpenter_interruption_received_messages_total')).toEqual([]);
  });

  it('changes nothing on a second poll of the same instance', async () => {
    const w = makeWorld();
    const id = await w.claim('broken');
    w.cloud.setInstanceHealth(id, [
      { category: 'systemStatus', name: 'reachability', sinceMs: T0 - 600_000 },
    ]);
    await pollInstanceStatus(w.ports, T0);
    w.terminationQueue.receive();
    const again = await pollInstanceStatus(w.ports, T0 + 60_000);
    expect(again.outcomes).toEqual([{ instanceId: id, nodeClaim: 'broken', action: 'alreadyDeleting' }]);
    expect(w.terminationQueue.size()).toBe(0);
  });
});
