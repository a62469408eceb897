import {
  bundledCatalog,
  bundledCatalogRecords,
  launchTags,
  type MemoryCloud,
  type MemoryCluster,
  makeMemoryCloud,
  makeMemoryCluster,
  makeMemoryLeaseStore,
  makeMemoryNodeClassResolver,
  makeMemoryTerminationQueue,
} from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { seedInitialNodes } from '../../../shared/simulator/initial-nodes.ts';
import { makeKube } from '../../../shared/simulator/kube.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { setUpProvisioner } from '../../../shared/usecases/provisioning/setup.ts';
import { recordingMetrics } from '../../fixtures/metrics.ts';

// A small cluster for the hostile-summary property test, built the way the simulator starts one:
// the scenario's NodePool and EC2NodeClass applied as a user applies them, its initial nodes
// launched as the provisioner would have launched them (NodeClaim, tagged instance, launch written
// back) and registered by the simulator's kubelets, the controllers pass run, and pods placed on
// them as kube-scheduler would bind them. Deterministic: two worlds built alike are alike to the
// uid, the instance id and the second.

export const CLUSTER = 'hostile';

const SCENARIO = `
name: hostile-summary
region: us-east-1
zones: [us-east-1a, us-east-1b]
duration: 10m
bootDelay: 0s
nodes:
  - { name: busy-1, nodePool: general, instanceType: m6i.xlarge, zone: us-east-1a, count: 1 }
  - { name: busy-2, nodePool: general, instanceType: m6i.xlarge, zone: us-east-1b, count: 1 }
  - { name: underused, nodePool: general, instanceType: m6i.xlarge, zone: us-east-1a, count: 1 }
  - { name: lost, nodePool: general, instanceType: m6i.xlarge, zone: us-east-1b, count: 1 }
ec2NodeClasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: { name: default }
    spec:
      role: KarpenterNodeRole-sim
      amiSelectorTerms: [{ alias: al2023@latest }]
      subnetSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
      securityGroupSelectorTerms: [{ tags: { karpenter.sh/discovery: sim } }]
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: general }
    spec:
      disruption:
        consolidationPolicy: WhenEmptyOrUnderutilized
        consolidateAfter: 0s
        budgets: [{ nodes: '100%' }]
      template:
        spec:
          expireAfter: 720h
          nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
          requirements:
            - { key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }
            - { key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i] }
workloads: []
`;

/** When the world is built; the use cases run an hour later. */
export const BUILT_AT = Date.parse('2026-11-26T11:00:00Z');
export const RUN_AT = BUILT_AT + 3_600_000;

/** A pod of `cpu` cores, bound to `node` and running, or pending and unschedulable without one. */
function pod(cluster: MemoryCluster, name: string, cpu: string, node?: string, annotations = {}): void {
  const app = name.replace(/-\d+$/, '');
  cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: { app },
      annotations,
      // The pods of one app are one ReplicaSet's: one template in the summary.
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${app}-rs`,
          uid: `uid-${app}-rs`,
          controller: true,
        },
      ],
    },
    spec: {
      containers: [{ name: 'app', image: 'app', resources: { requests: { cpu, memory: '1Gi' } } }],
    },
  });
  if (node === undefined) {
    cluster.markPodUnschedulable('default', name, '0/4 nodes are available: 4 Insufficient cpu.');
    return;
  }
  cluster.bindPod('default', name, node);
  cluster.setPodPhase('default', name, 'Running');
}

/**
 * The world: four m6i.xlarge nodes of NodePool `general` — `busy-1` and `busy-2` full, `underused`
 * with one small pod (consolidation deletes it), `lost` whose instance EC2 took away (garbage
 * collection deletes its NodeClaim) — an orphan instance of the cluster with no NodeClaim, and one
 * pending pod of 3 cores that fits nowhere (the provisioner launches for it).
 */
const scenario = parseScenario(SCENARIO, 'hostile-summary.yaml');
/** The bundled catalog's m6i, c6i and m5 types: enough for the NodePool, and quick to resolve. */
const catalog = {
  ...bundledCatalog(scenario.region, scenario.zones),
  records: bundledCatalogRecords().filter((r) => /^(m6i|c6i|m5)\./.test(r.name)),
};

export async function buildWorld() {
  const clock = makeManualClock(new Date(BUILT_AT));
  const cluster = makeMemoryCluster({ clock });
  const cloud: MemoryCloud = makeMemoryCloud({
    clock,
    clusterName: CLUSTER,
    catalog,
    bootDelayMs: scenario.bootDelayMs,
  });
  const resolver = makeMemoryNodeClassResolver({ zones: scenario.zones });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const metrics = recordingMetrics({ cluster: CLUSTER, clock });
  const leases = makeMemoryLeaseStore();
  const terminationQueue = makeMemoryTerminationQueue(clock);
  for (const manifest of scenario.ec2NodeClasses) cluster.create(manifest);
  for (const manifest of scenario.nodePools) cluster.create(manifest);
  const kube = makeKube(
    cluster,
    cloud,
    () => clock.now().getTime(),
    () => {},
  );
  const controllers = setUpProvisioner({
    cluster,
    cloud,
    leases,
    clock,
    sleep: async (ms) => clock.advance(ms),
    logger,
    metrics,
    nodeClassResolver: resolver,
  });
  await controllers.controllersPass('build-1', clock.now());
  await seedInitialNodes({ scenario, cluster, cloud, clusterName: CLUSTER, nowMs: clock.now().getTime() });
  await kube.kubelets();
  await controllers.controllersPass('build-2', clock.now());
  await kube.kubelets();
  await controllers.controllersPass('build-3', clock.now());
  const nodeOf = async (claim: string) => {
    const name = (await cluster.nodeClaim(claim))?.status.nodeName;
    if (name === undefined) throw new Error(`the NodeClaim "${claim}" has no Node`);
    return name;
  };
  for (const i of [1, 2, 3]) pod(cluster, `web-${i}`, '1', await nodeOf('busy-1'));
  for (const i of [4, 5, 6]) pod(cluster, `web-${i}`, '1', await nodeOf('busy-2'));
  pod(cluster, 'small-1', '500m', await nodeOf('underused'));
  pod(cluster, 'guarded-1', '500m', await nodeOf('busy-2'), { 'karpenter.sh/do-not-disrupt': 'true' });
  // An instance of the cluster's that no NodeClaim owns (a launch whose NodeClaim was lost).
  const nodeClass = (await cluster.nodeClasses()).items.find((c) => c.name === 'default');
  if (nodeClass === undefined) throw new Error('the EC2NodeClass did not resolve');
  const types = await cloud.instanceTypes(nodeClass);
  const m6i = types.filter((t) => t.name === 'm6i.xlarge');
  cloud.addForeignInstance({
    instanceType: 'm6i.xlarge',
    zone: 'us-east-1a',
    tags: launchTags(
      {
        nodeClaimName: 'general-orphan',
        nodePoolName: 'general',
        nodeClass,
        instanceTypes: m6i,
        requirements: [],
        labels: {},
        taints: [],
        startupTaints: [],
      },
      CLUSTER,
    ),
  });
  clock.set(new Date(RUN_AT));
  // An hour on: the kubelets have kept their Nodes Ready, and EC2 took `lost`'s instance away.
  const lost = (await cluster.nodeClaim('lost'))?.status.providerId;
  const lostId = lost?.split('/').pop();
  if (lostId === undefined) throw new Error('the NodeClaim "lost" did not launch');
  cloud.reclaim(lostId);
  cluster.setNodeReady(await nodeOf('lost'), false);
  pod(cluster, 'big-1', '3600m');
  pod(cluster, 'tiny-1', '100m');
  return { clock, cluster, cloud, resolver, logger, metrics, lines, leases, terminationQueue, kube };
}

export type World = Awaited<ReturnType<typeof buildWorld>>;
