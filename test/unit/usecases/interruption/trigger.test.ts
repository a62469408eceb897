// controller's own test: the interruption controller's NodeClaim, given the status it would have.
import { describe, expect, it } from 'vitest';
import * as memory from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { setUpInterruption } from '../../../../shared/usecases/interruption/setup.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// The interruption controller tells the provisioner of each NodeClaim it begins deleting, so the
// replacements launch while the drain runs; on the in-memory cluster, cloud and termination queue.

async function world(report: (claim: { name: string; uid: string }) => Promise<void>) {
  const clock = makeManualClock(new Date('2026-11-27T00:00:00Z'));
  const cluster = memory.makeMemoryCluster({ clock });
  const cloud = memory.makeMemoryCloud({
    clock,
    clusterName: 'c',
    catalog: memory.bundledCatalog('us-east-1', ['us-east-1a']),
  });
  const warnings: Record<string, unknown>[] = [];
  const logger = makeLogger(
    {},
    {
      sink: (l) => {
        const line = JSON.parse(l) as Record<string, unknown>;
        if (line['level'] === 'warn') warnings.push(line);
      },
    },
  );
  const { instanceId, providerId } = cloud.addForeignInstance({
    instanceType: 'm5.large',
    zone: 'us-east-1a',
    capacityType: 'on-demand',
    tags: {
      [memory.MemoryTag.cluster('c')]: 'owned',
      [memory.MemoryTag.nodePool]: 'default',
      [memory.MemoryTag.nodeClaim]: 'web-1',
    },
  });
  await cluster.createNodeClaim(newNodeClaim('web-1'));
  await cluster.patchNodeClaimStatus('web-1', { providerId, conditions: [] });
  // The interruption Lambda as its handler sets it up, telling the provisioner through `report`.
  const interruption = setUpInterruption({
    cluster,
    cloud,
    terminationQueue: memory.makeMemoryTerminationQueue(clock),
    logger,
    metrics: quietMetrics,
    reportDeletion: report,
  });
  /** The detail-type EC2 sends each event under (the Lambda's parsed message carries it). */
  const detailType = {
    instanceStopped: 'EC2 Instance State-change Notification',
    rebalanceRecommendation: 'EC2 Instance Rebalance Recommendation',
  } as const;
  const interrupt = async (kind: keyof typeof detailType, eventId: string) =>
    interruption.handle(
      {
        kind,
        eventId,
        instanceIds: [instanceId],
        detailType: detailType[kind],
        source: 'aws.ec2',
        time: clock.now().toISOString(),
      },
      await interruption.indexNodeClaims(),
    );
  return { cluster, warnings, interrupt };
}

describe('the provisioner told of an interruption deletion', () => {
  it('once, for the NodeClaim the interruption deletes, not for an Event only nor a repeat', async () => {
    const told: { name: string; uid: string }[] = [];
    const w = await world(async (claim) => {
      told.push(claim);
    });
    await w.interrupt('rebalanceRecommendation', 'e0');
    expect(told).toEqual([]);
    expect(await w.interrupt('instanceStopped', 'e1')).toEqual([
      expect.objectContaining({ nodeClaim: 'web-1', action: 'cordonAndDrain' }),
    ]);
    const claim = await w.cluster.nodeClaim('web-1');
    expect(told).toEqual([{ name: 'web-1', uid: claim?.uid }]);
    expect(await w.interrupt('instanceStopped', 'e2')).toEqual([
      expect.objectContaining({ action: 'alreadyDeleting' }),
    ]);
    expect(told).toHaveLength(1);
  });

  it('that cannot be sent leaves the deletion and its drain done, and says what starts the run instead', async () => {
    const w = await world(() => Promise.reject(new Error('SQS unreachable')));
    expect(await w.interrupt('instanceStopped', 'e1')).toEqual([
      expect.objectContaining({ nodeClaim: 'web-1', action: 'cordonAndDrain' }),
    ]);
    expect((await w.cluster.nodeClaim('web-1'))?.deleting).toBe(true);
    expect(w.warnings).toEqual([
      expect.objectContaining({
        message: 'provisioner not told of the deletion',
        nodeClaim: 'web-1',
        fallback: 'the shim and the pending-pods schedule',
      }),
    ]);
  });
});
