import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Toleration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEc2CatalogSource } from '../../shared/adapters/aws/catalog-source.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeNodeClassStatusWriter } from '../../shared/adapters/aws/nodeclass-status-writer.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import { UNREGISTERED_TAINT } from '../../shared/core/index.ts';
import { makeManualClock, systemClock } from '../../shared/ports/clock.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { type ClaimOutcome, type ProvisionResult, provision } from '../../shared/usecases/provision.ts';
import { forceDeleteNodeClaims } from '../harness/cleanup.ts';
import { kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { NodeSimulator } from '../harness/node-sim.ts';
import { waitFor } from '../harness/proc.ts';
import { setUpAccount, TABLE } from '../integration/aws/cloud-fixture.ts';
import { CLUSTER, nodeClassObject, silentLogger } from '../integration/aws/fixtures.ts';
import { noCapacityFor } from '../integration/aws/ice.ts';

// Pods go Pending → the provisioner (in-process, as the Lambda runs it) creates NodeClaims and
// launches instances in moto → the node simulator registers their Nodes → kube-scheduler binds.
// Everything this file creates is scoped by a run id: NodePools carry the template label and taint
// `flotilla-e2e/run=<id>`, and only this file's pods select and tolerate them, because the API
// server is shared with other test files.

const id = randomBytes(3).toString('hex');
const namespace = `provisioner-${id}`;
const RUN_LABEL = 'flotilla-e2e/run';
/** Each test's pools and pods also share a group label, so tests never use each other's nodes. */
const GROUP_LABEL = 'flotilla-e2e/group';
const runToleration: V1Toleration = { key: RUN_LABEL, operator: 'Equal', value: id, effect: 'NoSchedule' };
const nodeClassName = `prov-${id}`;
const karpenter = { group: 'karpenter.sh', version: 'v1' };
const createdPools: string[] = [];

let server: Moto;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let cluster: Cluster;
let simulator: NodeSimulator;
let account: Awaited<ReturnType<typeof setUpAccount>>;
let registrar: NodeJS.Timeout | undefined;
const logLines: Record<string, unknown>[] = [];
const logger = makeLogger({}, { level: 'info', sink: (line) => logLines.push(JSON.parse(line)) });
const ignore = () => undefined;

beforeAll(async () => {
  let cube: Awaited<ReturnType<typeof kube>>;
  [server, cube] = await Promise.all([moto(), kube()]);
  kc = cube.kubeConfig;
  await resetMoto(server);
  const awsClock = makeManualClock(new Date());
  account = await setUpAccount(server, awsClock);
  const catalog = await makeEc2CatalogSource({
    ec2: account.ec2,
    region: 'us-east-1',
    clock: awsClock,
    logger: silentLogger,
  }).fetchCatalog();
  await account.cloud.offeringCache.writeCatalog(catalog);

  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  cluster = makeKubeCluster({ kubeConfig: kc, logger: silentLogger, callTimeoutMs: 15_000 });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const nodeClass = nodeClassObject({ tags: { team: 'platform' } }, nodeClassName);
  delete (nodeClass['metadata'] as Record<string, unknown>)['generation'];
  await custom.createClusterCustomObject({
    group: 'karpenter.k8s.aws',
    version: 'v1',
    plural: 'ec2nodeclasses',
    body: nodeClass,
  });
  simulator = NodeSimulator.start({ ec2: account.ec2, kubeConfig: kc, clusterName: CLUSTER });
  // Stands in for the NodeClaim lifecycle's registration: lifts karpenter.sh/unregistered from
  // this run's Nodes so kube-scheduler can bind to them.
  const register = async () => {
    const nodes = await core.listNode({ labelSelector: `${RUN_LABEL}=${id}` }).catch(() => ({ items: [] }));
    for (const node of nodes.items) {
      if (!node.spec?.taints?.some((t) => t.key === UNREGISTERED_TAINT.key)) continue;
      await cluster
        .patchNode(node.metadata?.name ?? '', {
          removeTaints: [UNREGISTERED_TAINT],
          labels: { 'karpenter.sh/registered': 'true' },
        })
        .catch(ignore);
    }
    registrar = setTimeout(register, 300);
  };
  registrar = setTimeout(register, 300);
});

afterAll(async () => {
  if (registrar) clearTimeout(registrar);
  registrar = undefined;
  await simulator?.stop();
  for (const pool of createdPools) {
    const claims = await custom
      .listClusterCustomObject({
        ...karpenter,
        plural: 'nodeclaims',
        labelSelector: `karpenter.sh/nodepool=${pool}`,
      })
      .catch(() => ({ items: [] }));
    await forceDeleteNodeClaims(
      kc,
      (claims as { items: { metadata: { name: string } }[] }).items.map((c) => c.metadata.name),
    );
    await custom.deleteClusterCustomObject({ ...karpenter, plural: 'nodepools', name: pool }).catch(ignore);
  }
  await custom
    .deleteClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      name: nodeClassName,
    })
    .catch(ignore);
  const events = await core.listNamespacedEvent({ namespace: 'default' }).catch(() => ({ items: [] }));
  for (const e of events.items) {
    if (e.involvedObject.name?.includes(id)) {
      await core.deleteNamespacedEvent({ namespace: 'default', name: e.metadata?.name ?? '' }).catch(ignore);
    }
  }
  await core.deleteNamespace({ name: namespace }).catch(ignore);
});

interface PoolSpec {
  readonly instanceTypes: readonly string[];
  readonly weight?: number;
  readonly taints?: readonly { key: string; value: string; effect: string }[];
  readonly limits?: Record<string, string>;
}

/** A Ready NodePool of this run (its status written as the NodePool controller would). */
async function createPool(group: string, suffix: string, spec: PoolSpec): Promise<string> {
  const name = `prov-${id}-${suffix}`;
  createdPools.push(name);
  await custom.createClusterCustomObject({
    ...karpenter,
    plural: 'nodepools',
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name },
      spec: {
        ...(spec.weight === undefined ? {} : { weight: spec.weight }),
        ...(spec.limits === undefined ? {} : { limits: spec.limits }),
        template: {
          metadata: { labels: { [RUN_LABEL]: id, [GROUP_LABEL]: group } },
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: nodeClassName },
            requirements: [
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
              { key: 'node.kubernetes.io/instance-type', operator: 'In', values: [...spec.instanceTypes] },
            ],
            taints: [{ key: RUN_LABEL, value: id, effect: 'NoSchedule' }, ...(spec.taints ?? [])],
            expireAfter: '720h',
          },
        },
      },
    },
  });
  const ready = (type: string) => ({ type, status: 'True' as const, reason: type, message: '' });
  await cluster.patchNodePoolStatus(name, {
    conditions: [ready('ValidationSucceeded'), ready('NodeClassReady'), ready('Ready')],
  });
  return name;
}

/** A Deployment of `replicas` pods requesting `cpu` each, tolerating this run's taint. */
async function deploy(
  group: string,
  name: string,
  replicas: number,
  cpu: string,
  extraTolerations: readonly V1Toleration[] = [],
): Promise<void> {
  const labels = { app: name };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { [RUN_LABEL]: id, [GROUP_LABEL]: group },
            tolerations: [runToleration, ...extraTolerations],
            terminationGracePeriodSeconds: 0,
            containers: [
              {
                name: 'app',
                image: 'public.ecr.aws/docker/library/busybox:stable',
                resources: { requests: { cpu, memory: '128Mi' } },
              },
            ],
          },
        },
      },
    },
  });
  await waitFor(
    `${replicas} pods of ${name} marked Unschedulable`,
    async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` });
      const pending = pods.items.filter((p) =>
        p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'),
      );
      return pending.length === replicas ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

function run(holder: string): Promise<ProvisionResult> {
  return provision(
    {
      cluster,
      cloud: account.cloud,
      leases: new DynamoLeaseStore(account.dynamodb, TABLE),
      clock: systemClock,
      sleep: (ms) => sleep(ms),
      logger,
      nodeClassResolver: account.resolver,
      nodeClassStatusWriter: makeNodeClassStatusWriter(kc),
    },
    { holder, leaseName: `provisioner#${id}`, batchIdleMs: 300, batchMaxMs: 3_000 },
  );
}

async function podsOf(app: string) {
  return (await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;
}

async function allRunning(app: string, count: number) {
  return waitFor(
    `${count} pods of ${app} Running`,
    async () => {
      const pods = await podsOf(app);
      return pods.length === count && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
    },
    { timeoutMs: 90_000 },
  );
}

async function instancesOf(pool: string) {
  const out = await account.ec2.send(
    new DescribeInstancesCommand({
      Filters: [
        { Name: 'tag:karpenter.sh/nodepool', Values: [pool] },
        { Name: 'instance-state-name', Values: ['pending', 'running'] },
      ],
    }),
  );
  return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
}

async function nodeClaimsOf(pool: string) {
  return (await cluster.nodeClaims()).items.filter((c) => c.nodePoolName === pool);
}

async function nodePoolOfNode(nodeName: string) {
  return (await core.readNode({ name: nodeName })).metadata?.labels?.['karpenter.sh/nodepool'];
}

function launched(claims: readonly ClaimOutcome[]) {
  return claims.flatMap((c) => (c.kind === 'launched' ? [c] : []));
}

describe('provisioner end to end (moto + kube-apiserver + kube-scheduler + node simulator)', () => {
  it('launches NodeClaims for a Deployment of 6 × 1 cpu and kube-scheduler runs every pod on them', async () => {
    const pool = await createPool('main', 'main', { instanceTypes: ['m5.large', 'm5.xlarge', 'm5.2xlarge'] });
    await deploy('main', 'web', 6, '1');

    const result = await run(`main-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(result.unschedulable.filter((u) => u.pod.namespace === namespace)).toEqual([]);
    const ours = result.claims.filter((c) => c.nodePool === pool);
    const launches = launched(ours);
    expect(launches.length).toBeGreaterThan(0);
    expect(launches.length).toBe(ours.length);
    expect(launches.flatMap((l) => l.pods.map((p) => p.name)).sort()).toEqual(
      (await podsOf('web')).map((p) => p.metadata?.name).sort(),
    );

    // NodeClaims are Launched with the instance's identity and resolved labels.
    const claims = await nodeClaimsOf(pool);
    expect(claims.map((c) => c.name).sort()).toEqual(launches.map((l) => l.nodeClaim).sort());
    for (const claim of claims) {
      const outcome = launches.find((l) => l.nodeClaim === claim.name);
      expect(claim.name).toMatch(new RegExp(`^${pool}-[0-9a-f]{10}$`));
      expect(claim.status.providerId).toBe(`aws:///${outcome?.zone}/${outcome?.instanceId}`);
      expect(claim.status.imageId).toBe(account.amis.amd64);
      expect(claim.status.conditions.find((c) => c.type === 'Launched')?.status).toBe('True');
      expect(claim.status.capacity?.['cpu']).toBeGreaterThan(0);
      expect(claim.labels).toMatchObject({
        'karpenter.sh/nodepool': pool,
        'karpenter.k8s.aws/ec2nodeclass': nodeClassName,
        'node.kubernetes.io/instance-type': outcome?.instanceType,
        'topology.kubernetes.io/zone': outcome?.zone,
        'karpenter.sh/capacity-type': 'on-demand',
        [RUN_LABEL]: id,
      });
      expect(claim.finalizers).toContain('karpenter.sh/termination');
    }

    // The instances in moto are tagged for the cluster, pool and claim.
    const instances = await instancesOf(pool);
    expect(instances).toHaveLength(launches.length);
    for (const instance of instances) {
      const tags = Object.fromEntries((instance.Tags ?? []).map((t) => [t.Key, t.Value]));
      expect(tags).toMatchObject({
        [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
        'karpenter.sh/nodepool': pool,
        'karpenter.k8s.aws/ec2nodeclass': nodeClassName,
      });
      expect(launches.map((l) => l.nodeClaim)).toContain(tags['karpenter.sh/nodeclaim']);
    }

    // The simulator registers their Nodes and kube-scheduler binds every pod there.
    const pods = await allRunning('web', 6);
    for (const p of pods) expect(await nodePoolOfNode(p.spec?.nodeName ?? '')).toBe(pool);

    const decisions = logLines.filter((l) => l['message'] === 'launch decided' && l['nodePool'] === pool);
    expect(decisions).toHaveLength(launches.length);
    expect(decisions[0]).toMatchObject({ outcome: 'launched', capacityType: 'on-demand' });
    expect(decisions[0]?.['instanceTypes']).toEqual(expect.arrayContaining([expect.stringMatching(/^m5\./)]));

    // A second run finds nothing left to do: no new claims, no new instances.
    const again = await run(`again-${id}`);
    // (Pods other test files left pending may still be provisionable, but none of ours.)
    const againClaims = again.kind === 'provisioned' ? again.claims : [];
    expect(againClaims.filter((c) => c.nodePool === pool)).toEqual([]);
    expect(await instancesOf(pool)).toHaveLength(launches.length);
  });

  it('routes pods by taints and tolerations to the right NodePool', async () => {
    const general = await createPool('taints', 'general', { instanceTypes: ['m5.large'] });
    const dedicated = await createPool('taints', 'dedicated', {
      instanceTypes: ['c5.large'],
      weight: 100,
      taints: [{ key: 'dedicated', value: 'batch', effect: 'NoSchedule' }],
    });
    // 1.5 cpu each: the two pods cannot share a node, so each lands where its tolerations lead.
    await deploy('taints', 'plain', 1, '1500m');
    await deploy('taints', 'batch', 1, '1500m', [
      { key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' },
    ]);

    const result = await run(`taints-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    const byPod = new Map(launched(result.claims).flatMap((l) => l.pods.map((p) => [p.name, l] as const)));
    const [plain] = await podsOf('plain');
    const [batch] = await podsOf('batch');
    expect(byPod.get(plain?.metadata?.name ?? '')).toMatchObject({
      nodePool: general,
      instanceType: 'm5.large',
    });
    expect(byPod.get(batch?.metadata?.name ?? '')).toMatchObject({
      nodePool: dedicated,
      instanceType: 'c5.large',
    });

    const [plainRunning] = await allRunning('plain', 1);
    const [batchRunning] = await allRunning('batch', 1);
    expect(await nodePoolOfNode(plainRunning?.spec?.nodeName ?? '')).toBe(general);
    expect(await nodePoolOfNode(batchRunning?.spec?.nodeName ?? '')).toBe(dedicated);
  });

  it('re-plans in the same run when the cheapest choice has no capacity', async () => {
    const preferred = await createPool('ice', 'preferred', { instanceTypes: ['t3.large'], weight: 90 });
    const fallback = await createPool('ice', 'fallback', { instanceTypes: ['m5.large'], weight: 10 });
    const restore = noCapacityFor(account.ec2, 't3.large');
    try {
      await deploy('ice', 'ice', 1, '1');
      const result = await run(`ice-${id}`);
      expect(result.kind).toBe('provisioned');
      if (result.kind !== 'provisioned') return;
      expect(result.rounds).toBe(2);
      const [first, second] = result.claims;
      expect(first).toMatchObject({ kind: 'insufficientCapacity', nodePool: preferred });
      expect(first?.kind === 'insufficientCapacity' ? first.offerings : []).toEqual(
        expect.arrayContaining(['on-demand:t3.large:us-east-1a']),
      );
      expect(second).toMatchObject({ kind: 'launched', nodePool: fallback, instanceType: 'm5.large' });
      expect(result.claims).toHaveLength(2);

      // The ICE'd claim is gone, with an event saying why; no t3.large was launched.
      expect(await nodeClaimsOf(preferred)).toEqual([]);
      expect(await instancesOf(preferred)).toEqual([]);
      const events = await core.listNamespacedEvent({ namespace: 'default' });
      expect(
        events.items.some(
          (e) => e.reason === 'InsufficientCapacityError' && e.involvedObject.name === first?.nodeClaim,
        ),
      ).toBe(true);
      const [pod] = await allRunning('ice', 1);
      expect(await nodePoolOfNode(pod?.spec?.nodeName ?? '')).toBe(fallback);
    } finally {
      restore();
    }
  });

  it('ten concurrent runs launch what one run would: the lease admits one decision at a time', async () => {
    const pool = await createPool('lease', 'lease', { instanceTypes: ['m5.xlarge'] });
    await deploy('lease', 'burst', 3, '1');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => run(`burst-${i}-${id}`)));

    expect(results.filter((r) => r.kind === 'skipped' && r.why === 'lease held').length).toBeGreaterThan(0);
    const launches = results.flatMap((r) => (r.kind === 'provisioned' ? launched(r.claims) : []));
    // 3 × 1 cpu fit one m5.xlarge (3.92 cpu allocatable).
    expect(launches).toHaveLength(1);
    expect(await instancesOf(pool)).toHaveLength(1);
    expect(await nodeClaimsOf(pool)).toHaveLength(1);
    await allRunning('burst', 3);
  });

  it('stops at the NodePool cpu limit and tells the remaining pods why', async () => {
    const pool = await createPool('limits', 'limited', {
      instanceTypes: ['m5.xlarge'],
      limits: { cpu: '4' },
    });
    await deploy('limits', 'capped', 6, '1');

    const result = await run(`limits-${id}`);
    expect(result.kind).toBe('provisioned');
    if (result.kind !== 'provisioned') return;
    expect(launched(result.claims)).toHaveLength(1);
    expect(await instancesOf(pool)).toHaveLength(1);
    const stuck = result.unschedulable.filter((u) => u.pod.namespace === namespace);
    expect(stuck).toHaveLength(3);
    for (const u of stuck) {
      expect(u.reasons.find((r) => r.nodePool === pool)?.reason).toMatch(/limit/);
    }

    const events = await waitFor(
      'FailedScheduling events from flotilla',
      async () => {
        const list = await core.listNamespacedEvent({ namespace });
        const ours = list.items.filter(
          (e) =>
            e.reason === 'FailedScheduling' &&
            e.source?.component === 'flotilla' &&
            e.involvedObject.name?.startsWith('capped-'),
        );
        return ours.length >= 3 ? ours : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(new Set(events.map((e) => e.involvedObject.name))).toEqual(new Set(stuck.map((u) => u.pod.name)));
    expect(events[0]?.message).toMatch(new RegExp(`${pool}.*limit`));
    expect(logLines.some((l) => l['message'] === 'pods unschedulable' && Number(l['count']) >= 3)).toBe(true);

    const pods = await podsOf('capped');
    await waitFor(
      '3 capped pods Running',
      async () =>
        (await podsOf('capped')).filter((p) => p.status?.phase === 'Running').length === 3 ? true : undefined,
      { timeoutMs: 90_000 },
    );
    expect(pods).toHaveLength(6);
  });
});
