import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { describeClusterContract } from '../../contract/cluster-contract.ts';

/** A ReplicaSet or Job as the contract seeds it. */
interface OwnerObject {
  readonly metadata: { readonly uid: string };
  readonly spec: {
    readonly template: {
      readonly metadata?: { readonly labels?: Record<string, string> };
      readonly spec: { readonly nodeName: string } & Record<string, unknown>;
    };
  };
}

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
    async runOwnedPods(kind, name, count) {
      const owner = cluster.get(kind, name, namespace) as unknown as OwnerObject;
      const owned = () =>
        (cluster.list('Pod') as unknown as V1Pod[]).filter(
          (p) =>
            p.metadata?.deletionTimestamp === undefined &&
            (p.metadata?.ownerReferences ?? []).some((o) => o.uid === owner.metadata.uid),
        );
      // As the ReplicaSet or Job controller: the missing pods from the template, bound by its nodeName.
      for (let seq = owned().length; owned().length < count; seq++) {
        const podName = `${name}-${seq}`;
        if (cluster.get('Pod', podName, namespace) !== undefined) continue;
        const { nodeName, ...spec } = owner.spec.template.spec;
        cluster.create({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: podName,
            namespace,
            labels: owner.spec.template.metadata?.labels ?? {},
            ownerReferences: [
              {
                apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1',
                kind,
                name,
                uid: owner.metadata.uid,
                controller: true,
              },
            ],
          },
          spec,
        });
        cluster.bindPod(namespace, podName, nodeName);
      }
      for (const p of owned()) cluster.setPodPhase(namespace, p.metadata?.name ?? '', 'Running');
      return owned().map((p) => ({ name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '' }));
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
