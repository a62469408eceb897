import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import type { ClusterNode } from '../../../../shared/ports/cluster.ts';
import {
  confirmationChanges,
  poolRead,
  readConfirmed,
  withConfirmed,
  withConsistentNodes,
} from '../../../../shared/usecases/state/confirm.ts';
import { podManifest } from '../../../fixtures/builders.ts';
import { nodeManifest } from '../../../fixtures/nodes.ts';

// Confirmed state: the Nodes a decision counts on, read again from the API server (the in-memory
// one) in place of what a list read said of them.

/** Pod `name` running on Node `nodeName`, asking 1 CPU. */
const runningPod = (name: string, nodeName: string) =>
  podManifest(name, { nodeName, cpu: '1', phase: 'Running' });

function world() {
  const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-11-26T12:00:00Z')) });
  cluster.create(nodeManifest('real'));
  cluster.create(runningPod('a', 'real'));
  cluster.create(runningPod('b', 'real'));
  return cluster;
}

describe('confirming listed Nodes with the API server', () => {
  it('reads a listed Node the API server does not have as gone, and removes it from the state', async () => {
    const cluster = world();
    const listed = (await cluster.nodes()).items;
    const phantom: ClusterNode = { ...(listed[0] as ClusterNode), name: 'phantom', uid: 'uid-phantom' };
    const state = { nodes: [...listed, phantom], nodeClaims: [] };

    const read = await readConfirmed(cluster, { nodes: ['phantom', 'real'], nodeClaims: [] });

    expect(read.nodes.get('phantom')).toBeUndefined();
    expect(
      read.nodes
        .get('real')
        ?.pods.map((p) => p.name)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(confirmationChanges(state, read)).toEqual({ gone: ['node/phantom'], changed: [] });
    expect(withConfirmed(state, read).nodes.map((n) => n.name)).toEqual(['real']);
  });

  it('takes the pods bound to a Node, and what they request, as the API server has them, whatever the list said', async () => {
    const cluster = world();
    const listed = (await cluster.nodes()).items.map((n) => ({
      ...n,
      pods: n.pods.filter((p) => p.name === 'a'),
    }));
    cluster.setPodPhase('default', 'b', 'Succeeded');
    cluster.create(runningPod('c', 'real'));

    const read = await readConfirmed(cluster, { nodes: ['real'], nodeClaims: [] });

    const node = read.nodes.get('real');
    // The finished pod takes no room; the one the list did not know takes what it requests.
    expect(node?.pods.map((p) => p.name).sort()).toEqual(['a', 'c']);
    expect(node?.unreadablePods).toBeUndefined();
    expect(confirmationChanges({ nodes: listed, nodeClaims: [] }, read).changed).toEqual(['node/real']);
  });

  it('takes the API server fields of a Node over the listed ones', async () => {
    const cluster = makeMemoryCluster({ clock: makeManualClock(new Date('2026-11-26T12:00:00Z')) });
    cluster.create(nodeManifest('real', { unschedulable: true }));
    const listed = (await cluster.nodes()).items.map((n) => ({ ...n, unschedulable: false }));

    const read = await readConfirmed(cluster, { nodes: ['real'], nodeClaims: [] });

    expect(withConfirmed({ nodes: listed, nodeClaims: [] }, read).nodes[0]?.unschedulable).toBe(true);
  });

  it('replaces the Nodes with one consistent list, keeping the listed pods of those it has', async () => {
    const cluster = world();
    cluster.create(nodeManifest('unlisted'));
    const listed = (await cluster.nodes()).items.filter((n) => n.name === 'real');
    const phantom: ClusterNode = { ...(listed[0] as ClusterNode), name: 'phantom' };
    const infos = (await cluster.nodeInfos({ consistent: true })).items;

    const state = withConsistentNodes({ nodes: [...listed, phantom], nodeClaims: [] }, infos);

    expect(state.nodes.map((n) => [n.name, n.pods.length, (n.unreadablePods ?? []).length])).toEqual([
      ['real', 2, 0],
      ['unlisted', 0, 1],
    ]);
  });

  it('reads one NodePool with its own list, leaving the Nodes of other pools as listed', async () => {
    const cluster = world();
    const inPool = (name: string) =>
      nodeManifest(name, { labels: { 'kubernetes.io/hostname': name, 'karpenter.sh/nodepool': 'od' } });
    cluster.create(inPool('pooled'));
    cluster.create(inPool('unlisted'));
    const all = (await cluster.nodes()).items;
    const pooled = all.find((n) => n.name === 'pooled') as ClusterNode;
    const phantom: ClusterNode = { ...pooled, name: 'phantom' };
    const listed = { nodes: [...all.filter((n) => n.name !== 'unlisted'), phantom], nodeClaims: [] };
    const infos = (await cluster.nodeInfos({ consistent: true, nodePool: 'od' })).items;

    const read = poolRead(listed, 'od', infos);
    const state = withConfirmed(listed, read);

    expect(state.nodes.map((n) => [n.name, n.pods.length, (n.unreadablePods ?? []).length])).toEqual([
      ['real', 2, 0],
      ['pooled', 0, 0],
      ['unlisted', 0, 1],
    ]);
    expect(confirmationChanges(listed, read)).toEqual({ gone: ['node/phantom'], changed: ['node/unlisted'] });
  });
});
