import { describe, expect, it } from 'vitest';
import { MemoryTag } from '../../../../shared/adapters/memory/index.ts';
import { INSTANCE_LOOKUP_WINDOW_MS } from '../../../../shared/ports/cloud.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import {
  collectGarbage,
  ORPHAN_MIN_AGE_MS,
} from '../../../../shared/usecases/garbage-collection/garbage-collection.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// Garbage collection on the in-memory twins: which instances and NodeClaims one pass collects.

const CLUSTER = 'gc-test';
const T0 = Date.parse('2026-11-21T10:00:00Z');

function world() {
  const {
    clock,
    memory: cluster,
    cloud,
    instance,
    logged,
    logger,
    metrics,
  } = memoryWorld(CLUSTER, new Date(T0));
  async function claim(name: string, providerId?: string): Promise<void> {
    await cluster.createNodeClaim(newNodeClaim(name, { labels: { 'karpenter.sh/capacity-type': 'spot' } }));
    if (providerId !== undefined) {
      await cluster.patchNodeClaimStatus(name, {
        providerId,
        conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
      });
    }
  }
  const pass = () => collectGarbage({ cluster, cloud, logger, metrics }, clock.now());
  const collected = () => logged('garbage collected');
  return { clock, cluster, cloud, instance, claim, pass, collected, metrics };
}

describe('garbage collection', () => {
  it('terminates an instance no NodeClaim accounts for once it is older than 30 s, with one decision line', async () => {
    const w = world();
    const orphan = w.instance('gone-claim');
    w.clock.advance(ORPHAN_MIN_AGE_MS - 1000);
    expect((await w.pass()).terminated).toEqual([]);
    w.clock.advance(1000);
    expect((await w.pass()).terminated).toEqual([orphan.instanceId]);
    expect(await w.cloud.get(orphan.instanceId)).toBeUndefined();
    expect(w.collected()).toEqual([
      expect.objectContaining({
        decision: 'collect',
        reason: 'orphaned instance',
        action: 'terminateInstance',
        instanceId: orphan.instanceId,
        nodeClaim: 'gone-claim',
        ageSeconds: 30,
      }),
    ]);
  });

  it('keeps instances a NodeClaim points to by providerID or by the claim-name tag (a launch not written back yet)', async () => {
    const w = world();
    const byProvider = w.instance('claim-a');
    await w.claim('claim-a', byProvider.providerId);
    const byTag = w.instance('claim-b');
    await w.claim('claim-b');
    w.clock.advance(10 * 60_000);
    expect(await w.pass()).toEqual({ terminated: [], deletedNodeClaims: [], failed: [] });
    expect(await w.cloud.get(byTag.instanceId)).toBeDefined();
  });

  it('never touches an instance without this cluster’s tags', async () => {
    const w = world();
    const foreign = w.cloud.addForeignInstance({ instanceType: 'm5.large', zone: 'us-east-1a' });
    const otherCluster = w.cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      tags: { [MemoryTag.cluster('other')]: 'owned', [MemoryTag.nodePool]: 'default' },
    });
    w.clock.advance(10 * 60_000);
    expect((await w.pass()).terminated).toEqual([]);
    expect(await w.cloud.get(foreign.instanceId)).toBeDefined();
    expect(await w.cloud.get(otherCluster.instanceId)).toBeDefined();
  });

  /**
   * An instance tagged for the NodeClaim `unreadable`, an orphan, an instance with no NodeClaim
   * tag, and the NodeClaim itself without a karpenter.sh/nodepool label (the CRD allows it), so it
   * cannot be read; `providerID` is what its status says.
   */
  function unreadableWorld(providerID: (its: { providerId: string }) => unknown) {
    const w = world();
    const its = w.instance('unreadable');
    const orphan = w.instance('gone-claim');
    const untagged = w.cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1a',
      tags: { [MemoryTag.cluster(CLUSTER)]: 'owned', [MemoryTag.nodePool]: 'default' },
    });
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'unreadable', labels: {} },
      spec: { nodeClassRef: 'default', requirements: 'all' },
      status: { providerID: providerID(its) },
    });
    w.clock.advance(10 * 60_000);
    return { ...w, its, orphan, untagged };
  }

  it('spares only the instance an unreadable NodeClaim points to, and collects the other orphans', async () => {
    const w = unreadableWorld((its) => its.providerId);
    expect([...(await w.pass()).terminated].sort()).toEqual(
      [w.orphan.instanceId, w.untagged.instanceId].sort(),
    );
    expect(await w.cloud.get(w.its.instanceId)).toBeDefined();
  });

  it('with the providerID unreadable too, spares the instances tagged with its name and those without a NodeClaim tag', async () => {
    const w = unreadableWorld(() => 42);
    expect((await w.pass()).terminated).toEqual([w.orphan.instanceId]);
    expect(await w.cloud.get(w.its.instanceId)).toBeDefined();
    expect(await w.cloud.get(w.untagged.instanceId)).toBeDefined();
  });

  it('deletes a NodeClaim whose instance is gone, once the lookup window has passed', async () => {
    const w = world();
    const instance = w.instance('reclaimed');
    await w.claim('reclaimed', instance.providerId);
    w.cloud.reclaim(instance.instanceId);
    expect((await w.pass()).deletedNodeClaims).toEqual([]);
    w.clock.advance(INSTANCE_LOOKUP_WINDOW_MS);
    expect((await w.pass()).deletedNodeClaims).toEqual(['reclaimed']);
    expect((await w.cluster.nodeClaim('reclaimed'))?.deleting).toBe(true);
    expect(w.collected()).toEqual([
      expect.objectContaining({
        reason: 'instance gone',
        action: 'deleteNodeClaim',
        nodeClaim: 'reclaimed',
        instanceState: 'not found',
        capacityType: 'spot',
        handedOver: 'termination sweep',
      }),
    ]);
    // Karpenter's garbage-collected NodeClaim.
    expect(
      w.metrics.points
        .filter((p) => p.name === 'karpenter_nodeclaims_disrupted_total')
        .map((p) => [p.dimensions['reason'], p.dimensions['capacity_type'], p.values]),
    ).toEqual([['garbage_collected', 'spot', [1]]]);
    // Deleting already: the next pass leaves it to termination.
    expect((await w.pass()).deletedNodeClaims).toEqual([]);
  });

  it('a step that fails is reported and the others still happen', async () => {
    const w = world();
    const first = w.instance('a');
    const second = w.instance('b');
    w.clock.advance(ORPHAN_MIN_AGE_MS);
    const refused = new Error('throttled');
    const cloud = {
      ...w.cloud,
      delete: (id: string) => (id === first.instanceId ? Promise.reject(refused) : w.cloud.delete(id)),
    };
    const lines: string[] = [];
    const logger = makeLogger({}, { sink: (l) => lines.push(l) });
    const result = await collectGarbage(
      { cluster: w.cluster, cloud, logger, metrics: quietMetrics },
      w.clock.now(),
    );
    expect(result.terminated).toEqual([second.instanceId]);
    expect(result.failed).toEqual([{ step: `terminateOrphan ${first.instanceId}`, error: refused }]);
  });

  it('an instance terminated always has its decision line, even when its Node cannot be read', async () => {
    const w = world();
    const orphan = w.instance('gone-claim');
    w.cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'orphan-node' },
      spec: { providerID: orphan.providerId },
    });
    w.clock.advance(ORPHAN_MIN_AGE_MS);
    const unreadable = new Error('node read refused');
    const cluster = {
      ...w.cluster,
      node: (name: string) => (name === 'orphan-node' ? Promise.reject(unreadable) : w.cluster.node(name)),
    };
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) });
    const result = await collectGarbage(
      { cluster, cloud: w.cloud, logger, metrics: quietMetrics },
      w.clock.now(),
    );
    expect(result.failed).toEqual([{ step: `terminateOrphan ${orphan.instanceId}`, error: unreadable }]);
    // Each termination that happened has its one decision line; none happened without one.
    const decisions = lines.filter((l) => l['decision'] === 'collect');
    const running = (await w.cloud.get(orphan.instanceId))?.state;
    expect(decisions.length).toBe(running === undefined || running === 'terminated' ? 1 : 0);
    // The next pass, with the Node readable, terminates it and deletes its Node, with one line.
    expect((await w.pass()).terminated).toEqual([orphan.instanceId]);
    expect(await w.cluster.node('orphan-node')).toBeUndefined();
    expect(w.collected()).toEqual([
      expect.objectContaining({ instanceId: orphan.instanceId, node: 'orphan-node' }),
    ]);
  });
});
