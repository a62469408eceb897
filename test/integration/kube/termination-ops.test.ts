import { randomBytes } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PolicyV1Api,
  StorageV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';
import { waitFor } from '../../harness/proc.ts';

// The Cluster port's termination operations against the real API server. kube-controller-manager
// runs in the harness, so PodDisruptionBudget status (disruptionsAllowed) is the real one. No
// kubelet runs for this file's Node: pod status is written here as a kubelet would. The adapter
// runs as Flotilla's own identity (the flotilla:controller group); set-up plays a user and kubelet.

const id = randomBytes(3).toString('hex');
const ns = `term-ops-${id}`;
const nodeName = `term-node-${id}`;
const pvName = `term-pv-${id}`;
const attachmentName = `term-va-${id}`;
const otherAttachment = `term-va-other-${id}`;
const ignore = () => undefined;

/** A cluster user's kubeconfig, for set-up that plays a user or kubelet. */
let kc: KubeConfig;
let core: CoreV1Api;
let cluster: Cluster;

beforeAll(async () => {
  const cube = await kube();
  kc = cube.userKubeConfig;
  core = kc.makeApiClient(CoreV1Api);
  cluster = makeKubeCluster({
    connection: cube.controllerConnection(),
    logger: makeLogger({}, { level: 'error', sink: () => {} }),
    callTimeoutMs: 15_000,
  });
  await createNamespace(core, ns);
  await core.createNode({
    body: {
      metadata: { name: nodeName, labels: { 'term-ops': id } },
      spec: {
        providerID: `aws:///us-east-1a/i-0${id}`,
        // Nothing else schedules here while the tests run.
        taints: [{ key: 'term-ops', value: id, effect: 'NoSchedule' }],
      },
    },
  });
  // The termination finalizer is Flotilla's to put on a Node it manages.
  await cluster.patchNode(nodeName, { addFinalizers: ['karpenter.sh/termination'] });
});

afterAll(async () => {
  const storage = kc.makeApiClient(StorageV1Api);
  await storage.deleteVolumeAttachment({ name: attachmentName }).catch(ignore);
  await storage.deleteVolumeAttachment({ name: otherAttachment }).catch(ignore);
  await cluster.patchNode(nodeName, { removeFinalizers: ['karpenter.sh/termination'] }).catch(ignore);
  await core.deleteNode({ name: nodeName }).catch(ignore);
  await core.deletePersistentVolume({ name: pvName }).catch(ignore);
  await core.deleteNamespace({ name: ns }).catch(ignore);
});

/** A pod bound to this file's Node, made Running and Ready as its kubelet would. */
async function runningPod(name: string, extra: Partial<V1Pod> = {}, labels: Record<string, string> = {}) {
  const created = await core.createNamespacedPod({
    namespace: ns,
    body: {
      ...extra,
      metadata: { name, namespace: ns, labels: { app: name, ...labels }, ...extra.metadata },
      spec: {
        nodeName,
        terminationGracePeriodSeconds: 5,
        tolerations: [{ key: 'term-ops', operator: 'Exists' }],
        containers: [{ name: 'app', image: 'public.ecr.aws/docker/library/busybox:stable' }],
        ...extra.spec,
      },
    },
  });
  const now = new Date();
  const status = {
    phase: 'Running',
    startTime: now,
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: now },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
    ],
  };
  // Controllers may touch the new pod first: re-read on conflict.
  let current = created;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await core.replaceNamespacedPodStatus({ namespace: ns, name, body: { ...current, status } });
    } catch (error) {
      if (attempt >= 5 || (error as { code?: number }).code !== 409) throw error;
      current = await core.readNamespacedPod({ namespace: ns, name });
    }
  }
}

const key = (pod: V1Pod) => ({
  namespace: pod.metadata?.namespace ?? '',
  name: pod.metadata?.name ?? '',
  uid: pod.metadata?.uid ?? '',
});

describe('kube cluster adapter: termination operations', () => {
  it('reads one Node and one NodeClaim by name, undefined when missing', async () => {
    const node = await cluster.node(nodeName);
    expect(node).toMatchObject({ name: nodeName, finalizers: ['karpenter.sh/termination'], deleting: false });
    expect(node?.providerId).toBe(`aws:///us-east-1a/i-0${id}`);
    expect(await cluster.node(`missing-${id}`)).toBeUndefined();
    expect(await cluster.nodeClaim(`missing-${id}`)).toBeUndefined();
  });

  it('lists the pods on a node as DrainPods: tiers, DaemonSet owners, mirror pods, grace periods, volumes', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    // A real DaemonSet (selecting no node) owns the pod, so the garbage collector keeps it; not as
    // its controller, so the DaemonSet controller neither adopts nor releases it.
    const ds = await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent-ds' } },
          template: {
            metadata: { labels: { app: 'agent-ds' } },
            spec: {
              nodeSelector: { 'term-ops-none': id },
              containers: [{ name: 'a', image: 'public.ecr.aws/docker/library/busybox:stable' }],
            },
          },
        },
      },
    });
    await core.createPersistentVolume({
      body: {
        metadata: { name: pvName },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          csi: { driver: 'ebs.csi.aws.com', volumeHandle: `vol-${id}` },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'data' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          volumeName: pvName,
          resources: { requests: { storage: '1Gi' } },
        },
      },
    });
    await runningPod('db', {
      spec: {
        containers: [{ name: 'db', image: 'public.ecr.aws/docker/library/busybox:stable' }],
        priorityClassName: 'system-cluster-critical',
        terminationGracePeriodSeconds: 45,
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
    await runningPod('agent-x', {
      metadata: {
        name: 'agent-x',
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'DaemonSet',
            name: 'agent',
            uid: ds.metadata?.uid ?? '',
          },
        ],
      },
    });
    await runningPod('static-web', {
      metadata: { name: 'static-web', annotations: { 'kubernetes.io/config.mirror': 'abc' } },
    });

    const read = await cluster.podsOnNode(nodeName);
    expect(read.problems).toEqual([]);
    const byName = new Map(read.items.map((p) => [p.name, p]));
    expect(byName.get('db')).toMatchObject({
      namespace: ns,
      priorityClassName: 'system-cluster-critical',
      daemonSet: false,
      mirror: false,
      phase: 'Running',
      terminationGracePeriodSeconds: 45,
      volumeNames: [pvName],
    });
    expect(byName.get('agent-x')).toMatchObject({
      daemonSet: true,
      mirror: false,
      terminationGracePeriodSeconds: 5,
    });
    expect(byName.get('static-web')).toMatchObject({ mirror: true });
    expect(byName.get('db')?.tolerations).toContainEqual({ key: 'term-ops', operator: 'Exists' });
    expect(byName.get('db')?.deletedAtMs).toBeUndefined();
    // Pods on other nodes are not listed.
    expect(read.items.every((p) => p.namespace === ns)).toBe(true);
  });

  it('evicts through the Eviction API: accepted, blocked by a PDB (429), gone for a missing or replaced pod', async () => {
    const free = await runningPod('free');
    expect(await cluster.evictPod(key(free))).toBe('evicted');
    const after = await core.readNamespacedPod({ namespace: ns, name: 'free' }).catch(() => undefined);
    // Evicted: deleted, or terminating until its kubelet confirms.
    expect(after === undefined || after.metadata?.deletionTimestamp !== undefined).toBe(true);

    const guarded = await runningPod('guarded', {}, { guard: id });
    await kc.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'guard' },
        spec: { minAvailable: 1, selector: { matchLabels: { guard: id } } },
      },
    });
    await waitFor(
      'kube-controller-manager to compute the PDB status',
      async () => {
        const pdb = await kc
          .makeApiClient(PolicyV1Api)
          .readNamespacedPodDisruptionBudget({ namespace: ns, name: 'guard' });
        return pdb.status?.expectedPods === 1 && pdb.status.currentHealthy === 1 ? pdb : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const budgets = (await cluster.podDisruptionBudgets()).items.filter((b) => b.namespace === ns);
    expect(budgets).toEqual([expect.objectContaining({ name: 'guard', disruptionsAllowed: 0 })]);
    expect(await cluster.evictPod(key(guarded))).toBe('blocked');
    expect(
      (await core.readNamespacedPod({ namespace: ns, name: 'guarded' })).metadata?.deletionTimestamp,
    ).toBeUndefined();

    expect(await cluster.evictPod({ namespace: ns, name: `missing-${id}`, uid: 'x' })).toBe('gone');
    // A pod replaced by one of the same name: the UID precondition fails (409).
    const replaced = await runningPod('replaced');
    expect(await cluster.evictPod({ ...key(replaced), uid: 'an-earlier-uid' })).toBe('gone');
    expect(
      (await core.readNamespacedPod({ namespace: ns, name: 'replaced' })).metadata?.deletionTimestamp,
    ).toBeUndefined();
  });

  it('deletes a pod with a grace period and a UID precondition; a missing pod is fine', async () => {
    const pod = await runningPod('slow', {
      spec: { containers: [{ name: 'a', image: 'busybox' }], terminationGracePeriodSeconds: 600 },
    });
    await cluster.deletePod({ ...key(pod), uid: 'not-this-one' }, 7);
    expect(
      (await core.readNamespacedPod({ namespace: ns, name: 'slow' })).metadata?.deletionTimestamp,
    ).toBeUndefined();
    await cluster.deletePod(key(pod), 7);
    const deleting = await core.readNamespacedPod({ namespace: ns, name: 'slow' });
    expect(deleting.metadata?.deletionGracePeriodSeconds).toBe(7);
    const drain = (await cluster.podsOnNode(nodeName)).items.find((p) => p.name === 'slow');
    expect(drain?.deletedAtMs).toBeGreaterThan(0);
    await cluster.deletePod({ namespace: ns, name: `missing-${id}`, uid: 'x' }, 1);
  });

  it('lists the VolumeAttachments of one node', async () => {
    const storage = kc.makeApiClient(StorageV1Api);
    await storage.createVolumeAttachment({
      body: {
        metadata: { name: attachmentName },
        spec: { attacher: 'ebs.csi.aws.com', nodeName, source: { persistentVolumeName: pvName } },
      },
    });
    await storage.createVolumeAttachment({
      body: {
        metadata: { name: otherAttachment },
        spec: {
          attacher: 'ebs.csi.aws.com',
          nodeName: `elsewhere-${id}`,
          source: { persistentVolumeName: pvName },
        },
      },
    });
    expect(await cluster.volumeAttachments(nodeName)).toEqual([
      { name: attachmentName, nodeName, persistentVolumeName: pvName },
    ]);
  });

  it('deletes a Node: it stays, deleting, until its finalizer goes; deleting again is fine', async () => {
    await cluster.deleteNode(nodeName);
    const deleting = await cluster.node(nodeName);
    expect(deleting?.deleting).toBe(true);
    expect(deleting?.deletedAtMs).toBeGreaterThan(0);
    await cluster.deleteNode(nodeName);
    await cluster.patchNode(nodeName, { removeFinalizers: ['karpenter.sh/termination'] });
    await waitFor(
      'the Node to go',
      async () => ((await cluster.node(nodeName)) === undefined ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    await cluster.deleteNode(nodeName);
  });
});
