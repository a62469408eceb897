// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import { DISRUPTED_TAINT } from '../../../../shared/core/index.ts';
import { sweepTerminations } from '../../../../shared/usecases/termination/node-deletion.ts';
import { terminateNodeClaim } from '../../../../shared/usecases/termination/termination.ts';
import { field, named } from '../../../fixtures/forged-summary.ts';
import { forgedSummaryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// The termination sweep over a forged cluster summary: a Node the summary says is being deleted
// gets its NodeClaim deleted, its instance terminated or its finalizer released only when the API
// server says so too, and a NodeClaim the summary says is deleting is drained only when it is.

const CLUSTER = 'sweep-forged';
const DELETED_AT = '2026-11-26T11:59:00Z';

function world() {
  const { clock, memory, cloud, logger, metrics, instance, logged, forged } = forgedSummaryWorld(
    CLUSTER,
    new Date('2026-11-26T12:00:00Z'),
  );
  const node = (name: string, providerID: string) => {
    memory.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, finalizers: ['karpenter.sh/termination'] },
      spec: { providerID },
    });
    memory.setNodeReady(name, true);
  };
  /** A registered NodeClaim `name` on Node `node-<name>`, its instance running. */
  async function live(name: string) {
    const its = instance(name);
    await memory.createNodeClaim(newNodeClaim(name));
    node(`node-${name}`, its.providerId);
    await memory.patchNodeClaimStatus(name, {
      providerId: its.providerId,
      nodeName: `node-${name}`,
      conditions: [],
    });
    return its;
  }
  const ports = { cluster: forged.cluster, cloud, logger, metrics };
  const sweep = () => sweepTerminations(ports);
  return { clock, memory, cloud, instance, node, live, forged, ports, sweep, logged };
}

describe('the termination sweep over a forged cluster summary', () => {
  it('does not delete the NodeClaim of a Node the summary says is being deleted when the API server does not', async () => {
    const w = world();
    const its = await w.live('live');
    w.forged.publish({
      nodes: (nodes) => {
        field(named(nodes, 'node-live'), 'metadata')['deletionTimestamp'] = DELETED_AT;
      },
    });
    expect(await w.sweep()).toEqual({ terminating: [], deletedForNodes: [], releasedNodes: [] });
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
    expect((await w.cloud.get(its.instanceId))?.state).toBe('running');
    expect(w.logged('node not terminated')).toEqual([expect.objectContaining({ node: 'node-live' })]);
  });

  it('does not terminate the instance of a Node the summary says is being deleted without a NodeClaim', async () => {
    const w = world();
    const its = w.instance('lost');
    w.node('node-lost', its.providerId);
    w.forged.publish({
      nodes: (nodes) => {
        field(named(nodes, 'node-lost'), 'metadata')['deletionTimestamp'] = DELETED_AT;
      },
    });
    expect(await w.sweep()).toEqual({ terminating: [], deletedForNodes: [], releasedNodes: [] });
    expect((await w.cloud.get(its.instanceId))?.state).toBe('running');
    expect((await w.memory.node('node-lost'))?.finalizers).toEqual(['karpenter.sh/termination']);
  });

  it('does not delete a live NodeClaim the summary ties to a Node that is being deleted', async () => {
    const w = world();
    await w.live('live');
    const lost = w.instance('lost');
    w.node('node-lost', lost.providerId);
    await w.memory.deleteNode('node-lost');
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'live'), 'status')['providerID'] = lost.providerId;
      },
    });
    expect((await w.sweep()).deletedForNodes).toEqual([]);
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
    expect(w.logged('nodeClaim not deleted for its node')).toEqual([
      expect.objectContaining({ node: 'node-lost', nodeClaim: 'live' }),
    ]);
  });

  it('does not taint or drain a NodeClaim the summary says is deleting (the pass reads it by name)', async () => {
    const w = world();
    await w.live('live');
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'live'), 'metadata')['deletionTimestamp'] = DELETED_AT;
      },
    });
    const { terminating } = await w.sweep();
    expect(terminating).toEqual(['live']);
    expect(await terminateNodeClaim(w.ports, 'live', w.clock.now())).toEqual({
      kind: 'skipped',
      nodeClaim: 'live',
      why: 'nodeClaim is not being deleted',
    });
    expect((await w.memory.node('node-live'))?.taints ?? []).not.toContainEqual(
      expect.objectContaining({ key: DISRUPTED_TAINT.key }),
    );
  });

  it('still deletes the NodeClaim of a Node the API server has being deleted', async () => {
    const w = world();
    await w.live('live');
    await w.memory.deleteNode('node-live');
    w.forged.publish({});
    expect((await w.sweep()).deletedForNodes).toEqual(['live']);
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(true);
  });
});
