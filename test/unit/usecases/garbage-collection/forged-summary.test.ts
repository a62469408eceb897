// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import { INSTANCE_LOOKUP_WINDOW_MS } from '../../../../shared/ports/cloud.ts';
import { ORPHAN_MIN_AGE_MS } from '../../../../shared/usecases/garbage-collection/garbage-collection.ts';
import { setUpGarbageCollector } from '../../../../shared/usecases/garbage-collection/setup.ts';
import { field, named, type RawObject } from '../../../fixtures/forged-summary.ts';
import { forgedSummaryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// Garbage collection over a forged cluster summary: what the summary lists chooses what to look
// at, and every deletion is decided again on the API server's own NodeClaim and Node.

const CLUSTER = 'gc-forged';
const T0 = Date.parse('2026-11-21T10:00:00Z');
const NOWHERE = 'aws:///us-east-1a/i-0123456789abcdef0';

function world() {
  const { clock, memory, cloud, logger, metrics, instance, logged, forged } = forgedSummaryWorld(
    CLUSTER,
    new Date(T0),
  );
  /** A launched NodeClaim with its instance and its Ready Node (the kubelet's), both named `name`. */
  async function live(name: string) {
    const its = instance(name);
    await memory.createNodeClaim(newNodeClaim(name));
    await memory.patchNodeClaimStatus(name, {
      providerId: its.providerId,
      nodeName: name,
      conditions: [
        { type: 'Launched', status: 'True', reason: 'Launched', message: '' },
        { type: 'Registered', status: 'True', reason: 'Registered', message: '' },
      ],
    });
    memory.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      spec: { providerID: its.providerId },
    });
    memory.setNodeReady(name, true);
    return its;
  }
  // The garbage collector as its handler sets it up, its list reads from the forged summary.
  const { pass } = setUpGarbageCollector(
    { cluster: forged.cluster, cloud, logger, metrics, clock },
    { nodeRepair: false },
  );
  const warnings = logged;
  return { clock, memory, cloud, instance, live, forged, pass, warnings };
}

describe('garbage collection over a forged cluster summary', () => {
  it('keeps a live NodeClaim the summary lists with the providerID of an instance that does not exist', async () => {
    const w = world();
    const its = await w.live('live');
    w.clock.advance(INSTANCE_LOOKUP_WINDOW_MS + 60_000);
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'live'), 'status')['providerID'] = NOWHERE;
      },
      // The summary hides its Node too, so nothing in the reading says it is Ready.
      nodes: (nodes) => nodes.splice(0, nodes.length),
    });
    expect(await w.pass()).toEqual({ terminated: [], deletedNodeClaims: [], failed: [] });
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
    expect((await w.cloud.get(its.instanceId))?.state).toBe('running');
    expect(w.warnings('nodeClaim not collected')).toEqual([
      expect.objectContaining({ nodeClaim: 'live', listedInstanceId: 'i-0123456789abcdef0' }),
    ]);
  });

  it('keeps a NodeClaim the summary shows launched long ago when the API server’s is within the lookup window', async () => {
    const w = world();
    const its = await w.live('young');
    w.memory.setNodeReady('young', false);
    w.cloud.reclaim(its.instanceId);
    w.forged.publish({
      nodeClaims: (claims) => {
        const claim = named(claims, 'young');
        field(claim, 'metadata')['creationTimestamp'] = '2020-01-01T00:00:00Z';
        for (const c of field(claim, 'status')['conditions'] as RawObject[]) {
          c['lastTransitionTime'] = '2020-01-01T00:00:00Z';
        }
      },
    });
    expect((await w.pass()).deletedNodeClaims).toEqual([]);
    expect((await w.memory.nodeClaim('young'))?.deleting).toBe(false);
  });

  it('still deletes the NodeClaim whose instance is gone when the API server agrees', async () => {
    const w = world();
    const its = await w.live('reclaimed');
    w.memory.setNodeReady('reclaimed', false);
    w.cloud.reclaim(its.instanceId);
    w.clock.advance(INSTANCE_LOOKUP_WINDOW_MS);
    w.forged.publish({});
    expect((await w.pass()).deletedNodeClaims).toEqual(['reclaimed']);
    expect((await w.memory.nodeClaim('reclaimed'))?.deleting).toBe(true);
  });

  it('terminates an orphan but not the live Node the summary names as its', async () => {
    const w = world();
    await w.live('live');
    const orphan = w.instance('gone-claim');
    w.clock.advance(ORPHAN_MIN_AGE_MS);
    w.forged.publish({
      nodes: (nodes) => {
        field(named(nodes, 'live'), 'spec')['providerID'] = orphan.providerId;
      },
    });
    expect((await w.pass()).terminated).toEqual([orphan.instanceId]);
    expect(await w.memory.node('live')).toBeDefined();
    expect(w.warnings('node not deleted with its instance')).toEqual([
      expect.objectContaining({ node: 'live', instanceId: orphan.instanceId }),
    ]);
  });
});
