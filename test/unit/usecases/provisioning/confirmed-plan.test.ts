import { describe, expect, it } from 'vitest';
import { withClusterSummary } from '../../../../shared/adapters/summary-cluster.ts';
import { encodeSummaryDocument, readSummaryDocument, SummaryBuilder } from '../../../../shared/apis/index.ts';
import type { Cluster } from '../../../../shared/ports/cluster.ts';
import type { ClusterSummary } from '../../../../shared/ports/summary.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import type { ProvisionResult } from '../../../../shared/usecases/provisioning/provision.ts';
import { podManifest } from '../../../fixtures/builders.ts';
import { launchedNodeLabels, nodeManifest } from '../../../fixtures/nodes.ts';
import { addPendingPod, joinNodes, provisionerSteps, scenarioWorld } from './world.ts';

// The provisioner reads its Nodes from the cluster summary, which anyone holding the shim's role
// can write. A pending pod is left to an existing Node only when the API server confirms it: a
// listed Node the API server does not have, or has cordoned, or fuller than listed, takes nothing,
// and the pod gets a launch. The summary here is built with the shim's own builder from what the
// in-memory API server holds, plus what the test forges into it; the provisioner reads it through
// the Lambdas' own decorator (withClusterSummary).

/** A Ready Node of the `on-demand` NodePool, as a kubelet registers it. */
function poolNode(name: string, cpu: string, extra: { taints?: unknown[]; deleting?: boolean } = {}) {
  return nodeManifest(name, {
    labels: launchedNodeLabels(name, { pool: 'on-demand', instanceType: 'm6i.large', initialized: true }),
    cpu,
    memory: '400000Gi',
    ...(extra.taints === undefined ? {} : { taints: extra.taints }),
    ...(extra.deleting === true ? { deletedAt: '2026-01-01T00:00:00Z' } : {}),
  });
}

/** Pod `name` running on Node `nodeName`, asking `cpu` and 512Mi. */
const boundPod = (name: string, nodeName: string, cpu = '500m') =>
  podManifest(name, { nodeName, cpu, memory: '512Mi', phase: 'Running' });

function setup() {
  const world = scenarioWorld();
  const { clock, cluster } = world;
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  let published: ClusterSummary | undefined;
  /** Publishes what an honest shim sees now, with `forged` Nodes and pods added (or in place). */
  const publish = (forged: { nodes?: unknown[]; pods?: unknown[]; drop?: string[] } = {}) => {
    const builder = new SummaryBuilder('prod');
    const dropped = new Set(forged.drop ?? []);
    const keep = (o: Record<string, unknown>) =>
      !dropped.has(String((o['metadata'] as { name?: string } | undefined)?.name));
    builder.replace('pods', [...cluster.list('Pod').filter(keep), ...(forged.pods ?? [])]);
    builder.replace('nodes', [...cluster.list('Node').filter(keep), ...(forged.nodes ?? [])]);
    builder.replace('nodeClaims', cluster.list('NodeClaim'));
    const at = clock.now().toISOString();
    published = readSummaryDocument(
      encodeSummaryDocument(builder.document(at, { pods: at, nodes: at, nodeClaims: at })),
    );
  };
  const gets = { nodeWithPods: 0, nodeClaim: 0 };
  /** When set, the pending pods every read returns: the API server's answer of an earlier moment. */
  let pendingAsOf: Awaited<ReturnType<Cluster['provisionablePods']>> | undefined;
  /** The consistent lists asked of the API server, by kind and NodePool (`*` for the whole cluster). */
  const lists: string[] = [];
  const counted: Cluster = {
    ...cluster,
    provisionablePods: async () => pendingAsOf ?? cluster.provisionablePods(),
    nodeInfos: (options) => {
      if (options?.consistent === true) lists.push(`nodes ${options.nodePool ?? '*'}`);
      return cluster.nodeInfos(options);
    },
    nodeClaims: (options) => {
      if (options?.consistent === true) lists.push(`nodeClaims ${options.nodePool ?? '*'}`);
      return cluster.nodeClaims(options);
    },
    nodeWithPods: (name) => {
      gets.nodeWithPods += 1;
      return cluster.nodeWithPods(name);
    },
    nodeClaim: (name) => {
      gets.nodeClaim += 1;
      return cluster.nodeClaim(name);
    },
  };
  const decorated = withClusterSummary(counted, {
    source: { read: async () => published },
    clock,
    logger,
  });
  // The provisioner Lambda's runs, one lease store for them all, without the batching wait.
  const provisioner = provisionerSteps(world, logger, {
    ports: { cluster: decorated },
    config: { batchIdleMs: 0, batchMaxMs: 0, staticCapacity: true },
  });
  let runs = 0;
  const run = () => provisioner.provision(`run-${++runs}`);
  const confirmedLines = () => lines.filter((l) => l['message'] === 'plan confirmed against the API server');
  /** From now on, pending reads answer what the API server has as pending at this moment. */
  const freezePending = async () => {
    pendingAsOf = await cluster.provisionablePods();
  };
  return {
    ...world,
    provisioner,
    decorated,
    publish,
    run,
    gets,
    lists,
    confirmedLines,
    lines,
    freezePending,
  };
}

const launched = (result: ProvisionResult) =>
  result.kind === 'provisioned' ? result.claims.filter((c) => c.kind === 'launched') : [];

describe('a provisioning plan confirmed against the API server', () => {
  it('launches for a pending pod that a listed Node the API server does not have would have taken', async () => {
    const w = setup();
    addPendingPod(w.cluster, 'web-1');
    w.publish({ nodes: [poolNode('phantom', '100000')] });
    // The summary is what the provisioner's lists read.
    expect((await w.decorated.nodes()).items.map((n) => n.name)).toEqual(['phantom']);

    const result = await w.run();

    expect(launched(result)).toHaveLength(1);
    expect(launched(result)[0]?.pods.map((p) => p.name)).toEqual(['web-1']);
    expect(w.confirmedLines()).toHaveLength(1);
    expect(w.confirmedLines()[0]).toMatchObject({ gone: ['node/phantom'], level: 'warn' });
    expect(w.gets).toEqual({ nodeWithPods: 1, nodeClaim: 0 });
  });

  it('leaves the pod to a Node the API server confirms, at two reads and without a word', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '8'));
    w.cluster.create(boundPod('busy', 'real'));
    addPendingPod(w.cluster, 'web-1');
    w.publish();

    const result = await w.run();

    expect(launched(result)).toEqual([]);
    expect(result).toMatchObject({ kind: 'provisioned', placed: 1 });
    expect(w.confirmedLines()).toEqual([]);
    expect(w.gets).toEqual({ nodeWithPods: 1, nodeClaim: 0 });
  });

  it('launches when the summary understates what the pods on a real Node request', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '2'));
    w.cluster.create(boundPod('busy', 'real', '1800m'));
    addPendingPod(w.cluster, 'web-1');
    // The summary shows the same pod asking for a tenth of a CPU: the Node would look roomy.
    w.publish({ drop: ['busy'], pods: [boundPod('busy', 'real', '100m')] });

    const result = await w.run();

    expect(launched(result)[0]?.pods.map((p) => p.name)).toEqual(['web-1']);
    expect(w.confirmedLines()[0]).toMatchObject({ changed: ['node/real'] });
  });

  it('launches when the API server has the listed Node cordoned', async () => {
    const w = setup();
    w.cluster.create({ ...poolNode('real', '8'), spec: { unschedulable: true } });
    addPendingPod(w.cluster, 'web-1');
    w.publish({ drop: ['real'], nodes: [poolNode('real', '8')] });

    const result = await w.run();

    expect(launched(result)).toHaveLength(1);
    expect(w.confirmedLines()[0]).toMatchObject({ changed: ['node/real'] });
  });

  it('launches when the API server has a pod on the Node that the summary leaves out', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '1'));
    w.cluster.create(boundPod('hidden', 'real', '900m'));
    addPendingPod(w.cluster, 'web-1');
    w.publish({ drop: ['hidden'] });

    const result = await w.run();

    expect(launched(result)).toHaveLength(1);
    expect(w.confirmedLines()[0]).toMatchObject({ changed: ['node/real'] });
  });

  it('launches nothing for a pod bound after the pending read, whose Node the confirmation reads full', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '600m'));
    addPendingPod(w.cluster, 'web-1');
    w.publish();
    // The pending read is of the moment before kube-scheduler binds the pod to the listed Node;
    // the confirming GET of that Node finds it there, with no room for a second one.
    await w.freezePending();
    w.cluster.bindPod('default', 'web-1', 'real');

    const result = await w.run();

    expect(launched(result)).toEqual([]);
    expect(result).toMatchObject({ kind: 'provisioned', placed: 0, unschedulable: [] });
    expect(w.confirmedLines()).toEqual([
      expect.objectContaining({ changed: ['node/real'], boundSincePendingRead: ['default/web-1'] }),
    ]);
  });

  it('reads a listed Node that holds a pending pod, and launches nothing when it has the pod', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '600m'));
    addPendingPod(w.cluster, 'web-1');
    await w.freezePending();
    w.cluster.bindPod('default', 'web-1', 'real');
    // The summary is newer than the pending read: it has the pod on its Node already.
    w.publish();

    const result = await w.run();

    expect(launched(result)).toEqual([]);
    expect(w.gets.nodeWithPods).toBe(1);
    expect(w.confirmedLines()[0]).toMatchObject({ boundSincePendingRead: ['default/web-1'] });
  });

  it('still plans a pending pod that the summary alone puts on a Node', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '600m'));
    addPendingPod(w.cluster, 'web-1');
    const pending = w.cluster.get('Pod', 'web-1', 'default') as Record<string, unknown>;
    const spec = pending['spec'] as Record<string, unknown>;
    w.publish({ drop: ['web-1'], pods: [{ ...pending, spec: { ...spec, nodeName: 'real' } }] });

    const result = await w.run();

    // The API server has the Node empty: the pod is left to it (kube-scheduler binds it there),
    // neither counted as placed already nor given a node of its own.
    expect(launched(result)).toEqual([]);
    expect(result).toMatchObject({ kind: 'provisioned', placed: 1 });
    expect(w.confirmedLines()[0]).toMatchObject({ changed: ['node/real'] });
    expect(w.confirmedLines()[0]).not.toHaveProperty('boundSincePendingRead');
  });

  it('does not let a listed Node the API server does not have use up a NodePool limit', async () => {
    const w = setup();
    addPendingPod(w.cluster, 'web-1');
    // Tainted, it takes no pod, but its 100000 CPUs count against the on-demand pool's 200.
    w.publish({
      nodes: [poolNode('phantom', '100000', { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] })],
    });

    const result = await w.run();

    expect(launched(result)).toHaveLength(1);
    expect(w.confirmedLines()[0]).toMatchObject({ gone: ['node/phantom'], nodePoolLists: ['on-demand'] });
    expect(w.confirmedLines()[0]).not.toHaveProperty('consistentList');
    // That pool's Nodes, from the API server; never every Node of the cluster (the run's own
    // consistent NodeClaims list aside).
    expect(w.lists.filter((l) => l.startsWith('nodes '))).toEqual(['nodes on-demand']);
  });

  it('reads only the NodePool at its limit, with a list of its own', async () => {
    const w = setup();
    w.cluster.create(poolNode('real', '150', { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] }));
    const other = poolNode('other', '4', { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] });
    other.metadata.labels['karpenter.sh/nodepool'] = 'spot';
    w.cluster.create(other);
    addPendingPod(w.cluster, 'web-1');
    // A phantom beside a real Node: together they use up the on-demand pool's 200 CPUs.
    w.publish({
      nodes: [poolNode('phantom', '100', { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] })],
    });

    const result = await w.run();

    expect(launched(result)).toHaveLength(1);
    expect(w.confirmedLines()[0]).toMatchObject({ gone: ['node/phantom'], nodePoolLists: ['on-demand'] });
    expect(w.lists.filter((l) => l.startsWith('nodes '))).toEqual(['nodes on-demand']);
  });

  it('lists a NodePool at its limit once a run, and nothing of the cluster, when the limit is real', async () => {
    const w = setup();
    w.cluster.create(poolNode('big', '200', { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] }));
    addPendingPod(w.cluster, 'web-1');
    w.publish();

    const result = await w.run();

    expect(launched(result)).toEqual([]);
    expect(w.confirmedLines()).toEqual([]);
    expect(w.lists.filter((l) => l.startsWith('nodes '))).toEqual(['nodes on-demand']);
    expect(w.gets).toEqual({ nodeWithPods: 0, nodeClaim: 0 });
  });

  it('launches nothing for the pods of a deleting Node the API server does not have', async () => {
    const w = setup();
    addPendingPod(w.cluster, 'web-1');
    w.publish({
      nodes: [poolNode('phantom', '4', { deleting: true })],
      pods: [boundPod('ghost-1', 'phantom', '3'), boundPod('ghost-2', 'phantom', '3')],
    });

    const result = await w.run();

    // One node for the real pending pod, none for the two pods the summary put on the phantom.
    expect(launched(result).flatMap((c) => c.pods.map((p) => p.name))).toEqual(['web-1']);
    expect(result).toMatchObject({ deletingNodePods: 0 });
    expect(w.confirmedLines()[0]).toMatchObject({ gone: ['node/phantom'] });
  });

  it('launches nothing more when the Node the plan counted on was tainted by a rogue controller after the lists were read', async () => {
    const w = setup();
    addPendingPod(w.cluster, 'web-1');
    const first = await w.run();
    expect(launched(first)).toHaveLength(1);
    // Its node joins and initializes; the pod is still pending (no kube-scheduler here).
    await joinNodes(w);
    await w.provisioner.reconcileLifecycle('lifecycle-1');
    const [claim] = (await w.cluster.nodeClaims()).items;
    expect(claim?.status.conditions.find((c) => c.type === 'Initialized')?.status).toBe('True');
    const nodeName = claim?.status.nodeName ?? '';
    // The summary shows the Node as it joined; a moment later a controller taints it NoExecute.
    w.publish();
    await w.cluster.patchNode(nodeName, {
      addTaints: [{ key: 'chaos.example.com/rogue', value: 'true', effect: 'NoExecute' }],
    });
    w.clock.advance(5_000);

    const result = await w.run();

    // The plan put the pod on the Node, its confirmation found the taint, and the pool waits
    // rather than launch for a pod the taint repels (the runaway guard's loop).
    expect(w.confirmedLines().at(-1)).toMatchObject({ changed: [`node/${nodeName}`] });
    expect(launched(result)).toEqual([]);
    expect((await w.cluster.nodeClaims()).items).toHaveLength(1);
    expect(w.lines.filter((l) => l['decision'] === 'unschedulable').at(-1)?.['reason']).toMatch(
      /launches wait until .* for a taint to go: Node .* has taint chaos\.example\.com\/rogue/,
    );
  });

  it('scales a static NodePool down by the nodes the API server has, not by pods the summary leaves out', async () => {
    const w = setup();
    w.cluster.create(staticPool(2));
    await w.run();
    const fixed = async () =>
      (await w.cluster.nodeClaims()).items.filter((c) => c.nodePoolName === 'fixed' && !c.deleting);
    const claims = [...(await fixed())].sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(claims).toHaveLength(2);
    await joinNodes(w);
    // A pod runs on the node of the NodeClaim that sorts first; the summary leaves it out, so both
    // nodes look empty and that NodeClaim would go first.
    const busy = (await w.cluster.nodes()).items.find((n) => n.providerId === claims[0]?.status.providerId);
    expect(busy).toBeDefined();
    w.cluster.create(
      podManifest('web', {
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
        ],
      }),
    );
    w.cluster.bindPod('default', 'web', busy?.name ?? '');
    w.publish({ drop: ['web'] });
    const spec = (w.cluster.get('NodePool', 'fixed') as { spec: Record<string, unknown> }).spec;
    w.cluster.replaceSpec('NodePool', 'fixed', { ...spec, replicas: 1 });

    const result = await w.run();

    expect(result.kind === 'provisioned' && result.staticDeleted).toEqual([claims[1]?.name]);
    expect((await fixed()).map((c) => c.name)).toEqual([claims[0]?.name]);
    expect(
      w.lines.filter((l) => l['message'] === 'static scale-down confirmed against the API server'),
    ).toEqual([expect.objectContaining({ changed: [`node/${busy?.name}`] })]);
  });
});

function staticPool(replicas: number) {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'fixed' },
    spec: {
      replicas,
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
