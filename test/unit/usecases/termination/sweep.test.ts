import { describe, expect, it } from 'vitest';
import {
  bundledCatalog,
  MemoryTag,
  makeMemoryCloud,
  makeMemoryCluster,
} from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { sweepTerminations } from '../../../../shared/usecases/termination/node-deletion.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';

// The termination sweep and a Node deleted with `kubectl delete node` that no NodeClaim it can read
// accounts for: its instance is terminated, unless a NodeClaim that cannot be read may be its own.

const CLUSTER = 'sweep-test';

function world() {
  const clock = makeManualClock(new Date('2026-11-26T12:00:00Z'));
  const cluster = makeMemoryCluster({ clock });
  const cloud = makeMemoryCloud({
    clock,
    clusterName: CLUSTER,
    catalog: bundledCatalog('us-east-1', ['us-east-1a']),
  });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const instance = cloud.addForeignInstance({
    instanceType: 'm5.large',
    zone: 'us-east-1a',
    tags: {
      [MemoryTag.cluster(CLUSTER)]: 'owned',
      [MemoryTag.nodePool]: 'default',
      [MemoryTag.nodeClaim]: 'lost',
    },
  });
  cluster.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-lost', finalizers: ['karpenter.sh/termination'] },
    spec: { providerID: instance.providerId },
  });
  const sweep = () => sweepTerminations({ cluster, cloud, logger, metrics: quietMetrics });
  return { cluster, cloud, instance, lines, logger, sweep };
}

describe('the termination sweep and a deleted Node without a NodeClaim', () => {
  it('terminates its instance when no NodeClaim can be its own', async () => {
    const w = world();
    await w.cluster.deleteNode('node-lost');
    await w.sweep();
    // Terminated instances leave the list at once in the in-memory cloud.
    expect(await w.cloud.get(w.instance.instanceId)).toBeUndefined();
    expect(w.lines.filter((l) => l['reason'] === 'node deleted without a NodeClaim')).toHaveLength(1);
  });

  it.each([
    ['its providerID', (id: string) => id],
    ['no providerID that can be read', () => 7],
  ])(
    'leaves it alone while a NodeClaim that cannot be read, with %s, may be its own',
    async (_, providerID) => {
      const w = world();
      // No karpenter.sh/nodepool label, which the CRD allows: it cannot be read.
      w.cluster.create({
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name: 'unreadable', labels: {} },
        spec: { nodeClassRef: 'default', requirements: 'all' },
        status: { providerID: providerID(w.instance.providerId) },
      });
      await w.cluster.deleteNode('node-lost');
      await w.sweep();
      expect((await w.cloud.get(w.instance.instanceId))?.state).toBe('running');
      expect(w.lines.filter((l) => l['message'] === 'node left alone')).toEqual([
        expect.objectContaining({
          node: 'node-lost',
          why: expect.stringContaining('nodeClaim "unreadable" cannot be read'),
        }),
      ]);
    },
  );

  it('counts a Node an overlapping pass released first as done, not as a failure', async () => {
    const w = world();
    await w.cloud.delete(w.instance.instanceId);
    await w.cluster.deleteNode('node-lost');
    // Another termination pass releases the finalizer between this sweep's read and its write:
    // the Node is gone when the sweep patches it.
    const racing: typeof w.cluster = {
      ...w.cluster,
      async patchNode(name, patch) {
        await w.cluster.patchNode(name, { removeFinalizers: ['karpenter.sh/termination'] });
        return w.cluster.patchNode(name, patch);
      },
    };
    const result = await sweepTerminations({
      cluster: racing,
      cloud: w.cloud,
      logger: w.logger,
      metrics: quietMetrics,
    });
    expect(result.releasedNodes).toEqual([]);
    expect(await w.cluster.node('node-lost')).toBeUndefined();
    expect(w.lines.filter((l) => l['decision'] === 'finalizeNode')).toEqual([]);
  });
});
