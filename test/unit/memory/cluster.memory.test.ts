import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { describeClusterContract } from '../../contract/cluster-contract.ts';

describeClusterContract('in-memory cluster', async () => {
  const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
  const cluster = makeMemoryCluster({ clock });
  const id = 'mem01';
  const namespace = `contract-${id}`;
  cluster.create({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace, labels: { team: `t-${id}` } },
  });
  const podOf = (manifest: { metadata: { name: string; namespace?: string } }) =>
    cluster.get('Pod', manifest.metadata.name, manifest.metadata.namespace) as { metadata: { uid: string } };
  return {
    cluster,
    clock,
    id,
    namespace,
    async seed(manifest) {
      cluster.create(manifest);
    },
    async seedNode(manifest) {
      cluster.create(manifest);
    },
    async seedUnschedulablePod(manifest) {
      cluster.create(manifest);
      cluster.markPodUnschedulable(namespace, manifest.metadata.name, '0/1 nodes are available');
      return podOf(manifest).metadata.uid;
    },
    async seedRunningPod(manifest, nodeName) {
      cluster.create(manifest);
      cluster.bindPod(namespace, manifest.metadata.name, nodeName);
      cluster.setPodPhase(namespace, manifest.metadata.name, 'Running');
      return podOf(manifest).metadata.uid;
    },
    async finishPod(name) {
      cluster.setPodPhase(namespace, name, 'Succeeded');
    },
    async waitForBudget() {},
    async podEvents(name) {
      return cluster
        .events()
        .filter((e) => e.event.subject.kind === 'Pod' && e.event.subject.name === name)
        .map((e) => ({ reason: e.event.reason, message: e.event.message, count: e.count }));
    },
    async cleanup() {},
  };
});

describe('the in-memory cluster beyond the port', () => {
  it('removes a pending pod at once on delete, and a bound one after marking it terminating', async () => {
    const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
    const cluster = makeMemoryCluster({ clock });
    cluster.create({ kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [] } });
    const uid = (cluster.get('Pod', 'p', 'default') as { metadata: { uid: string } }).metadata.uid;
    await cluster.deletePod({ namespace: 'default', name: 'p', uid }, 30);
    expect(cluster.get('Pod', 'p', 'default')).toBeUndefined();

    cluster.create({ kind: 'Pod', metadata: { name: 'q', namespace: 'default' }, spec: { containers: [] } });
    const q = (cluster.get('Pod', 'q', 'default') as { metadata: { uid: string } }).metadata.uid;
    cluster.bindPod('default', 'q', 'node-a');
    await cluster.deletePod({ namespace: 'default', name: 'q', uid: q }, 30);
    const terminating = (await cluster.podsOnNode('node-a')).items;
    expect(terminating.map((p) => [p.name, p.deletedAtMs])).toEqual([['q', clock.now().getTime()]]);
    cluster.removePod('default', 'q');
    expect((await cluster.podsOnNode('node-a')).items).toEqual([]);
    expect(() => cluster.create({ kind: 'Widget', metadata: { name: 'w' } })).toThrow(/not a kind/);
  });
});
