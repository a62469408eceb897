import { randomBytes } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CLUSTER_SIZE } from '../../infra/cluster-size.ts';
import { makeS3SummarySource } from '../../shared/adapters/aws/summary-source.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import type { Cluster, ClusterNode } from '../../shared/ports/cluster.ts';
import {
  type ClusterSummary,
  type ClusterSummaryHead,
  summaryLimitsFor,
} from '../../shared/ports/summary.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER, STACK_NAMES } from '../harness/aws/stack.ts';
import { type Kube, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { createNamespace } from '../harness/kube/namespace.ts';
import { waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { silentLogger } from './aws/fixtures.ts';

// The cluster summary the shim publishes, against a fresh read of the API server after random
// churn: pods created, bound, finishing and deleted, Nodes joining, changing and leaving,
// NodeClaims made and deleted. The shim runs as deployed (its bundle, its ServiceAccount, its role's
// keys); the summary is read as a Lambda reads it (the provisioner's role, GetObject of the one
// object), the API server as a Lambda reads it (the controller group). Pods, Nodes and NodeClaims
// are played as a user, a kubelet and Flotilla's own adapter would make them.

const id = randomBytes(3).toString('hex');
const namespace = `summary-${id}`;
const nodeName = (i: number) => `summary-${id}-node-${i}`;
const claimName = (i: number) => `summary-${id}-claim-${i}`;

let server: Moto;
let cube: Kube;
let core: CoreV1Api;
let shim: ShimProcess;
let controller: Cluster;
let summaries: ReturnType<typeof makeS3SummarySource>;

beforeAll(async () => {
  [server, cube] = await Promise.all([moto(), kube()]);
  await resetMoto(server);
  const stack = await deployStack(server);
  core = cube.userKubeConfig.makeApiClient(CoreV1Api);
  await createNamespace(core, namespace);
  controller = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
  summaries = makeS3SummarySource({
    s3: new S3Client({ ...awsConfigAs(server, 'provisioner'), forcePathStyle: true }),
    bucket: STACK_NAMES.summaryBucket,
    cluster: STACK_CLUSTER,
    limits: summaryLimitsFor(DEFAULT_CLUSTER_SIZE),
  });
  shim = await startShimProcess({
    server: { ...server, credentials: awsConfigAs(server, 'shim').credentials },
    kubeconfigPath: cube.shimKubeconfigPath,
    clusterName: STACK_CLUSTER,
    queueUrl: stack.queueUrls.podEvents,
  });
});

afterAll(async () => {
  shim?.stop();
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  for (let i = 0; i < 6; i++) {
    await core?.deleteNode({ name: nodeName(i) }).catch(() => undefined);
  }
});

/** A pod as a user writes it, bound to a node (or not), requesting `cpu`. */
function pod(name: string, node: string | undefined, cpu: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name, namespace, labels },
    spec: {
      ...(node === undefined ? {} : { nodeName: node }),
      containers: [
        {
          name: 'app',
          image: 'public.ecr.aws/docker/library/busybox:stable',
          resources: { requests: { cpu, memory: '64Mi' } },
        },
      ],
      ...(node === undefined
        ? {}
        : {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    { matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] },
                  ],
                },
              },
            },
          }),
    },
  };
}

/** A Node as a kubelet registers it. */
function node(i: number, cpu: string, taint: boolean) {
  return {
    metadata: {
      name: nodeName(i),
      labels: { 'kubernetes.io/hostname': nodeName(i), 'summary-test': id },
    },
    spec: {
      providerID: `aws:///us-east-1a/i-0${id}${i}`,
      ...(taint ? { taints: [{ key: 'example.com/dedicated', value: 'x', effect: 'NoSchedule' }] } : {}),
    },
    status: {
      capacity: { cpu, memory: '16Gi', pods: '110' },
      allocatable: { cpu, memory: '15Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    },
  };
}

type Step =
  | {
      readonly kind: 'createPod';
      readonly pod: number;
      readonly node: number | undefined;
      readonly cpu: string;
    }
  | { readonly kind: 'finishPod'; readonly pod: number; readonly phase: 'Running' | 'Succeeded' | 'Failed' }
  | { readonly kind: 'deletePod'; readonly pod: number }
  | { readonly kind: 'upsertNode'; readonly node: number; readonly cpu: string; readonly taint: boolean }
  | { readonly kind: 'deleteNode'; readonly node: number }
  | { readonly kind: 'createClaim'; readonly claim: number }
  | { readonly kind: 'deleteClaim'; readonly claim: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('createPod' as const),
      pod: fc.nat({ max: 24 }),
      node: fc.option(fc.nat({ max: 5 }), { nil: undefined }),
      cpu: fc.constantFrom('100m', '1', '250m'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('finishPod' as const),
      pod: fc.nat({ max: 24 }),
      phase: fc.constantFrom('Running' as const, 'Succeeded' as const, 'Failed' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deletePod' as const), pod: fc.nat({ max: 24 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('upsertNode' as const),
      node: fc.nat({ max: 5 }),
      cpu: fc.constantFrom('4', '8'),
      taint: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteNode' as const), node: fc.nat({ max: 5 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('createClaim' as const), claim: fc.nat({ max: 5 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('deleteClaim' as const), claim: fc.nat({ max: 5 }) }),
  },
);

const ignore = () => undefined;

async function play(s: Step): Promise<void> {
  const name = (i: number) => `pod-${i}`;
  switch (s.kind) {
    case 'createPod':
      await core
        .createNamespacedPod({
          namespace,
          body: pod(name(s.pod), s.node === undefined ? undefined : nodeName(s.node), s.cpu, {
            app: `app-${s.pod % 3}`,
          }),
        })
        .catch(ignore);
      return;
    case 'finishPod': {
      // The kubelet's word on the pod's phase.
      const current = await core.readNamespacedPod({ namespace, name: name(s.pod) }).catch(ignore);
      if (current === undefined) return;
      await core
        .replaceNamespacedPodStatus({
          namespace,
          name: name(s.pod),
          body: { ...current, status: { ...current.status, phase: s.phase, startTime: new Date() } },
        })
        .catch(ignore);
      return;
    }
    case 'deletePod':
      await core.deleteNamespacedPod({ namespace, name: name(s.pod), gracePeriodSeconds: 0 }).catch(ignore);
      return;
    case 'upsertNode': {
      const body = node(s.node, s.cpu, s.taint);
      const created = await core.createNode({ body }).catch(ignore);
      if (created !== undefined) return;
      const current = await core.readNode({ name: nodeName(s.node) }).catch(ignore);
      if (current === undefined) return;
      await core.replaceNode({ name: nodeName(s.node), body: { ...current, spec: body.spec } }).catch(ignore);
      return;
    }
    case 'deleteNode':
      await core.deleteNode({ name: nodeName(s.node) }).catch(ignore);
      return;
    case 'createClaim':
      await controller
        .createNodeClaim({
          name: claimName(s.claim),
          nodePool: { name: 'default', uid: '00000000-0000-0000-0000-000000000000' },
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          labels: { 'summary-test': id },
          annotations: {},
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          requests: { cpu: 1000 },
          taints: [],
          startupTaints: [],
        })
        .catch(ignore);
      return;
    case 'deleteClaim':
      // Its finalizer keeps it, deleting, as termination would find it.
      await controller.deleteNodeClaim(claimName(s.claim)).catch(ignore);
      return;
  }
}

/** This test's own objects, as a read gave them. */
async function own(read: {
  nodes(): Promise<{ items: readonly ClusterNode[] }> | { items: readonly ClusterNode[] };
  nodeClaims(): Promise<{ items: readonly { name: string }[] }> | { items: readonly { name: string }[] };
}) {
  const [nodes, claims] = await Promise.all([read.nodes(), read.nodeClaims()]);
  const mine = nodes.items
    .filter((n) => n.name.startsWith(`summary-${id}-`))
    .map((n) => ({ ...n, pods: [...n.pods].sort((a, b) => a.name.localeCompare(b.name)) }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    nodes: mine,
    claims: claims.items
      .filter((c) => c.name.startsWith(`summary-${id}-`))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

describe('the cluster summary the shim publishes', () => {
  it('equals a fresh read of the API server once the churn settles', async () => {
    const steps =
      fc.sample(fc.array(step, { minLength: 60, maxLength: 60 }), {
        numRuns: 1,
        seed: Number.parseInt(id, 16),
      })[0] ?? [];
    // Two rounds of churn, settle and compare, so the summary is compared mid-life too.
    for (let round = 0; round < 2; round++) {
      for (const s of steps.slice(round * 30, round * 30 + 30)) await play(s);
      const settled = Date.now();
      let summary: ClusterSummary | undefined;
      await waitFor(
        'a summary published after the churn settled',
        async () => {
          summary = await summaries.read();
          return summary !== undefined && summary.publishedAtMs > settled + 3_000 ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );
      if (summary === undefined) throw new Error('no summary');
      const fromSummary = await own(summary);
      const fromApi = await own(controller);
      expect(fromSummary.nodes).toEqual(fromApi.nodes);
      expect(fromSummary.claims).toEqual(fromApi.claims);
      expect(fromApi.nodes.length + fromApi.claims.length).toBeGreaterThan(0);
    }
    // The Lambda's container read the changes since a base it held far more often than a base.
    const stats = summaries.stats();
    expect(stats.baseDownloads).toBeGreaterThanOrEqual(1);
    expect(stats.downloads - stats.baseDownloads).toBeGreaterThan(stats.baseDownloads);
    // The shim read every kind once and then only followed its watches.
    expect(shim.output()).toContain('"summary listed"');
    expect(shim.output()).not.toContain('summary relist found what the watch missed');
  });

  it('is read again only when it changed: an unchanged summary is one small request', async () => {
    const before = summaries.stats();
    await summaries.read();
    await summaries.read();
    const after = summaries.stats();
    expect(after.reads - before.reads).toBe(2);
    // At most one of the two found a newer document (a heartbeat may fall between them).
    expect(after.downloads - before.downloads).toBeLessThanOrEqual(1);
  });

  it("serves a Lambda's head reads without a download while only pods and Nodes' heartbeats change, and downloads once a Node does", async () => {
    const steady = `summary-${id}-steady`;
    const body = node(0, '4', false);
    await core.createNode({
      body: {
        ...body,
        metadata: { name: steady, labels: { 'kubernetes.io/hostname': steady } },
        spec: { providerID: `aws:///us-east-1a/i-0${id}steady` },
      },
    });
    try {
      let pokes = 0;
      let pokedAt = 0;
      /**
       * The first head read of a summary published over 3 s after `atMs`, so with the changes made
       * until then. A pending pod made every 2 s meanwhile keeps the shim publishing (its pods
       * change), as a busy cluster's does; the head does not change with them.
       */
      const headAfter = async (atMs: number) => {
        let head: ClusterSummaryHead | undefined;
        await waitFor(
          'a summary published after the change',
          async () => {
            if (Date.now() - pokedAt > 2_000) {
              pokedAt = Date.now();
              pokes += 1;
              await core.createNamespacedPod({ namespace, body: pod(`poke-${pokes}`, undefined, '10m', {}) });
            }
            head = await summaries.readHead();
            return head !== undefined && head.publishedAtMs > atMs + 3_000 ? true : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        return head;
      };
      // The controller-manager may change a Node of the churn meanwhile (it marks Nodes whose
      // kubelet never reports unreachable): one of a few rounds must go without a download.
      let reused = false;
      for (let round = 0; round < 5 && !reused; round++) {
        // The head of the latest summary, held.
        await summaries.readHead();
        const before = summaries.stats();
        const changedAt = Date.now();
        const current = await core.readNode({ name: steady });
        await core.replaceNodeStatus({
          name: steady,
          body: {
            ...current,
            status: {
              ...current.status,
              conditions: [
                { type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date() },
              ],
            },
          },
        });
        const head = await headAfter(changedAt);
        expect(head?.nodeInfos().items.some((n) => n.name === steady)).toBe(true);
        const after = summaries.stats();
        reused = after.downloads === before.downloads && after.headsReused > before.headsReused;
      }
      expect(reused).toBe(true);
      // A label on the Node is a change of the head: downloaded, and read.
      const labelledAt = Date.now();
      await core.patchNode(
        { name: steady, body: { metadata: { labels: { 'example.com/team': 'blue' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      const downloads = summaries.stats().downloads;
      const head = await headAfter(labelledAt);
      expect(summaries.stats().downloads).toBeGreaterThan(downloads);
      expect(head?.nodeInfos().items.find((n) => n.name === steady)?.labels['example.com/team']).toBe('blue');
    } finally {
      await core.deleteNode({ name: steady }).catch(() => undefined);
    }
  });
});
