import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type MemoryCluster, makeMemoryCluster } from '../../../shared/adapters/memory/index.ts';
import { pdbWithStatus, type ScaledObject } from '../../../shared/adapters/memory/pdb-status.ts';
import { toPodDisruptionBudget } from '../../../shared/apis/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';

// The in-memory cluster's PodDisruptionBudget status, as kube-controller-manager's disruption
// controller computes it: maxUnavailable and percentages against the scale of the pods'
// controllers, integer minAvailable against the pods.

type Owner = { kind: string; name: string; uid: string; apiVersion?: string };

function world() {
  const cluster: MemoryCluster = makeMemoryCluster({
    clock: makeManualClock(new Date('2026-11-21T10:00:00Z')),
  });
  let seq = 0;
  const uidOf = (kind: 'ReplicaSet' | 'Deployment' | 'Pod', name: string) =>
    (cluster.get(kind, name, 'default') as { metadata: { uid: string } }).metadata.uid;
  return {
    cluster,
    uidOf,
    controller(
      kind: 'ReplicaSet' | 'Deployment' | 'StatefulSet',
      name: string,
      replicas: number,
      owner?: Owner,
    ) {
      cluster.create({
        apiVersion: 'apps/v1',
        kind,
        metadata: {
          name,
          namespace: 'default',
          ...(owner === undefined
            ? {}
            : { ownerReferences: [{ apiVersion: 'apps/v1', ...owner, controller: true }] }),
        },
        spec: { replicas },
      });
      return (cluster.get(kind, name, 'default') as { metadata: { uid: string } }).metadata.uid;
    },
    /** A Running, Ready pod labelled app=web on node-a; returns its name. */
    pod(owner?: Owner, ready = true): string {
      seq += 1;
      const name = `web-${seq}`;
      cluster.create({
        kind: 'Pod',
        metadata: {
          name,
          namespace: 'default',
          labels: { app: 'web' },
          ...(owner === undefined
            ? {}
            : { ownerReferences: [{ apiVersion: 'apps/v1', ...owner, controller: true }] }),
        },
        spec: { containers: [] },
      });
      cluster.bindPod('default', name, 'node-a');
      cluster.setPodPhase('default', name, ready ? 'Running' : 'Pending');
      return name;
    },
    budget(spec: Record<string, unknown>) {
      cluster.create({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web', namespace: 'default' },
        spec: { selector: { matchLabels: { app: 'web' } }, ...spec },
      });
    },
    async status() {
      const budgets = (await cluster.podDisruptionBudgets()).items;
      const b = budgets.find((x) => x.name === 'web');
      return {
        expected: b?.expectedPods,
        desired: b?.desiredHealthy,
        healthy: b?.currentHealthy,
        allowed: b?.disruptionsAllowed,
      };
    },
    evict(name: string) {
      return cluster.evictPod({ namespace: 'default', name, uid: uidOf('Pod', name) });
    },
  };
}

describe('PodDisruptionBudget status in the in-memory cluster', () => {
  it('counts maxUnavailable against the ReplicaSet, so evictions use the budget up', async () => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 3) };
    const [a, b] = [w.pod(rs), w.pod(rs), w.pod(rs)];
    w.budget({ maxUnavailable: 1 });
    expect(await w.status()).toEqual({ expected: 3, desired: 2, healthy: 3, allowed: 1 });
    expect(await w.evict(a ?? '')).toBe('evicted');
    // The evicted pod is terminating: no longer healthy, still expected by its ReplicaSet.
    expect(await w.status()).toEqual({ expected: 3, desired: 2, healthy: 2, allowed: 0 });
    expect(await w.evict(b ?? '')).toBe('blocked');
    // A replacement that is not Ready yet changes nothing; once Ready, one more may go.
    const replacement = w.pod(rs, false);
    expect(await w.evict(b ?? '')).toBe('blocked');
    w.cluster.setPodPhase('default', replacement, 'Running');
    expect(await w.status()).toEqual({ expected: 3, desired: 2, healthy: 3, allowed: 1 });
    expect(await w.evict(b ?? '')).toBe('evicted');
  });

  it.each([
    [{ maxUnavailable: '25%' }, 6, { expected: 6, desired: 4, healthy: 6, allowed: 2 }],
    [{ maxUnavailable: 0 }, 3, { expected: 3, desired: 3, healthy: 3, allowed: 0 }],
    [{ minAvailable: '50%' }, 4, { expected: 4, desired: 2, healthy: 4, allowed: 2 }],
    [{ minAvailable: '100%' }, 2, { expected: 2, desired: 2, healthy: 2, allowed: 0 }],
    [{ minAvailable: 1 }, 3, { expected: 3, desired: 1, healthy: 3, allowed: 2 }],
  ])('%o over %i pods of a ReplicaSet', async (spec, replicas, status) => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', replicas) };
    for (let i = 0; i < replicas; i++) w.pod(rs);
    w.budget(spec);
    expect(await w.status()).toEqual(status);
  });

  it('counts a percentage against the ReplicaSet even when pods are missing', async () => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 4) };
    w.pod(rs);
    w.pod(rs);
    w.pod(rs);
    w.budget({ minAvailable: '50%' });
    expect(await w.status()).toEqual({ expected: 4, desired: 2, healthy: 3, allowed: 1 });
  });

  it("counts a Deployment's scale once across its ReplicaSets", async () => {
    const w = world();
    const dep = { kind: 'Deployment', name: 'web', uid: w.controller('Deployment', 'web', 4) };
    const old = { kind: 'ReplicaSet', name: 'web-1', uid: w.controller('ReplicaSet', 'web-1', 1, dep) };
    const next = { kind: 'ReplicaSet', name: 'web-2', uid: w.controller('ReplicaSet', 'web-2', 3, dep) };
    w.pod(old);
    for (let i = 0; i < 3; i++) w.pod(next);
    w.budget({ maxUnavailable: 1 });
    expect(await w.status()).toEqual({ expected: 4, desired: 3, healthy: 4, allowed: 1 });
  });

  it('counts a StatefulSet by its replicas', async () => {
    const w = world();
    const sts = { kind: 'StatefulSet', name: 'db', uid: w.controller('StatefulSet', 'db', 3) };
    for (let i = 0; i < 3; i++) w.pod(sts);
    w.budget({ maxUnavailable: 1 });
    expect(await w.status()).toEqual({ expected: 3, desired: 2, healthy: 3, allowed: 1 });
  });

  it.each([
    ['a Job', { kind: 'Job', name: 'batch', uid: 'job-uid', apiVersion: 'batch/v1' }, /scale subresource/],
    ['a ReplicaSet that does not exist', { kind: 'ReplicaSet', name: 'gone', uid: 'x' }, /no controllers/],
  ])('allows nothing under maxUnavailable when a pod is owned by %s', async (_, owner, message) => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 2) };
    w.pod(rs);
    const other = w.pod(owner);
    w.budget({ maxUnavailable: 1 });
    expect((await w.status()).allowed).toBe(0);
    expect(await w.evict(other)).toBe('blocked');
    // The controller's fail-safe says why on the DisruptionAllowed condition.
    const raw = w.cluster.get('PodDisruptionBudget', 'web', 'default') as V1PodDisruptionBudget;
    const computed = pdbWithStatus(
      raw,
      toPodDisruptionBudget(raw),
      w.cluster.list('Pod') as unknown as V1Pod[],
      (kind, namespace, name) => w.cluster.get(kind, name, namespace) as ScaledObject | undefined,
    );
    expect(computed.status?.conditions).toEqual([
      expect.objectContaining({ type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed' }),
    ]);
    expect(computed.status?.conditions?.[0]?.message).toMatch(message);
  });

  it('leaves pods without a controller out of a scale, and allows nothing when only they are left', async () => {
    const w = world();
    const bare = w.pod();
    w.budget({ maxUnavailable: 1 });
    expect(await w.status()).toEqual({ expected: 0, desired: 0, healthy: 1, allowed: 0 });
    expect(await w.evict(bare)).toBe('blocked');
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 2) };
    w.pod(rs);
    w.pod(rs);
    expect(await w.status()).toEqual({ expected: 2, desired: 1, healthy: 3, allowed: 2 });
  });

  it.each([
    ['AlwaysAllow', 'evicted'],
    ['IfHealthyBudget', 'blocked'],
  ] as const)('under %s at 0 allowed, a Running pod that is not Ready is %s', async (policy, outcome) => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 3) };
    w.pod(rs);
    w.cluster.create({
      kind: 'Pod',
      metadata: {
        name: 'unready',
        namespace: 'default',
        labels: { app: 'web' },
        ownerReferences: [{ apiVersion: 'apps/v1', ...rs, controller: true }],
      },
      spec: { containers: [] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] },
    });
    w.cluster.bindPod('default', 'unready', 'node-a');
    w.budget({ maxUnavailable: 1, unhealthyPodEvictionPolicy: policy });
    // One of three Ready where two must be: the budget is not met.
    expect(await w.status()).toEqual({ expected: 3, desired: 2, healthy: 1, allowed: 0 });
    expect(await w.evict('unready')).toBe(outcome);
  });

  it('allows nothing when a budget sets neither bound', async () => {
    const w = world();
    const rs = { kind: 'ReplicaSet', name: 'web', uid: w.controller('ReplicaSet', 'web', 2) };
    w.pod(rs);
    w.pod(rs);
    w.budget({});
    expect((await w.status()).allowed).toBe(0);
  });
});
