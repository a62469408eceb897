import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import {
  bundledCatalog,
  type MemoryCloud,
  type MemoryTerminationQueue,
  makeMemoryCloud,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../../../shared/adapters/memory/index.ts';
import type { Taint } from '../../../shared/core/index.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import { type CloudInstance, type EC2NodeClass, isNodeClassReady } from '../../../shared/ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, Condition } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { LifecycleResult } from '../../../shared/usecases/lifecycle/lifecycle.ts';
import { reconcileNodeClasses } from '../../../shared/usecases/nodeclass/nodeclass.ts';
import { setUpProvisioner } from '../../../shared/usecases/provisioning/setup.ts';
import { viaQueue } from '../../../shared/usecases/termination/handover.ts';
import { setUpTermination } from '../../../shared/usecases/termination/setup.ts';
import type { TerminationResult } from '../../../shared/usecases/termination/termination.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { ec2NodeClass } from '../../fixtures/node-classes.ts';
import { forceDeleteNodeClaims } from '../../harness/cleanup.ts';
import { kube } from '../../harness/index.ts';
import { waitFor } from '../../harness/proc.ts';

const id = randomBytes(3).toString('hex');
const names = {
  pool: `lc-pool-${id}`,
  nodeClass: `lc-class-${id}`,
  claim: `lc-claim-${id}`,
  lostClaim: `lc-lost-${id}`,
  unlaunchedClaim: `lc-unlaunched-${id}`,
  node: `lc-node-${id}`,
};
const mine = new Set(Object.values(names));
const karpenter = { group: 'karpenter.sh', version: 'v1' };
const ec2NodeClasses = { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses' };
const ZONE = 'us-east-1a';
const UNREGISTERED: Taint = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' };
const STARTUP: Taint = { key: 'agent.flotilla.test/not-ready', effect: 'NoSchedule' };
// Keeps other test files' pods off the node.
const DEDICATED: Taint = { key: 'flotilla.test/lifecycle', value: id, effect: 'NoSchedule' };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const ignore = () => undefined;

const logLines: string[] = [];
const logger = makeLogger({}, { level: 'info', sink: (line) => logLines.push(line) });
const metrics = quietMetrics;

/** A cluster user's (and kubelet's) kubeconfig: test set-up only. */
let kc: KubeConfig;
/** Flotilla's own kubeconfig (the flotilla:controller group). */
let controllerKc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
/** The real adapter as the controller identity, wrapped to record every write with the name it targets. */
let cluster: Cluster;
/** The instances behind the NodeClaims, and what termination terminates. */
let cloud: MemoryCloud;
/** Where the lifecycle hands the NodeClaims it deleted to termination. */
let terminations: MemoryTerminationQueue;
const leases = makeMemoryLeaseStore();
const resolver = makeMemoryNodeClassResolver({ zones: [ZONE] });
let passes = 0;
const writes: string[] = [];
let instance: CloudInstance;
let lostInstance: CloudInstance;

function recording(inner: Cluster): Cluster {
  const record =
    <A extends unknown[]>(method: string, f: (...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      const target = args[0];
      const name =
        typeof target === 'string'
          ? target
          : ((target as { subject?: { name?: string } }).subject?.name ?? '?');
      writes.push(`${method} ${name}`);
      return f(...args);
    };
  return {
    ...inner,
    patchNodeClaimStatus: record('patchNodeClaimStatus', inner.patchNodeClaimStatus),
    patchNodeClaimMetadata: record('patchNodeClaimMetadata', inner.patchNodeClaimMetadata),
    patchNode: record('patchNode', inner.patchNode),
    deleteNodeClaim: record('deleteNodeClaim', inner.deleteNodeClaim),
    patchNodePoolStatus: record('patchNodePoolStatus', inner.patchNodePoolStatus),
    patchNodePoolMetadata: record('patchNodePoolMetadata', inner.patchNodePoolMetadata),
    patchNodeClassStatus: record('patchNodeClassStatus', inner.patchNodeClassStatus),
    patchNodeClassMetadata: record('patchNodeClassMetadata', inner.patchNodeClassMetadata),
    recordEvent: record('recordEvent', inner.recordEvent),
  };
}

const myWrites = () => writes.filter((w) => mine.has(w.split(' ')[1] ?? ''));
/**
 * One controllers pass of the provisioner Lambda (the EC2NodeClass controller, the lifecycle, the
 * NodePool and NodeOverlay status), set up as its handler sets it up, handing the NodeClaims it
 * deletes to the termination queue.
 */
const pass = (now: Date = new Date()): Promise<LifecycleResult> => {
  passes += 1;
  return setUpProvisioner({
    cluster,
    cloud,
    leases,
    clock: systemClock,
    sleep: (ms) => sleep(ms),
    logger,
    metrics,
    nodeClassResolver: resolver,
    requestTermination: viaQueue(terminations),
  }).controllersPass(`lc-${id}-${passes}`, now);
};

/**
 * What the termination Lambda (set up as its handler sets it up) does with the requests the
 * lifecycle sent: passes over each NodeClaim until it is done. Returns the NodeClaims requested,
 * with their last result.
 */
async function terminateRequested(): Promise<Map<string, TerminationResult>> {
  const termination = setUpTermination({
    cluster,
    cloud,
    logger,
    metrics,
    terminationQueue: terminations,
    clock: systemClock,
    sleep: (ms) => sleep(ms),
  });
  const results = new Map<string, TerminationResult>();
  for (const request of terminations.receive()) {
    if (!('nodeClaim' in request)) throw new Error(`unexpected request for node ${request.node}`);
    const { nodeClaim } = request;
    const done = await waitFor(
      `termination of ${nodeClaim}`,
      async () => {
        const result = await termination.terminate(nodeClaim);
        return result.kind === 'continue' ? undefined : result;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    results.set(nodeClaim, done);
  }
  return results;
}

async function readClaim(name: string): Promise<ClusterNodeClaim | undefined> {
  return (await cluster.nodeClaims()).items.find((c) => c.name === name);
}

const conditionOf = (conditions: readonly Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

async function readPool() {
  return (await cluster.nodePools()).items.find((p) => p.pool.name === names.pool);
}

async function createClaim(name: string, poolUid: string): Promise<void> {
  await cluster.createNodeClaim({
    name,
    nodePool: { name: names.pool, uid: poolUid },
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: names.nodeClass },
    labels: { team: 'web' },
    annotations: { 'flotilla.test/note': id },
    requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
    requests: { cpu: 1000, memory: 2 ** 30 },
    taints: [DEDICATED],
    startupTaints: [STARTUP],
  });
}

async function createClaimFor(
  name: string,
  nodeClass: EC2NodeClass,
  poolUid: string,
): Promise<CloudInstance> {
  await createClaim(name, poolUid);
  const types = (await cloud.instanceTypes(nodeClass)).filter((t) => t.name === 'm5.large');
  const launched = await cloud.create({
    nodeClaimName: name,
    nodePoolName: names.pool,
    nodeClass,
    instanceTypes: types,
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
    labels: {},
    taints: [DEDICATED],
    startupTaints: [STARTUP],
  });
  // The lifecycle controller's own test: its input is a NodeClaim the provisioner launched, so the
  // provisioner's status write is played here, through the controller identity's adapter.
  await cluster.patchNodeClaimStatus(name, {
    providerId: launched.providerId,
    capacity: { cpu: 2000, memory: 8 * 2 ** 30, pods: 29 },
    allocatable: { cpu: 1930, memory: 7 * 2 ** 30, pods: 29 },
    conditions: [{ type: 'Launched', status: 'True', reason: 'Launched', message: '' }],
  });
  return launched;
}

beforeAll(async () => {
  const cube = await kube();
  ({ userKubeConfig: kc, controllerKubeConfig: controllerKc } = cube);
  core = kc.makeApiClient(CoreV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  cluster = recording(
    makeKubeCluster({
      connection: cube.controllerConnection(),
      logger,
      maxConcurrentCalls: 4,
      callTimeoutMs: 15_000,
    }),
  );
  cloud = makeMemoryCloud({
    clock: systemClock,
    clusterName: `lc-${id}`,
    catalog: bundledCatalog('us-east-1', [ZONE]),
  });
  terminations = makeMemoryTerminationQueue(systemClock);

  await custom.createClusterCustomObject({
    ...ec2NodeClasses,
    body: ec2NodeClass(names.nodeClass, {}, { discovery: id }),
  });
  const parsed = (await cluster.nodeClasses()).items.find((c) => c.name === names.nodeClass);
  if (parsed === undefined) throw new Error(`ec2NodeClass ${names.nodeClass} was not read back`);
  // The EC2NodeClass controller resolves the new class before anything launches with it, as the
  // provisioner does at the start of a run; its status is then read back as stored.
  await reconcileNodeClasses(
    { cluster, resolver, leases, clock: systemClock, logger, metrics },
    { holder: `lc-setup-${id}`, scope: 'stale' },
    { nodeClasses: [parsed], nodeClaims: [] },
  );
  const nodeClass = (await cluster.nodeClasses()).items.find((c) => c.name === names.nodeClass);
  if (nodeClass === undefined || !isNodeClassReady(nodeClass)) {
    throw new Error(`ec2NodeClass ${names.nodeClass} is not Ready: ${JSON.stringify(nodeClass?.status)}`);
  }

  const pool = (await custom.createClusterCustomObject({
    ...karpenter,
    plural: 'nodepools',
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: names.pool },
      spec: {
        template: {
          metadata: { labels: { team: 'web' } },
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: names.nodeClass },
            requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
            taints: [DEDICATED],
            startupTaints: [STARTUP],
          },
        },
      },
    },
  })) as { metadata: { uid: string } };

  instance = await createClaimFor(names.claim, nodeClass, pool.metadata.uid);
  lostInstance = await createClaimFor(names.lostClaim, nodeClass, pool.metadata.uid);
  // Created, but the provisioner never launched it.
  await createClaim(names.unlaunchedClaim, pool.metadata.uid);

  // The node joins as kubelet registers it: with the taints the user data asks for, not Ready yet.
  await core.createNode({
    body: {
      metadata: { name: names.node, labels: { 'kubernetes.io/hostname': names.node } },
      spec: { providerID: instance.providerId, taints: [UNREGISTERED, STARTUP] },
    },
  });
  await core.patchNodeStatus(
    {
      name: names.node,
      body: {
        status: {
          capacity: { cpu: '2', memory: '8Gi', pods: '29' },
          allocatable: { cpu: '1930m', memory: '7Gi', pods: '29' },
        },
      },
    },
    mergePatch,
  );
});

afterAll(async () => {
  if (controllerKc === undefined) return;
  await forceDeleteNodeClaims(controllerKc, [names.claim, names.lostClaim, names.unlaunchedClaim]);
  // The Node's termination finalizer is Flotilla's to drop.
  await controllerKc
    .makeApiClient(CoreV1Api)
    .patchNode({ name: names.node, body: { metadata: { finalizers: null } } }, mergePatch)
    .catch(ignore);
  await core.deleteNode({ name: names.node }).catch(ignore);
  await kc
    .makeApiClient(CoordinationV1Api)
    .deleteNamespacedLease({ namespace: 'kube-node-lease', name: names.node })
    .catch(ignore);
  await custom
    .deleteClusterCustomObject({ ...karpenter, plural: 'nodepools', name: names.pool })
    .catch(ignore);
  await custom.deleteClusterCustomObject({ ...ec2NodeClasses, name: names.nodeClass }).catch(ignore);
  // As a user's delete ends: the EC2NodeClass controller releases the class's finalizer once no
  // NodeClaim uses it.
  const deleting = (await cluster.nodeClasses()).items.filter((c) => c.name === names.nodeClass);
  await reconcileNodeClasses(
    { cluster, resolver, leases, clock: systemClock, logger, metrics },
    { holder: `lc-teardown-${id}`, scope: 'all' },
    { nodeClasses: deleting, nodeClaims: (await cluster.nodeClaims()).items },
  );
  const events = await core.listNamespacedEvent({ namespace: 'default' }).catch(() => ({ items: [] }));
  for (const e of events.items) {
    if (e.involvedObject.name?.includes(id)) {
      await core.deleteNamespacedEvent({ namespace: 'default', name: e.metadata?.name ?? '' }).catch(ignore);
    }
  }
});

describe('reconcileLifecycle on a real apiserver', () => {
  it('registers the NodeClaim whose node joined, and waits for the one whose node has not', async () => {
    const result = await pass();
    // The recorder sees the writes, so the "changes nothing" checks below can fail.
    expect(myWrites()).toEqual(
      expect.arrayContaining([`patchNode ${names.node}`, `patchNodeClaimStatus ${names.claim}`]),
    );
    expect(result.registered).toContain(names.claim);
    expect(result.registered).not.toContain(names.lostClaim);
    expect(result.waiting).toEqual(expect.arrayContaining([names.claim, names.lostClaim]));

    const node = await core.readNode({ name: names.node });
    expect(node.metadata?.finalizers).toContain('karpenter.sh/termination');
    const claimUid = (await cluster.nodeClaim(names.claim))?.uid;
    expect(node.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        name: names.claim,
        uid: claimUid,
        blockOwnerDeletion: true,
      },
    ]);
    expect(node.metadata?.labels).toMatchObject({
      'karpenter.sh/registered': 'true',
      'karpenter.sh/nodepool': names.pool,
      'karpenter.k8s.aws/ec2nodeclass': names.nodeClass,
      team: 'web',
    });
    expect(node.metadata?.labels?.['karpenter.sh/initialized']).toBeUndefined();
    expect(node.metadata?.annotations?.['flotilla.test/note']).toBe(id);
    const taints = (node.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
    expect(taints).not.toContain('karpenter.sh/unregistered:NoExecute');
    expect(taints).toEqual(
      expect.arrayContaining([
        'flotilla.test/lifecycle:NoSchedule',
        'agent.flotilla.test/not-ready:NoSchedule',
      ]),
    );

    const claim = await readClaim(names.claim);
    expect(claim?.status.nodeName).toBe(names.node);
    expect(conditionOf(claim?.status.conditions, 'Registered')?.status).toBe('True');
    expect(conditionOf(claim?.status.conditions, 'Initialized')).toMatchObject({
      status: 'Unknown',
      reason: 'NodeNotReady',
    });
    // Ready follows Launched, Registered and Initialized, naming the ones still pending.
    expect(conditionOf(claim?.status.conditions, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'UnhealthyDependents',
      message: 'Initialized=Unknown',
    });
    const lost = await readClaim(names.lostClaim);
    expect(conditionOf(lost?.status.conditions, 'Registered')).toMatchObject({
      status: 'Unknown',
      reason: 'NodeNotFound',
    });
    expect(conditionOf(lost?.status.conditions, 'Ready')).toMatchObject({
      status: 'Unknown',
      message: 'Registered=Unknown, Initialized=Unknown',
    });
    const unlaunched = await readClaim(names.unlaunchedClaim);
    expect(conditionOf(unlaunched?.status.conditions, 'Ready')).toMatchObject({
      status: 'Unknown',
      message: 'Launched=Unknown, Registered=Unknown, Initialized=Unknown',
    });
    expect(
      logLines.some(
        (l) => l.includes('"registered nodeclaim"') && l.includes(`"nodeClaim":"${names.claim}"`),
      ),
    ).toBe(true);
  });

  it('sets the NodePool status: validation, NodeClass readiness, registration health, resources and nodes', async () => {
    const pool = await readPool();
    const status = (type: string) => {
      const c = conditionOf(pool?.conditions, type);
      return c === undefined ? undefined : `${c.status}/${c.reason}`;
    };
    expect(status('ValidationSucceeded')).toBe('True/ValidationSucceeded');
    expect(status('NodeClassReady')).toBe('True/NodeClassReady');
    expect(status('Ready')).toBe('True/Ready');
    expect(status('NodeRegistrationHealthy')).toBe('True/NodeRegistrationHealthy');
    expect(pool?.ready).toBe(true);
    // The registered claim counts its node's capacity, the launched one its own.
    expect(pool?.resources).toEqual({ cpu: 4000, memory: 16 * 2 ** 30, pods: 58, nodes: 2 });
    expect(pool?.nodes).toBe(2);
  });

  it("names the registered claim's instance after its node on the next pass, once", async () => {
    writes.length = 0;
    await pass();
    expect(myWrites()).toEqual([`patchNodeClaimMetadata ${names.claim}`]);
    const claim = await readClaim(names.claim);
    expect(claim?.annotations['karpenter.k8s.aws/tagged']).toBe('true');
    expect((await cloud.get(instance.instanceId))?.tags['Name']).toBe(claim?.status.nodeName);
  });

  it('changes nothing when run again', async () => {
    writes.length = 0;
    const result = await pass();
    expect(result.registered.filter((n) => mine.has(n))).toEqual([]);
    expect(result.waiting.filter((n) => mine.has(n))).toEqual([]);
    expect(result.nodePoolsUpdated.filter((n) => mine.has(n))).toEqual([]);
    expect(myWrites()).toEqual([]);
  });

  it('initializes once the node is Ready and the agent removed its startup taint', async () => {
    const now = new Date().toISOString();
    await core.patchNodeStatus(
      {
        name: names.node,
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'KubeletReady',
                message: 'kubelet is posting ready status',
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              },
            ],
          },
        },
      },
      mergePatch,
    );
    // As an agent (Odigos-style) does once it is set up: drop its own startup taint only, against
    // the Node it read, and read again when kube-controller-manager wrote the Node in between.
    for (let attempt = 1; ; attempt++) {
      const current = await core.readNode({ name: names.node });
      try {
        await core.patchNode(
          {
            name: names.node,
            body: {
              metadata: { resourceVersion: current.metadata?.resourceVersion },
              spec: { taints: (current.spec?.taints ?? []).filter((t) => t.key !== STARTUP.key) },
            },
          },
          mergePatch,
        );
        break;
      } catch (error) {
        if ((error as { code?: number }).code !== 409 || attempt >= 5) throw error;
      }
    }

    // kube-controller-manager may briefly hold node.kubernetes.io taints on a node it saw
    // without a Ready condition; the lifecycle waits those out like any ephemeral taint.
    const claim = await waitFor(
      'the NodeClaim to be Initialized',
      async () => {
        await pass();
        const c = await readClaim(names.claim);
        return conditionOf(c?.status.conditions, 'Initialized')?.status === 'True' ? c : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(claim.status.nodeName).toBe(names.node);
    expect(conditionOf(claim.status.conditions, 'Ready')).toMatchObject({ status: 'True', reason: 'Ready' });
    const node = await core.readNode({ name: names.node });
    expect(node.metadata?.labels?.['karpenter.sh/initialized']).toBe('true');
    expect((node.spec?.taints ?? []).map((t) => t.key)).not.toContain(STARTUP.key);
    expect(logLines.some((l) => l.includes('"initialized nodeclaim"') && l.includes(names.claim))).toBe(true);
  });

  it('deletes the NodeClaim that was not launched within 5 minutes and hands it to termination', async () => {
    const result = await pass(new Date(Date.now() + 6 * 60_000));
    expect(result.deleted.filter((d) => mine.has(d.name))).toEqual([
      { name: names.unlaunchedClaim, reason: 'launch_timeout' },
    ]);
    // Deleted with its finalizer kept: termination finishes it.
    const deleting = await readClaim(names.unlaunchedClaim);
    expect(deleting?.deleting).toBe(true);
    expect(deleting?.finalizers).toContain('karpenter.sh/termination');
    const terminated = await terminateRequested();
    expect([...terminated.keys()].filter((n) => mine.has(n))).toEqual([names.unlaunchedClaim]);
    expect(terminated.get(names.unlaunchedClaim)?.kind).toBe('done');
    await waitFor(
      'the unlaunched NodeClaim to be gone',
      async () => ((await readClaim(names.unlaunchedClaim)) === undefined ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect(conditionOf((await readPool())?.conditions, 'NodeRegistrationHealthy')).toMatchObject({
      status: 'False',
      reason: 'LaunchTimeout',
    });
  });

  it('deletes the NodeClaim whose node never registered after 15 minutes; termination terminates its instance', async () => {
    expect((await cloud.get(lostInstance.instanceId))?.state).toBe('running');
    const result = await pass(new Date(Date.now() + 16 * 60_000));
    expect(result.deleted).toContainEqual({ name: names.lostClaim, reason: 'registration_timeout' });
    expect(result.deleted.map((d) => d.name)).not.toContain(names.claim);
    // The lifecycle leaves the instance to termination (the provisioner's role may not terminate).
    expect((await cloud.get(lostInstance.instanceId))?.state).toBe('running');
    expect((await readClaim(names.lostClaim))?.deleting).toBe(true);
    const terminated = await terminateRequested();
    expect([...terminated.keys()].filter((n) => mine.has(n))).toEqual([names.lostClaim]);
    expect(terminated.get(names.lostClaim)?.kind).toBe('done');
    expect(await cloud.get(lostInstance.instanceId)).toBeUndefined();
    expect(await cloud.get(instance.instanceId)).toBeDefined();
    await waitFor(
      'the lost NodeClaim to be gone',
      async () => ((await readClaim(names.lostClaim)) === undefined ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect(
      logLines.some(
        (l) =>
          l.includes('"deleting nodeclaim"') &&
          l.includes('"decision":"delete"') &&
          l.includes(names.lostClaim) &&
          l.includes('"reason":"registration_timeout"') &&
          l.includes('"handedOver":"termination queue"'),
      ),
    ).toBe(true);

    const pool = await readPool();
    expect(conditionOf(pool?.conditions, 'NodeRegistrationHealthy')).toMatchObject({
      status: 'False',
      reason: 'RegistrationTimeout',
    });
    expect(pool?.resources).toEqual({ cpu: 2000, memory: 8 * 2 ** 30, pods: 29, nodes: 1 });
    expect(pool?.nodes).toBe(1);
  });

  it('changes nothing on a further pass, even much later', async () => {
    writes.length = 0;
    await pass(new Date(Date.now() + 60 * 60_000));
    expect(myWrites()).toEqual([]);
    expect(await readClaim(names.claim)).toBeDefined();
  });
});
