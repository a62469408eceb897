// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import { MemoryTag, makeMemoryTerminationQueue } from '../../../../shared/adapters/memory/index.ts';
import type { InterruptionMessage } from '../../../../shared/messages/interruption-event.ts';
import { handleInterruption } from '../../../../shared/usecases/interruption/interruption.ts';
import { setUpInterruption } from '../../../../shared/usecases/interruption/setup.ts';
import { field, forgedSummaryCluster, named } from '../../../fixtures/forged-summary.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// Interruption over a forged cluster summary: an event for an instance that is not a live
// NodeClaim's never deletes that NodeClaim, whatever the summary maps to the instance.

const CLUSTER = 'interrupt-forged';
const ELSEWHERE = 'i-0123456789abcdef0';

function world() {
  const { clock, memory, cloud, lines, logger, metrics } = memoryWorld(
    CLUSTER,
    new Date('2026-11-26T12:00:00Z'),
  );
  const terminationQueue = makeMemoryTerminationQueue(clock);
  const forged = forgedSummaryCluster(memory, clock, logger);
  const ports = { cluster: forged.cluster, cloud, terminationQueue, logger, metrics };
  async function live(name: string) {
    const its = cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      tags: { [MemoryTag.cluster(CLUSTER)]: 'owned', [MemoryTag.nodePool]: 'default' },
    });
    await memory.createNodeClaim(newNodeClaim(name));
    await memory.patchNodeClaimStatus(name, { providerId: its.providerId, conditions: [] });
    return its;
  }
  const spot = (instanceId: string): InterruptionMessage => ({
    kind: 'spotInterruption',
    eventId: 'event-1',
    instanceIds: [instanceId],
    detailType: 'EC2 Spot Instance Interruption Warning',
    source: 'aws.ec2',
    time: '2026-11-26T12:00:00Z',
  });
  return { memory, forged, ports, live, spot, terminationQueue, lines };
}

describe('interruption over a forged cluster summary', () => {
  it('an event for another instance does not delete the live NodeClaim the summary maps to it', async () => {
    const w = world();
    await w.live('live');
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'live'), 'status')['providerID'] = `aws:///us-east-1a/${ELSEWHERE}`;
      },
    });
    const deps = setUpInterruption(w.ports);
    await deps.handle(w.spot(ELSEWHERE), await deps.indexNodeClaims());
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
    expect(w.lines).toContainEqual(expect.objectContaining({ action: 'noNodeClaim', instanceId: ELSEWHERE }));
  });

  it('a NodeClaim the index names for the instance is left alone when, read by name, it is another instance’s', async () => {
    const w = world();
    await w.live('live');
    // The index as a listed read may serve it: the NodeClaim under the event's instance.
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'live'), 'status')['providerID'] = `aws:///us-east-1a/${ELSEWHERE}`;
      },
    });
    const listed = (await w.ports.cluster.nodeClaims()).items.find((c) => c.name === 'live');
    expect(listed?.status.providerId).toBe(`aws:///us-east-1a/${ELSEWHERE}`);
    const outcomes = await handleInterruption(
      w.ports,
      w.spot(ELSEWHERE),
      new Map(listed === undefined ? [] : [[ELSEWHERE, listed]]),
    );
    expect(outcomes).toEqual([{ instanceId: ELSEWHERE, action: 'noNodeClaim' }]);
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
    expect(w.lines).toContainEqual(
      expect.objectContaining({
        message: 'interruption not applied to a NodeClaim of another instance',
        nodeClaim: 'live',
      }),
    );
  });

  it('the event for the NodeClaim’s own instance still drains it', async () => {
    const w = world();
    const its = await w.live('live');
    w.forged.publish({});
    const deps = setUpInterruption(w.ports);
    await deps.handle(w.spot(its.instanceId), await deps.indexNodeClaims());
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(true);
  });
});
