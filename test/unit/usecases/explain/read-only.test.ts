import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { Cluster } from '../../../../shared/ports/cluster.ts';
import {
  CLUSTER_WRITES,
  ignoringWrites,
  ReadOnlyClusterError,
  readOnlyCluster,
} from '../../../../shared/usecases/explain/read-only.ts';

// The read-only view `flotilla explain` runs on: every write of the Cluster port refused, before
// it reaches the cluster; reads passed through.

const pool = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'default' },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [],
      },
    },
  },
};

function world() {
  const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-01-01T00:00:00Z')) });
  cluster.create(pool);
  return cluster;
}

/** Calls the write `method` with arguments that would be valid for a real write. */
function write(view: Cluster, method: string): Promise<unknown> {
  const call = (view as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method];
  if (call === undefined) throw new Error(`no method ${method}`);
  return call('default', { annotations: { a: 'b' } });
}

describe('readOnlyCluster', () => {
  it('lists 14 writes: the Cluster port has no other', () => {
    expect([...CLUSTER_WRITES].sort()).toEqual([
      'createNodeClaim',
      'deleteNode',
      'deleteNodeClaim',
      'deletePod',
      'evictPod',
      'patchNode',
      'patchNodeClaimMetadata',
      'patchNodeClaimStatus',
      'patchNodeClassMetadata',
      'patchNodeClassStatus',
      'patchNodeOverlayStatus',
      'patchNodePoolMetadata',
      'patchNodePoolStatus',
      'recordEvent',
    ]);
  });

  it.each(CLUSTER_WRITES)('%s is refused with ReadOnlyClusterError and nothing changes', async (method) => {
    const cluster = world();
    const before = cluster.revision();
    const view = readOnlyCluster(cluster);
    await expect(write(view, method)).rejects.toThrow(ReadOnlyClusterError);
    await expect(write(view, method)).rejects.toThrow(
      `${method} refused: this view of the cluster is read-only`,
    );
    expect(cluster.revision()).toBe(before);
    expect(cluster.events()).toEqual([]);
  });

  it('passes reads through', async () => {
    const view = readOnlyCluster(world());
    expect((await view.nodePools()).items.map((p) => p.pool.name)).toEqual(['default']);
    expect((await view.nodeClaims()).items).toEqual([]);
  });

  it('is frozen: no method can be swapped for a writing one', () => {
    const view = readOnlyCluster(world());
    expect(Object.isFrozen(view)).toBe(true);
  });
});

describe('ignoringWrites', () => {
  it.each(CLUSTER_WRITES)('%s resolves and nothing changes', async (method) => {
    const cluster = world();
    const before = cluster.revision();
    await expect(write(ignoringWrites(cluster), method)).resolves.not.toBeInstanceOf(Error);
    expect(cluster.revision()).toBe(before);
    expect(cluster.get('NodePool', 'default')?.['metadata']).toEqual(
      expect.not.objectContaining({ annotations: { a: 'b' } }),
    );
  });
});
