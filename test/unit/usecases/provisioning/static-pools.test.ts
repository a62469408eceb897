import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { podManifest } from '../../../fixtures/builders.ts';
import { recordingMetrics } from '../../../fixtures/metrics.ts';
import { joinNodes, provisionerSteps, scenarioWorld } from './world.ts';

// Static NodePools in a provisioning run: the run brings each one to its replicas with no pod
// pending, never launches for pods on it, caps it by limits.nodes, removes a surplus through
// termination, empty nodes first, and waits while the runaway guard pauses the pool's launches.
// With Karpenter's StaticCapacity feature gate off (its default) it keeps nothing and says so.

function staticPool(replicas: number, limits?: Record<string, string>, annotations?: Record<string, string>) {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'fixed', ...(annotations === undefined ? {} : { annotations }) },
    spec: {
      replicas,
      ...(limits === undefined ? {} : { limits }),
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm'] },
          ],
        },
      },
    },
  };
}

/** A pending pod kube-scheduler found no node for, that only the static pool `fixed` may host. */
function pinnedPod(cluster: ReturnType<typeof scenarioWorld>['cluster'], name: string, cpu: string): void {
  cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeSelector: { 'karpenter.sh/nodepool': 'fixed' },
      containers: [{ name: 'app', image: 'app', resources: { requests: { cpu, memory: '1Gi' } } }],
    },
  });
  cluster.markPodUnschedulable('default', name, '0/1 nodes are available');
}

function makeWorld(
  replicas: number,
  limits?: Record<string, string>,
  gates: { readonly staticCapacity?: boolean; readonly nodeOverlay?: boolean } = {},
  annotations?: Record<string, string>,
) {
  const world = scenarioWorld();
  const { clock, cluster } = world;
  cluster.create(staticPool(replicas, limits, annotations));
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const metrics = recordingMetrics({ cluster: 'static-test', clock });
  const terminated: string[] = [];
  const provisioner = provisionerSteps(world, logger, {
    // Karpenter's StaticCapacity feature gate, off by default.
    config: { staticCapacity: gates.staticCapacity ?? true, nodeOverlay: gates.nodeOverlay ?? false },
    ports: {
      metrics,
      requestTermination: async (name) => {
        terminated.push(name);
      },
    },
  });
  let runs = 0;
  const run = () => provisioner.provision(`run-${++runs}`);
  const fixedClaims = async () =>
    (await cluster.nodeClaims()).items.filter((c) => c.nodePoolName === 'fixed' && !c.deleting);
  const decisions = (kind: string) => lines.filter((l) => l['decision'] === kind);
  return { ...world, run, provisioner, fixedClaims, decisions, terminated, logger, metrics };
}

describe('a static NodePool with the StaticCapacity feature gate off', () => {
  it('gets no replicas, its surplus is kept and pods do not launch nodes in it; each run says so', async () => {
    const w = makeWorld(2, undefined, { staticCapacity: false });
    const first = await w.run();
    expect(first.kind).toBe('skipped');
    expect(await w.fixedClaims()).toEqual([]);
    expect(w.decisions('launch')).toEqual([]);
    expect(w.decisions('staticCapacity')).toEqual([
      expect.objectContaining({
        action: 'disabled',
        nodePool: 'fixed',
        replicas: 2,
        current: 0,
        count: 0,
        reason: expect.stringContaining('StaticCapacity feature gate is off'),
      }),
    ]);
    // A pod only the static pool could host stays pending: no NodeClaim for it.
    pinnedPod(w.cluster, 'pinned', '1');
    const second = await w.run();
    expect(second.kind === 'provisioned' ? second.claims : []).toEqual([]);
    expect(await w.fixedClaims()).toEqual([]);
    expect(w.decisions('staticCapacity')).toHaveLength(2);
  });

  it('the same pool with the gate on is brought to its replicas', async () => {
    const w = makeWorld(2, undefined, { staticCapacity: true });
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(2);
    expect(w.decisions('staticCapacity')).toEqual([expect.objectContaining({ action: 'launch' })]);
  });
});

describe('a static NodePool in a provisioning run', () => {
  it('launches its replicas with no pod pending, once, however many runs there are', async () => {
    const w = makeWorld(2);
    const [a, b] = await Promise.all([w.run(), w.run()]);
    expect([a.kind, b.kind].sort()).toEqual(['provisioned', 'skipped']);
    expect(await w.fixedClaims()).toHaveLength(2);
    const launches = w.decisions('launch').filter((l) => l['nodePool'] === 'fixed');
    expect(launches.map((l) => [l['reason'], l['outcome']])).toEqual([
      ['static', 'launched'],
      ['static', 'launched'],
    ]);
    // The cheapest offering the pool's requirements allow (c and m only, on-demand).
    for (const l of launches) expect(String(l['instanceType'])).toMatch(/^[cm]/);
    expect(w.decisions('staticCapacity')).toEqual([
      expect.objectContaining({ action: 'launch', nodePool: 'fixed', replicas: 2, current: 0, count: 2 }),
    ]);
    // Each replica is a NodeClaim created for the static reason, in the pool's series.
    const created = w.metrics.points.filter(
      (p) => p.name === 'karpenter_nodeclaims_created_total' && p.dimensions.nodepool === 'fixed',
    );
    // Karpenter's reason for a static NodePool's replica too.
    const replica = {
      cluster: 'static-test',
      nodepool: 'fixed',
      reason: 'provisioned',
      min_values_relaxed: 'false',
    };
    expect(created.map((p) => [p.dimensions, p.values])).toEqual([
      [replica, [1]],
      [replica, [1]],
    ]);

    // A later run finds the replicas there and decides nothing about the pool.
    const again = await w.run();
    expect(again.kind).toBe('skipped');
    expect(await w.fixedClaims()).toHaveLength(2);
    expect(w.decisions('staticCapacity')).toHaveLength(1);
  });

  it('holds no more NodeClaims than limits.nodes allows', async () => {
    const w = makeWorld(3, { nodes: '1' });
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(1);
    expect(w.decisions('staticCapacity')).toEqual([
      expect.objectContaining({ action: 'launch', count: 1, limitedBy: 'limits.nodes' }),
    ]);
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(1);
    expect(w.decisions('staticCapacity')[1]).toMatchObject({
      action: 'atLimit',
      reason: expect.stringMatching(/limits.nodes 1/),
    });
  });

  it('launches nothing for pods that only it could host', async () => {
    const w = makeWorld(1);
    await w.run();
    // Four cpus on a pool whose replica is the cheapest c or m type: only a new node of the pool
    // would fit the pod, and a static pool launches none for pods.
    pinnedPod(w.cluster, 'big', '4');
    const result = await w.run();
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.claims).toEqual([]);
    expect(await w.fixedClaims()).toHaveLength(1);
    expect(result.unschedulable.map((u) => u.pod.name)).toEqual(['big']);
    expect(result.skippedNodePools).toContainEqual({
      nodePool: 'fixed',
      reason: expect.stringMatching(/static \(spec.replicas\)/),
    });
  });

  it('scales down to its new replicas through termination, empty nodes first', async () => {
    const w = makeWorld(3);
    await w.run();
    const claims = await w.fixedClaims();
    expect(claims).toHaveLength(3);
    // The nodes join; a pod runs on the first one.
    await joinNodes(w);
    const nodes = (await w.cluster.nodes()).items.filter((n) => n.nodePoolName === 'fixed');
    expect(nodes).toHaveLength(3);
    const busy = claims.find((c) => c.status.providerId === nodes[0]?.providerId);
    w.cluster.create(
      podManifest('web', {
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
        ],
      }),
    );
    w.cluster.bindPod('default', 'web', nodes[0]?.name ?? '');

    const spec = (w.cluster.get('NodePool', 'fixed') as { spec: Record<string, unknown> }).spec;
    w.cluster.replaceSpec('NodePool', 'fixed', { ...spec, replicas: 1 });
    const result = await w.run();
    expect(result.kind === 'provisioned' && result.staticDeleted).toHaveLength(2);
    const left = await w.fixedClaims();
    expect(left.map((c) => c.name)).toEqual([busy?.name]);
    expect([...w.terminated].sort()).toEqual(
      claims
        .filter((c) => c !== busy)
        .map((c) => c.name)
        .sort(),
    );
    expect(w.decisions('staticCapacity').at(-1)).toMatchObject({
      action: 'delete',
      replicas: 1,
      current: 3,
      count: 2,
    });
  });
});

describe('a static NodePool with a window of replicas (flotilla.io/schedules)', () => {
  it('holds the window’s replicas while it is open, and spec.replicas again once it closes', async () => {
    // The world starts at 2026-01-01T00:00Z; the window is open from 01:00 to 02:00 UTC.
    const window = [{ name: 'night', start: '0 1 * * *', end: '0 2 * * *', timeZone: 'UTC', replicas: 1 }];
    const w = makeWorld(3, undefined, {}, { 'flotilla.io/schedules': JSON.stringify(window) });
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(3);
    await joinNodes(w);

    w.clock.advance(60 * 60_000);
    const held = await w.run();
    expect(held.kind === 'provisioned' && held.staticDeleted).toHaveLength(2);
    expect(await w.fixedClaims()).toHaveLength(1);
    const holds = 'schedule "night" holds replicas 1 until 2026-01-01T02:00:00Z (02:00 UTC)';
    expect(w.decisions('staticCapacity').at(-1)).toMatchObject({
      action: 'delete',
      replicas: 1,
      current: 3,
      count: 2,
      replicasHeldBy: holds,
      reason: `3 nodeClaims, 1 replicas (${holds})`,
    });
    // While it holds, a run keeps one.
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(1);

    w.clock.advance(60 * 60_000);
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(3);
    expect(w.decisions('staticCapacity').at(-1)).toMatchObject({ action: 'launch', replicas: 3, count: 2 });
    expect(w.decisions('staticCapacity').at(-1)?.['replicasHeldBy']).toBeUndefined();
  });

  it('launches and removes nothing for its replicas while its schedules do not read', async () => {
    const w = makeWorld(2, undefined, {}, { 'flotilla.io/schedules': '[{' });
    await w.run();
    expect(await w.fixedClaims()).toEqual([]);
    expect(w.decisions('staticCapacity')).toEqual([]);
  });
});

describe('a static NodePool that cannot launch', () => {
  it('says why in its decision and a Warning Event on the NodePool, and the run goes on', async () => {
    const w = makeWorld(2);
    const spec = (
      w.cluster.get('NodePool', 'fixed') as { spec: { template: { spec: Record<string, unknown> } } }
    ).spec;
    w.cluster.replaceSpec('NodePool', 'fixed', {
      ...spec,
      template: {
        ...spec.template,
        spec: {
          ...spec.template.spec,
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'missing' },
        },
      },
    });
    const result = await w.run();
    expect(result.kind).toBe('skipped');
    expect(await w.fixedClaims()).toHaveLength(0);
    expect(w.decisions('staticCapacity')).toEqual([
      expect.objectContaining({ action: 'blocked', count: 0, reason: expect.stringMatching(/not Ready/) }),
    ]);
    expect(w.cluster.events().map((e) => e.event)).toContainEqual(
      expect.objectContaining({
        subject: { kind: 'NodePool', name: 'fixed' },
        reason: 'StaticCapacityBlocked',
        type: 'Warning',
        message: expect.stringMatching(/holds 0 of 2 replicas/),
      }),
    );
  });
});

describe('a static NodePool next to a NodeClaim that cannot be read', () => {
  it('launches nothing while it might be one of its own, and says so', async () => {
    const w = makeWorld(1);
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'fixed-unreadable', labels: { 'karpenter.sh/nodepool': 'fixed' } },
      spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' } },
    });
    expect((await w.cluster.nodeClaims()).unreadable.map((u) => u.name)).toEqual(['fixed-unreadable']);
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(0);
    expect(w.decisions('staticCapacity')).toEqual([
      expect.objectContaining({
        action: 'blocked',
        reason: expect.stringMatching(/nodeClaim "fixed-unreadable" cannot be read/),
      }),
    ]);
  });
});

describe('a static NodePool next to NodeClaims that cannot be its own', () => {
  it('launches its replicas beside a NodeClaim made outside every NodePool and one of another pool', async () => {
    const w = makeWorld(1);
    const nodeClassRef = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };
    // Made by hand: no karpenter.sh/nodepool label at all.
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'by-hand' },
      spec: { nodeClassRef },
    });
    // Unreadable, but labelled for another NodePool.
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'other-unreadable', labels: { 'karpenter.sh/nodepool': 'other' } },
      spec: { nodeClassRef },
    });
    const read = await w.cluster.nodeClaims();
    expect(read.unreadable.map((u) => [u.name, u.standalone ?? false])).toEqual([
      ['by-hand', true],
      ['other-unreadable', false],
    ]);
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(1);
    expect(w.decisions('staticCapacity')).toEqual([expect.objectContaining({ action: 'launch' })]);
  });
});

describe('a static NodePool whose NodeClaims keep failing', () => {
  it('launches nothing while the runaway guard pauses it, then one probe', async () => {
    const w = makeWorld(2);
    await w.run();
    const first = await w.fixedClaims();
    expect(first).toHaveLength(2);
    // No kubelet ever registers their nodes: the lifecycle deletes both for the registration
    // timeout, and the runaway guard pauses the pool's launches.
    w.clock.advance(16 * 60_000);
    const lifecycle = await w.provisioner.reconcileLifecycle('lifecycle-1');
    expect(lifecycle.deleted.map((d) => d.reason)).toEqual(['registration_timeout', 'registration_timeout']);
    expect(w.decisions('launchBackoff')).toEqual([
      expect.objectContaining({ action: 'start', nodePool: 'fixed', reason: 'RegistrationTimeout' }),
    ]);

    // Short of both replicas, the pool waits as a dynamic one would, and says why.
    await w.run();
    expect(await w.fixedClaims()).toEqual([]);
    expect(w.decisions('staticCapacity').at(-1)).toMatchObject({
      action: 'blocked',
      count: 0,
      current: 0,
      reason: expect.stringMatching(/^launches paused until .* after 1 failed NodeClaim\(s\) in a row/),
    });
    expect(w.cluster.events().map((e) => e.event)).toContainEqual(
      expect.objectContaining({
        subject: { kind: 'NodePool', name: 'fixed' },
        reason: 'StaticCapacityBlocked',
        type: 'Warning',
        message: expect.stringMatching(/^static NodePool holds 0 of 2 replicas: launches paused until /),
      }),
    );

    // Once the pause is over, one NodeClaim (a probe) launches, not both.
    w.clock.advance(2 * 60_000);
    await w.run();
    expect(await w.fixedClaims()).toHaveLength(1);
    expect(w.decisions('staticCapacity').at(-1)).toMatchObject({
      action: 'launch',
      count: 1,
      limitedBy: 'launchBackoff',
    });
  });
});

describe('a static NodePool with a NodeOverlay', () => {
  it('launches its replicas as the type the overlay prices cheapest, with the NodeOverlay gate on', async () => {
    const w = makeWorld(1, undefined, { nodeOverlay: true });
    w.cluster.create({
      apiVersion: 'karpenter.sh/v1alpha1',
      kind: 'NodeOverlay',
      metadata: { name: 'reserved-m6a' },
      spec: {
        requirements: [
          { key: 'karpenter.sh/nodepool', operator: 'In', values: ['fixed'] },
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m6a.2xlarge'] },
        ],
        price: '0.0001',
      },
    });
    await w.run();
    const launches = w.decisions('launch').filter((l) => l['nodePool'] === 'fixed');
    expect(launches.map((l) => l['instanceType'])).toEqual(['m6a.2xlarge']);
  });
});
