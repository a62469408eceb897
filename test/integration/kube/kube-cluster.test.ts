import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  NodeV1Api,
  PatchStrategy,
  PolicyV1Api,
  StorageV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawApi } from '../../../shared/adapters/kube/http.ts';
import { ClusterConflictError, makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { computePodRequests } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { type Cluster, DEFAULT_NODEPOOL_DISRUPTION } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { toInFlightNodeClaims } from '../../../shared/usecases/state/cluster-state.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { ec2NodeClass } from '../../fixtures/node-classes.ts';
import { forceDeleteNodeClaims } from '../../harness/cleanup.ts';
import { kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';
import { waitFor } from '../../harness/proc.ts';

const id = randomBytes(3).toString('hex');
const ns = `kube-cluster-${id}`;
const names = {
  node: `kc-node-${id}`,
  pool: `kc-pool-${id}`,
  nodeClass: `kc-class-${id}`,
  claim: `kc-claim-${id}`,
  badClaim: `kc-bad-claim-${id}`,
  storageClass: `kc-wffc-${id}`,
  pv: `kc-pv-${id}`,
  runtimeClass: `kc-rc-${id}`,
};
const karpenter = { group: 'karpenter.sh', version: 'v1' };
const logLines: string[] = [];
const logger = makeLogger({}, { level: 'warn', sink: (line) => logLines.push(line) });
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));

/** A cluster user's kubeconfig, for set-up that plays a user or kubelet. */
let kc: KubeConfig;
/** Flotilla's own kubeconfig (the flotilla:controller group): the adapter under test runs as it. */
let controllerKc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let cluster: Cluster;
/** A new connection as Flotilla's controller, as the Lambdas make it; `connection` is the main adapter's. */
let connect: () => RawApi;
let connection: RawApi;
let poolUid = '';

const ignore = () => undefined;

beforeAll(async () => {
  const cube = await kube();
  ({ userKubeConfig: kc, controllerKubeConfig: controllerKc } = cube);
  connect = cube.controllerConnection;
  core = kc.makeApiClient(CoreV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  connection = connect();
  cluster = makeKubeCluster({
    connection,
    logger,
    clock,
    maxConcurrentCalls: 4,
    callTimeoutMs: 15_000,
  });
  await createNamespace(core, ns, { team: `t-${id}` });
});

afterAll(async () => {
  const storage = kc.makeApiClient(StorageV1Api);
  await forceDeleteNodeClaims(controllerKc, [names.claim, names.badClaim]);
  await custom
    .deleteClusterCustomObject({ ...karpenter, plural: 'nodepools', name: names.pool })
    .catch(ignore);
  await custom
    .deleteClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      name: names.nodeClass,
    })
    .catch(ignore);
  await core.deleteNode({ name: names.node }).catch(ignore);
  await core.deletePersistentVolume({ name: names.pv }).catch(ignore);
  await storage.deleteStorageClass({ name: names.storageClass }).catch(ignore);
  await kc.makeApiClient(NodeV1Api).deleteRuntimeClass({ name: names.runtimeClass }).catch(ignore);
  const events = await core.listNamespacedEvent({ namespace: 'default' }).catch(() => ({ items: [] }));
  for (const e of events.items) {
    if (e.involvedObject.name?.includes(id)) {
      await core.deleteNamespacedEvent({ namespace: 'default', name: e.metadata?.name ?? '' }).catch(ignore);
    }
  }
  await core.deleteNamespace({ name: ns }).catch(ignore);
});

function container(name: string, cpu: string, memory = '64Mi') {
  return {
    name,
    image: 'public.ecr.aws/docker/library/busybox:stable',
    resources: { requests: { cpu, memory } },
  };
}

async function waitUnschedulable(name: string) {
  await waitFor(
    `pod ${name} to be marked Unschedulable`,
    async () => {
      const pod = await core.readNamespacedPod({ namespace: ns, name });
      const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
      return cond?.status === 'False' && cond.reason === 'Unschedulable' ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

describe('kube cluster adapter: reads', () => {
  it('converts an unschedulable pod with sidecars, overhead, affinity, spread, tolerations and volumes', async () => {
    const storage = kc.makeApiClient(StorageV1Api);
    await kc.makeApiClient(NodeV1Api).createRuntimeClass({
      body: {
        metadata: { name: names.runtimeClass },
        handler: 'runc',
        overhead: { podFixed: { cpu: '250m', memory: '120Mi' } },
      },
    });
    await storage.createStorageClass({
      body: {
        metadata: { name: names.storageClass },
        provisioner: 'ebs.csi.aws.com',
        volumeBindingMode: 'WaitForFirstConsumer',
        allowedTopologies: [
          {
            matchLabelExpressions: [
              { key: 'topology.kubernetes.io/zone', values: ['us-west-2a', 'us-west-2b'] },
            ],
          },
        ],
      },
    });
    await core.createPersistentVolume({
      body: {
        metadata: { name: names.pv },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          csi: { driver: 'ebs.csi.aws.com', volumeHandle: `vol-${id}` },
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2c'] },
                    { key: 'kubernetes.io/hostname', operator: 'In', values: ['some-old-node'] },
                  ],
                },
              ],
            },
          },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'bound' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          volumeName: names.pv,
          resources: { requests: { storage: '1Gi' } },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'unbound' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: names.storageClass,
          resources: { requests: { storage: '1Gi' } },
        },
      },
    });
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'big', labels: { app: 'web' } },
        spec: {
          runtimeClassName: names.runtimeClass,
          initContainers: [
            container('init', '2'),
            { ...container('sidecar', '500m'), restartPolicy: 'Always' },
          ],
          containers: [
            container('app', '512'),
            { ...container('ports', '1'), ports: [{ containerPort: 80, hostPort: 8080 }] },
          ],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
                    ],
                  },
                ],
              },
            },
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  topologyKey: 'kubernetes.io/hostname',
                  labelSelector: { matchLabels: { app: 'web' } },
                  namespaceSelector: { matchLabels: { team: `t-${id}` } },
                },
              ],
            },
          },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'topology.kubernetes.io/zone',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'web' } },
            },
          ],
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: 'bound' } },
            { name: 'scratch', persistentVolumeClaim: { claimName: 'unbound' } },
          ],
        },
      },
    });
    // The API server accepts a pod whose claim does not exist; the adapter reports and skips it.
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'missing-claim' },
        spec: {
          containers: [container('app', '512')],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'nope' } }],
        },
      },
    });
    await waitUnschedulable('big');
    await waitFor(
      'pod missing-claim to be marked unschedulable',
      async () => {
        const pod = await core.readNamespacedPod({ namespace: ns, name: 'missing-claim' });
        const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
        return cond?.status === 'False' ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );

    const result = await cluster.provisionablePods();
    const mine = result.items.filter((p) => p.namespace === ns);
    expect(mine.map((p) => p.name)).toEqual(['big']);
    const pod = mine[0];
    expect(pod?.overhead).toEqual({ cpu: 250, memory: 120 * 2 ** 20 });
    expect(pod?.initContainers).toEqual([
      { name: 'init', requests: { cpu: 2000, memory: 64 * 2 ** 20 } },
      { name: 'sidecar', requests: { cpu: 500, memory: 64 * 2 ** 20 }, restartPolicy: 'Always' },
    ]);
    expect(pod?.containers[1]?.ports).toEqual([{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }]);
    // 512 + 1 cores of containers + 0.5 sidecar + 0.25 overhead.
    expect(pod && computePodRequests(pod)['cpu']).toBe(513_750);
    // The DefaultTolerationSeconds admission plugin adds not-ready/unreachable tolerations.
    expect(pod?.tolerations).toContainEqual({
      key: 'dedicated',
      operator: 'Equal',
      value: 'web',
      effect: 'NoSchedule',
    });
    expect(pod?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0]).toEqual({
      topologyKey: 'kubernetes.io/hostname',
      labelSelector: { matchLabels: { app: 'web' } },
      namespaceSelector: { matchLabels: { team: `t-${id}` } },
    });
    expect(
      pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
    ).toEqual([
      { matchExpressions: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }] },
    ]);
    expect(pod?.topologySpreadConstraints?.[0]).toMatchObject({
      maxSkew: 1,
      whenUnsatisfiable: 'DoNotSchedule',
    });
    expect(pod?.volumeTopology).toEqual([
      {
        claimName: 'bound',
        terms: [[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2c'] }]],
      },
      {
        claimName: 'unbound',
        terms: [
          [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-west-2a', 'us-west-2b'] }],
        ],
      },
    ]);
    const problem = result.problems.find((p) => p.object === `pod "${ns}/missing-claim"`);
    expect(problem?.message).toContain('persistentVolumeClaim "nope" does not exist');
    expect(logLines.some((l) => l.includes('skipped malformed object') && l.includes('missing-claim'))).toBe(
      true,
    );

    const namespaces = await cluster.namespaceLabels();
    expect(namespaces.get(ns)).toMatchObject({ team: `t-${id}` });
  });

  it('reads pod-level resources (spec.resources), which replace the container sums for cpu and memory', async () => {
    // Pod-level requests far above any node, so kube-scheduler marks the pod Unschedulable.
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'pod-level' },
        spec: {
          resources: { requests: { cpu: '900', memory: '1Gi' } },
          containers: [container('a', '100m', '64Mi'), container('b', '100m', '64Mi')],
        },
      },
    });
    await waitUnschedulable('pod-level');
    const result = await cluster.provisionablePods();
    const pod = result.items.find((p) => p.namespace === ns && p.name === 'pod-level');
    expect(pod?.podRequests).toEqual({ cpu: 900_000, memory: 2 ** 30 });
    expect(pod && computePodRequests(pod)).toEqual({ cpu: 900_000, memory: 2 ** 30, pods: 1 });
  });

  it('reads nodes with their bound pods, and bound pods on their own', async () => {
    await core.createNode({
      body: {
        metadata: {
          name: names.node,
          labels: { 'karpenter.sh/nodepool': names.pool, 'topology.kubernetes.io/zone': 'us-west-2a' },
        },
        // Keeps other test files' pods off this node.
        spec: {
          providerID: `aws:///us-west-2a/i-${id}`,
          taints: [{ key: 'flotilla.test/kube-cluster', value: id, effect: 'NoSchedule' }],
        },
      },
    });
    await core.patchNodeStatus(
      {
        name: names.node,
        body: {
          status: {
            capacity: { cpu: '2', memory: '4Gi', pods: '10' },
            allocatable: { cpu: '1900m', memory: '3Gi', pods: '10' },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'bound-pod' },
        spec: { nodeName: names.node, containers: [container('app', '100m')] },
      },
    });
    const nodes = await cluster.nodes();
    const node = nodes.items.find((n) => n.name === names.node);
    expect(node).toMatchObject({
      nodePoolName: names.pool,
      allocatable: { cpu: 1900, memory: 3 * 2 ** 30, pods: 10 },
      capacity: { cpu: 2000, memory: 4 * 2 ** 30, pods: 10 },
      providerId: `aws:///us-west-2a/i-${id}`,
      initialized: false,
      ready: false,
    });
    expect(node?.taints).toContainEqual({
      key: 'flotilla.test/kube-cluster',
      value: id,
      effect: 'NoSchedule',
    });
    expect(node?.pods.map((p) => p.name)).toEqual(['bound-pod']);
    const bound = await cluster.boundPods();
    expect(bound.items.find((b) => b.pod.name === 'bound-pod' && b.pod.namespace === ns)?.nodeName).toBe(
      names.node,
    );

    await cluster.patchNode(names.node, {
      labels: { 'karpenter.sh/initialized': 'true' },
      addTaints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }],
      addFinalizers: ['karpenter.sh/termination'],
    });
    await cluster.patchNode(names.node, {
      removeTaints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }],
      removeFinalizers: ['karpenter.sh/termination'],
    });
    const after = await core.readNode({ name: names.node });
    expect(after.metadata?.labels?.['karpenter.sh/initialized']).toBe('true');
    expect(after.spec?.taints?.map((t) => t.key)).not.toContain('karpenter.sh/disrupted');
    expect(after.spec?.taints?.map((t) => t.key)).toContain('flotilla.test/kube-cluster');
    expect(after.metadata?.finalizers ?? []).toEqual([]);
  });

  it('reads DaemonSets and PodDisruptionBudgets', async () => {
    await kc.makeApiClient(AppsV1Api).createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: {
              nodeSelector: { 'flotilla.test/none': id },
              tolerations: [{ operator: 'Exists' }],
              containers: [container('agent', '100m', '128Mi')],
            },
          },
        },
      },
    });
    await kc.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
      },
    });
    const daemonSets = await cluster.daemonSets();
    const ds = daemonSets.items.find((d) => d.namespace === ns && d.name === 'agent');
    expect(ds?.template).toMatchObject({
      labels: { app: 'agent' },
      nodeSelector: { 'flotilla.test/none': id },
      tolerations: [{ operator: 'Exists' }],
      containers: [{ name: 'agent', requests: { cpu: 100, memory: 128 * 2 ** 20 } }],
    });
    const pdbs = await cluster.podDisruptionBudgets();
    expect(pdbs.items.find((p) => p.namespace === ns && p.name === 'web')).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: { app: 'web' } },
    });
  });
});

describe('kube cluster adapter: connections', () => {
  it('sends its requests over a few reused connections, not a new TLS connection each', async () => {
    let connected = 0;
    const onConnected = () => {
      connected += 1;
    };
    // A fresh adapter on a fresh connection, as a Lambda starts: 40 GETs, 4 at a time.
    const fresh = connect();
    diagnostics.subscribe('net.client.socket', onConnected);
    try {
      const adapter = makeKubeCluster({ connection: fresh, logger, maxConcurrentCalls: 4 });
      for (let round = 0; round < 10; round++) {
        const got = await Promise.all(
          Array.from({ length: 4 }, (_, i) => adapter.nodeClaim(`kc-absent-${id}-${round}-${i}`)),
        );
        expect(got).toEqual([undefined, undefined, undefined, undefined]);
      }
    } finally {
      diagnostics.unsubscribe('net.client.socket', onConnected);
    }
    expect(fresh.stats().requests).toBe(40);
    expect(connected).toBeGreaterThan(0);
    expect(connected).toBeLessThanOrEqual(4);
  });
});

// controller's own test
// The Kubernetes adapter's own tests: its status and metadata writes are what the controllers
// call, so they are exercised here directly, as the flotilla:controller identity.
describe('kube cluster adapter: NodePools, NodeClasses and NodeClaims', () => {
  it('reads a NodePool and an EC2NodeClass, and patches NodePool status', async () => {
    await custom.createClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      body: ec2NodeClass(
        names.nodeClass,
        {
          blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '20Gi', volumeType: 'gp3' } }],
        },
        { discovery: id },
      ),
    });
    const pool = (await custom.createClusterCustomObject({
      ...karpenter,
      plural: 'nodepools',
      body: {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: {
          name: names.pool,
          annotations: { 'karpenter.sh/nodepool-hash': '123', 'karpenter.sh/nodepool-hash-version': 'v3' },
        },
        spec: {
          weight: 10,
          limits: { cpu: '100', memory: '400Gi' },
          template: {
            metadata: { labels: { team: 'web' }, annotations: { note: 'x' } },
            spec: {
              nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: names.nodeClass },
              requirements: [
                {
                  key: 'karpenter.k8s.aws/instance-family',
                  operator: 'In',
                  values: ['m5', 'm6i', 'c5'],
                  minValues: 2,
                },
                { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
              ],
              taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
              startupTaints: [{ key: 'cilium', effect: 'NoExecute' }],
              expireAfter: '24h',
            },
          },
        },
      },
    })) as { metadata: { uid: string } };
    poolUid = pool.metadata.uid;

    const classes = await cluster.nodeClasses();
    const nc = classes.items.find((c) => c.name === names.nodeClass);
    expect(nc?.spec.blockDeviceMappings?.[0]?.ebs?.volumeSizeBytes).toBe(20 * 2 ** 30);
    expect(nc?.spec.metadataOptions.httpTokens).toBe('required');

    let pools = await cluster.nodePools();
    let np = pools.items.find((p) => p.pool.name === names.pool);
    expect(np).toMatchObject({
      uid: poolUid,
      pool: {
        weight: 10,
        nodeClassName: names.nodeClass,
        labels: { team: 'web' },
        limits: { cpu: 100_000, memory: 400 * 2 ** 30 },
        taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
        startupTaints: [{ key: 'cilium', effect: 'NoExecute' }],
      },
      templateAnnotations: { note: 'x' },
      disruption: DEFAULT_NODEPOOL_DISRUPTION,
      expireAfter: '24h',
      hash: '123',
      hashVersion: 'v3',
      ready: false,
    });
    expect(np?.pool.requirements[0]).toEqual({
      key: 'karpenter.k8s.aws/instance-family',
      operator: 'In',
      values: ['m5', 'm6i', 'c5'],
      minValues: 2,
    });

    await cluster.patchNodePoolStatus(names.pool, {
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '' }],
      resources: { cpu: 4000, memory: 16 * 2 ** 30, nodes: 1 },
      nodes: 1,
    });
    clock.advance(60_000);
    await cluster.patchNodePoolStatus(names.pool, {
      conditions: [{ type: 'NodeRegistrationHealthy', status: 'True', reason: 'Healthy', message: '' }],
      resources: { cpu: 2000, nodes: 1 },
    });
    pools = await cluster.nodePools();
    np = pools.items.find((p) => p.pool.name === names.pool);
    expect(np?.ready).toBe(true);
    expect(np?.resources).toEqual({ cpu: 2000, nodes: 1 });
    expect(np?.nodes).toBe(1);
    expect(np?.conditions.map((c) => [c.type, c.lastTransitionTime])).toEqual([
      ['Ready', '2026-11-21T10:00:00Z'],
      ['NodeRegistrationHealthy', '2026-11-21T10:01:00Z'],
    ]);
  });

  it('creates a NodeClaim, patches its status and reads it back as in flight', async () => {
    const claim = {
      name: names.claim,
      nodePool: { name: names.pool, uid: poolUid },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: names.nodeClass },
      labels: { team: 'web' },
      annotations: { note: 'x' },
      nodePoolHash: { hash: '123', version: 'v3' },
      requirements: [
        {
          key: 'node.kubernetes.io/instance-type',
          operator: 'In' as const,
          values: ['m5.large', 'm6i.large'],
        },
        {
          key: 'karpenter.k8s.aws/instance-family',
          operator: 'In' as const,
          values: ['m5', 'm6i'],
          minValues: 2,
        },
      ],
      requests: { cpu: 1500, memory: 2 * 2 ** 30, pods: 3 },
      taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' as const }],
      startupTaints: [{ key: 'cilium', effect: 'NoExecute' as const }],
      expireAfter: '24h',
    };
    expect(await cluster.createNodeClaim(claim)).toBe(true);
    expect(await cluster.createNodeClaim(claim)).toBe(false);

    const raw = (await custom.getClusterCustomObject({
      ...karpenter,
      plural: 'nodeclaims',
      name: names.claim,
    })) as {
      metadata: Record<string, unknown>;
      spec: Record<string, unknown>;
    };
    expect(raw.metadata['labels']).toEqual({
      team: 'web',
      'karpenter.sh/nodepool': names.pool,
      'karpenter.k8s.aws/ec2nodeclass': names.nodeClass,
    });
    expect(raw.metadata['annotations']).toMatchObject({
      'karpenter.sh/nodepool-hash': '123',
      'karpenter.sh/nodepool-hash-version': 'v3',
    });
    expect(raw.metadata['finalizers']).toEqual(['karpenter.sh/termination']);
    expect(raw.metadata['ownerReferences']).toMatchObject([
      { kind: 'NodePool', name: names.pool, uid: poolUid },
    ]);
    expect(raw.spec['resources']).toEqual({ requests: { cpu: '1500m', memory: '2Gi', pods: '3' } });

    let claims = await cluster.nodeClaims();
    let inFlight = toInFlightNodeClaims(claims.items, []).find((c) => c.name === names.claim);
    expect(inFlight).toMatchObject({
      nodePoolName: names.pool,
      instanceTypeNames: ['m5.large', 'm6i.large'],
    });
    expect(inFlight?.allocatable).toBeUndefined();

    await cluster.patchNodeClaimStatus(names.claim, {
      conditions: [
        { type: 'Launched', status: 'Unknown', reason: 'Launching', message: 'calling CreateFleet' },
      ],
    });
    clock.advance(30_000);
    await cluster.patchNodeClaimStatus(names.claim, {
      providerId: `aws:///us-west-2a/i-${id}x`,
      imageId: 'ami-0123',
      capacity: { cpu: 2000, memory: 8 * 2 ** 30, pods: 29 },
      allocatable: { cpu: 1930, memory: 7 * 2 ** 30, pods: 29 },
      conditions: [
        { type: 'Launched', status: 'True', reason: 'Launched', message: '' },
        {
          type: 'Registered',
          status: 'Unknown',
          reason: 'NodeNotFound',
          message: 'Node not registered with cluster',
        },
      ],
    });
    clock.advance(30_000);
    await cluster.patchNodeClaimStatus(names.claim, {
      conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: 'still' }],
    });
    claims = await cluster.nodeClaims();
    const read = claims.items.find((c) => c.name === names.claim);
    expect(read?.status).toMatchObject({
      providerId: `aws:///us-west-2a/i-${id}x`,
      imageId: 'ami-0123',
      capacity: { cpu: 2000, memory: 8 * 2 ** 30, pods: 29 },
    });
    const launched = read?.status.conditions.find((c) => c.type === 'Launched');
    expect(launched).toMatchObject({
      status: 'True',
      message: 'still',
      lastTransitionTime: '2026-11-21T10:01:30Z',
    });
    expect(read?.requirements[1]).toEqual(claim.requirements[1]);
    inFlight = toInFlightNodeClaims(claims.items, []).find((c) => c.name === names.claim);
    expect(inFlight?.allocatable).toEqual({ cpu: 1930, memory: 7 * 2 ** 30, pods: 29 });
    // Once its node joined, the claim is no longer in flight.
    expect(
      toInFlightNodeClaims(claims.items, [{ name: 'x', providerId: `aws:///us-west-2a/i-${id}x` }]).some(
        (c) => c.name === names.claim,
      ),
    ).toBe(false);
  });

  it('retries a status patch after a real 409 Conflict and gives up when conflicts persist', async () => {
    let writes = 0;
    // Another Flotilla invocation racing this one: only Flotilla writes NodeClaims.
    const rival = controllerKc.makeApiClient(CustomObjectsApi);
    const bump = async () => {
      writes++;
      await rival.patchClusterCustomObject(
        {
          ...karpenter,
          plural: 'nodeclaims',
          name: names.claim,
          body: { metadata: { labels: { bump: String(writes) } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    };
    let calls = 0;
    const racing = makeKubeCluster({
      connection: connect(),
      logger,
      clock,
      beforeWrite: async () => {
        calls++;
        if (calls === 1) await bump();
      },
    });
    await racing.patchNodeClaimStatus(names.claim, { nodeName: `node-${id}` });
    expect(calls).toBe(2);
    const claims = await cluster.nodeClaims();
    expect(claims.items.find((c) => c.name === names.claim)?.status.nodeName).toBe(`node-${id}`);

    const hopeless = makeKubeCluster({
      connection: connect(),
      logger,
      clock,
      conflictAttempts: 3,
      beforeWrite: bump,
    });
    const before = writes;
    // Finalizers are a list: their patch is made against a read, and conflicts with every bump.
    await expect(
      hopeless.patchNodeClaimMetadata(names.claim, { addFinalizers: ['flotilla.io/never'] }),
    ).rejects.toBeInstanceOf(ClusterConflictError);
    expect(writes - before).toBe(3);
    // Labels and annotations are keys of a map: one merge patch, whatever was written before it.
    await hopeless.patchNodeClaimMetadata(names.claim, { annotations: { 'flotilla.io/x': 'y' } });
    expect(writes - before).toBe(4);
    const raw = (await custom.getClusterCustomObject({
      ...karpenter,
      plural: 'nodeclaims',
      name: names.claim,
    })) as { metadata: { annotations?: Record<string, string>; finalizers?: string[] } };
    expect(raw.metadata.annotations?.['flotilla.io/x']).toBe('y');
    expect(raw.metadata.finalizers).not.toContain('flotilla.io/never');
  });

  it('patches a status against the NodeClaim as listed: one request, or a fresh read once it changed', async () => {
    const listed = (await cluster.nodeClaims()).items.find((c) => c.name === names.claim);
    expect(listed?.resourceVersion).toMatch(/^\d+$/);
    const patchCounted = async (type: string) => {
      const before = connection.stats().requests;
      await cluster.patchNodeClaimStatus(
        names.claim,
        { conditions: [{ type, status: 'True', reason: type, message: '' }] },
        listed,
      );
      return connection.stats().requests - before;
    };
    // As listed: the patch alone.
    expect(await patchCounted('Consolidatable')).toBe(1);
    // The listed NodeClaim is now stale: the patch conflicts, and is made again from a read.
    expect(await patchCounted('Drifted')).toBe(3);
    const read = (await cluster.nodeClaims()).items.find((c) => c.name === names.claim);
    expect(read?.status.conditions.map((c) => c.type)).toEqual(
      expect.arrayContaining(['Launched', 'Registered', 'Consolidatable', 'Drifted']),
    );
    expect(read?.status.nodeName).toBe(`node-${id}`);
  });

  it('reports a malformed NodeClaim and still reads the others', async () => {
    // Only Flotilla writes NodeClaims: it makes one of another provider's class through the
    // adapter, then takes away its karpenter.sh/nodepool label. Standalone, it is not Flotilla's.
    expect(
      await cluster.createNodeClaim(
        newNodeClaim(names.badClaim, {
          nodePool: { name: names.pool, uid: poolUid },
          nodeClassRef: { group: 'karpenter.azure.com', kind: 'AKSNodeClass', name: names.nodeClass },
        }),
      ),
    ).toBe(true);
    await cluster.patchNodeClaimMetadata(names.badClaim, { labels: { 'karpenter.sh/nodepool': null } });
    const claims = await cluster.nodeClaims();
    expect(claims.items.some((c) => c.name === names.claim)).toBe(true);
    expect(claims.items.some((c) => c.name === names.badClaim)).toBe(false);
    const problem = claims.problems.find((p) => p.object === `nodeClaim "${names.badClaim}"`);
    expect(problem?.field).toBe('spec.nodeClassRef');
    expect(claims.unreadable).toContainEqual(
      expect.objectContaining({ name: names.badClaim, standalone: true }),
    );
  });

  it('deletes a NodeClaim; a NodeClaim already gone counts as deleted', async () => {
    await cluster.deleteNodeClaim(names.claim);
    const deleting = (await cluster.nodeClaims()).items.find((c) => c.name === names.claim);
    expect(deleting?.deleting).toBe(true);
    await cluster.patchNodeClaimMetadata(names.claim, { removeFinalizers: ['karpenter.sh/termination'] });
    await waitFor(
      'the NodeClaim to go',
      async () => ((await cluster.nodeClaims()).items.some((c) => c.name === names.claim) ? undefined : true),
      { timeoutMs: 10_000 },
    );
    await expect(cluster.deleteNodeClaim(names.claim)).resolves.toBeUndefined();
  });
});

describe('kube cluster adapter: events', () => {
  it('records one Event per subject, reason and message, counting repeats after the dedupe window', async () => {
    const eventClock = makeManualClock(new Date());
    const eventConnection = connect();
    const events = makeKubeCluster({
      connection: eventConnection,
      logger,
      clock: eventClock,
      eventDedupeSeconds: 120,
    });
    const event = {
      subject: { kind: 'Pod' as const, namespace: ns, name: 'big' },
      type: 'Warning' as const,
      reason: 'FailedScheduling',
      message: 'no NodePool can host this pod',
    };
    // A new Event takes one request (created first; read only when it exists).
    await events.recordEvent(event);
    expect(eventConnection.stats().requests).toBe(1);
    // A repeat within the window, by the same container, costs no request at all.
    await events.recordEvent(event);
    eventClock.advance(30_000);
    await events.recordEvent(event);
    expect(eventConnection.stats().requests).toBe(1);
    // Another container (no memory of it) finds the Event and drops the repeat as well.
    await makeKubeCluster({
      connection: connect(),
      logger,
      clock: eventClock,
      eventDedupeSeconds: 120,
    }).recordEvent(event);
    let list = await core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: 'reason=FailedScheduling,source=flotilla',
    });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]?.count).toBe(1);
    expect(list.items[0]?.involvedObject).toMatchObject({ kind: 'Pod', name: 'big', namespace: ns });
    eventClock.advance(120_000);
    await events.recordEvent(event);
    await events.recordEvent({ ...event, message: 'another message' });
    list = await core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: 'reason=FailedScheduling,source=flotilla',
    });
    expect(list.items.map((e) => [e.message, e.count]).sort()).toEqual([
      ['another message', 1],
      ['no NodePool can host this pod', 2],
    ]);

    await events.recordEvent({
      subject: { kind: 'NodePool', name: names.pool, uid: poolUid },
      type: 'Normal',
      reason: 'DisruptionBlocked',
      message: 'budget allows 0',
    });
    const clusterEvents = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${names.pool}`,
    });
    expect(
      clusterEvents.items.map((e) => [e.involvedObject.kind, e.involvedObject.apiVersion, e.reason]),
    ).toEqual([['NodePool', 'karpenter.sh/v1', 'DisruptionBlocked']]);

    // A Node named without its uid takes its name there, as the kubelet's Events do, so that
    // `kubectl describe node` (which looks for the Node's uid or its name) shows it.
    const nodeName = `${ns}-node-events`;
    await events.recordEvent({
      subject: { kind: 'Node', name: nodeName },
      type: 'Warning',
      reason: 'FailedDraining',
      message: 'a pod waits to be evicted',
    });
    const nodeEvents = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.kind=Node,involvedObject.uid=${nodeName}`,
    });
    expect(nodeEvents.items.map((e) => [e.involvedObject.name, e.reason])).toEqual([
      [nodeName, 'FailedDraining'],
    ]);
  });

  it('records nothing, and fails nothing, about a pod whose namespace is already gone', async () => {
    // A pending pod read a moment ago whose namespace was deleted since: its Event has nowhere to go.
    const gone = `${ns}-gone`;
    await cluster.recordEvent({
      subject: { kind: 'Pod', namespace: gone, name: 'web-1' },
      type: 'Warning',
      reason: 'FailedScheduling',
      message: 'no NodePool can host it',
    });
    await expect(core.readNamespace({ name: gone })).rejects.toMatchObject({ code: 404 });
  });

  it('records nothing, and fails nothing, about a pod whose namespace is being deleted', async () => {
    // A finalizer of the user's own keeps the namespace Terminating for the test.
    const doomed = `${ns}-doomed`;
    await core.createNamespace({
      body: { metadata: { name: doomed, finalizers: ['example.com/hold'] } },
    });
    try {
      await core.deleteNamespace({ name: doomed });
      await waitFor(
        'the namespace Terminating',
        async () =>
          (await core.readNamespace({ name: doomed })).status?.phase === 'Terminating' ? true : undefined,
        { timeoutMs: 30_000 },
      );
      await cluster.recordEvent({
        subject: { kind: 'Pod', namespace: doomed, name: 'web-1' },
        type: 'Warning',
        reason: 'FailedScheduling',
        message: 'no NodePool can host it',
      });
      expect((await core.listNamespacedEvent({ namespace: doomed })).items).toEqual([]);
    } finally {
      await core
        .patchNamespace(
          { name: doomed, body: { metadata: { finalizers: null } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        )
        .catch(ignore);
    }
  });
});
