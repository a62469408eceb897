import { describe, expect, it } from 'vitest';
import {
  bundledCatalog,
  MemoryTag,
  makeMemoryCloud,
  makeMemoryCluster,
} from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { INSTANCE_LOOKUP_WINDOW_MS } from '../../../shared/ports/cloud.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { collectGarbage, ORPHAN_MIN_AGE_MS } from '../../../shared/usecases/garbage-collection.ts';

// Garbage collection on the in-memory twins: which instances and NodeClaims one pass collects.

const CLUSTER = 'gc-test';
const T0 = Date.parse('2026-11-21T10:00:00Z');

function world() {
  const clock = makeManualClock(new Date(T0));
  const cluster = makeMemoryCluster({ clock });
  const cloud = makeMemoryCloud({
    clock,
    clusterName: CLUSTER,
    catalog: bundledCatalog('us-east-1', ['us-east-1a']),
  });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const owned = (nodeClaim: string) => ({
    [MemoryTag.cluster(CLUSTER)]: 'owned',
    [MemoryTag.clusterName]: CLUSTER,
    [MemoryTag.nodePool]: 'default',
    [MemoryTag.nodeClass]: 'default',
    [MemoryTag.nodeClaim]: nodeClaim,
  });
  const instance = (nodeClaim: string) =>
    cloud.addForeignInstance({ instanceType: 'm5.large', zone: 'us-east-1a', tags: owned(nodeClaim) });
  async function claim(name: string, providerId?: string): Promise<void> {
    await cluster.createNodeClaim({
      name,
      nodePool: { name: 'default', uid: 'pool-uid' },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      labels: {},
      annotations: {},
      requirements: [],
      requests: {},
      taints: [],
      startupTaints: [],
    });
    if (providerId !== undefined) {
      await cluster.patchNodeClaimStatus(name, {
        providerId,
        conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
      });
    }
  }
  const pass = () => collectGarbage({ cluster, cloud, logger }, clock.now());
  const collected = () => lines.filter((l) => l['message'] === 'garbage collected');
  return { clock, cluster, cloud, instance, claim, pass, collected };
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

  it('takes no instance for an orphan while a NodeClaim cannot be read (it may be its owner)', async () => {
    const w = world();
    // Named differently from the unreadable NodeClaim: which instance is whose cannot be told.
    const instance = w.instance('gone-claim');
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'unreadable', labels: {} },
      spec: { nodeClassRef: 'default', requirements: 'all' },
    });
    w.clock.advance(10 * 60_000);
    expect((await w.pass()).terminated).toEqual([]);
    expect(await w.cloud.get(instance.instanceId)).toBeDefined();
    // The same orphan without the unreadable NodeClaim is collected (the first case above).
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
        handedOver: 'termination sweep',
      }),
    ]);
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
    const result = await collectGarbage({ cluster: w.cluster, cloud, logger }, w.clock.now());
    expect(result.terminated).toEqual([second.instanceId]);
    expect(result.failed).toEqual([{ step: `terminateOrphan ${first.instanceId}`, error: refused }]);
  });
});
