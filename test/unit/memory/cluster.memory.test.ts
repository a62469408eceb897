import { describe, expect, it } from 'vitest';
import { makeMemoryCluster, makeMemoryLeaseStore } from '../../../shared/adapters/memory/index.ts';
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
    expect(() => cluster.create({ kind: 'Widget', metadata: { name: 'w' } })).toThrow(/not a kind/);
  });

  it('gives the lease to one holder at a time, with a growing fencing token', async () => {
    const leases = makeMemoryLeaseStore();
    const t0 = new Date('2026-11-21T10:00:00Z');
    const first = await leases.acquire('provisioner', 'a', t0, 30);
    expect(first?.token).toBe(1);
    expect(await leases.acquire('provisioner', 'b', t0, 30)).toBeUndefined();
    expect(await leases.isHeld(first ?? ({} as never), t0)).toBe(true);
    if (first) await leases.release(first);
    const second = await leases.acquire('provisioner', 'b', t0, 30);
    expect(second?.token).toBe(2);
    expect(await leases.isHeld(first ?? ({} as never), t0)).toBe(false);
    const later = new Date(t0.getTime() + 31_000);
    expect(await leases.renew(second ?? ({} as never), later, 30)).toBeUndefined();
  });
});
