import fs from 'node:fs';
import path from 'node:path';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  DynamoDBClient,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { PurgeQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { parseAllDocuments } from 'yaml';
import { CONTROLLER_GROUP } from '../../../infra/manifests.ts';
import { makeAwsCloud } from '../../../shared/adapters/aws/aws-cloud.ts';
import { toCloudInstance } from '../../../shared/adapters/aws/instances.ts';
import {
  makeKubeAccess,
  makeKubeCluster,
  makeKubeHttp as makeKubeConnection,
} from '../../../shared/adapters/kube/index.ts';
import { toQuantityMap } from '../../../shared/apis/index.ts';
import {
  Annotation,
  computeAllocatable,
  type InstanceType,
  Label,
  NodeClaimConditionType,
  nodePoolRequirements,
  Requirement,
} from '../../../shared/core/index.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import type {
  Cluster,
  ClusterNodePool,
  NodeClaimStatusPatch,
  NodePatch,
} from '../../../shared/ports/cluster.ts';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { decideLifecycle } from '../../../shared/usecases/lifecycle/decide.ts';
import { LAUNCH_ANNOTATION, launchAnnotation } from '../../../shared/usecases/state/launch-record.ts';
import {
  launchedLabels,
  launchedStatus,
  toNewNodeClaim,
} from '../../../shared/usecases/state/new-nodeclaim.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { type DeployedStack, STACK_NAMES } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { type KubeCluster, startKube } from '../../harness/kube/cluster.ts';
import { SCHEDULED_EVENT } from '../../harness/lambda-triggers.ts';
import { projectRoot } from '../../harness/paths.ts';
import { stopDaemons } from '../../harness/proc.ts';
import { runDir } from '../../harness/services.ts';
import { CLUSTER_INFO } from '../../integration/aws/cloud-fixture.ts';
import { publishAl2023, silentLogger } from '../../integration/aws/fixtures.ts';
import { prepareColdStart } from '../../integration/aws/lambda-cold-start.ts';
import {
  ipOf,
  launchCandidates,
  launchInstances,
  launchRecordOf,
  launchRequestOf,
  makeLargeNetwork,
  onDemandPrice,
} from './aws-setup.ts';
import { isConflict, type KubeHttp, KubeHttpError, makeKubeHttp } from './kube-http.ts';
import { flotillaEnv, invokeLambda, type LambdaEnvironment } from './lambda-step.ts';
import { scrape, traffic } from './metrics.ts';
import {
  daemonPod,
  daemonSetObject,
  nodeObject,
  nodeStatus,
  pdbObject,
  replicaSetObject,
  runningPodStatus,
  workloadPod,
  workloadTemplate,
} from './objects.ts';
import {
  type ClusterPlan,
  nodeShapes,
  type PlannedNode,
  planCluster,
  type ScaleSize,
  sizeLabel,
  ZONES,
} from './plan.ts';
import { forEachLimit, say, waitUntil } from './progress.ts';
import { Random } from './random.ts';

// Loads one cluster size into a fresh control plane (the harness's own start-up, in a folder of
// its own, so each size starts empty) and a freshly reset moto: the stack, the catalog, the
// getting-started EC2NodeClass and NodePool, then nodes (instance, NodeClaim, Node), workloads and
// their pods. Flotilla's objects are written by Flotilla's code as its controller identity; what
// kubelet, kube-controller-manager and users write is written as the admin, through the guard.

/** Bulk writes in flight at once. */
const CONCURRENCY = 48;
/** Lease renewal period per node (kube-controller-manager here marks a node unknown after 120 s). */
const LEASE_RENEW_MS = 25_000;
/** Flow schemas counting Flotilla's own requests (same priority levels as without them). */
export const FLOTILLA_FLOW_SCHEMAS = ['bench-flotilla-controller', 'bench-flotilla-shim'];
const BENCH_NAMESPACE_LABEL = 'bench.flotilla.io/scale';
/** Pods of the pending burst: SCALE_PENDING (e.g. 1000), @default 100. */
export const PENDING_PODS = pendingPods(process.env['SCALE_PENDING']);

function pendingPods(value: string | undefined): number {
  if (value === undefined || value === '') return 100;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 10_000)
    throw new Error(`SCALE_PENDING: "${value}" is not a whole number of pods from 1 to 10000`);
  return count;
}

export interface LoadedCluster {
  readonly size: ScaleSize;
  readonly dir: string;
  readonly kube: KubeCluster;
  readonly admin: KubeHttp;
  /** Flotilla's Cluster adapter as its controller identity. */
  readonly controller: Cluster;
  readonly server: Moto;
  readonly stack: DeployedStack;
  readonly lambdaEnv: LambdaEnvironment;
  /** The bucket the shim publishes the cluster summary to, when the stack has one. */
  readonly summaryBucket: string | undefined;
  readonly plan: ClusterPlan;
  /** Sizes of one stored object of each kind, JSON as the API server returns it. */
  readonly objectBytes: Readonly<Record<string, number>>;
  /** Seconds per loading phase. */
  readonly timings: Readonly<Record<string, number>>;
  /** Names of the pending pods (namespace, pod names), once created. */
  pending?:
    | { readonly namespace: string; readonly replicaSet: string; readonly names: readonly string[] }
    | undefined;
  stop(): Promise<void>;
}

/** Starts the control plane of one size in its own folder; its daemons are stopped by `stop`. */
async function startControlPlane(label: string): Promise<{ dir: string; kube: KubeCluster }> {
  const top = runDir();
  const dir = path.join(top, `scale-${label}`);
  fs.mkdirSync(dir, { recursive: true });
  // One process plays every kubelet's Lease here. On a busy two-core machine its renewals of
  // thousands of Leases come late, and a Node whose renewal is 50 s old goes not Ready (and tainted)
  // until its kubelet reports again: a grace of 2 minutes keeps the played kubelets' Nodes Ready,
  // as real ones that renew every 10 s are. The node lifecycle controller takes the not-ready taint
  // off each new Node with one request: at the default 20 requests a second, 5,000 new Nodes kept
  // their taints for over 4 minutes.
  const kube = await startKube(dir, {
    controllerManagerArgs: ['--node-monitor-grace-period=120s', '--kube-api-qps=100', '--kube-api-burst=200'],
  });
  // The run's teardown (and the next run, after a crash) stops what is listed in the run's pids.
  const pids = path.join(dir, 'pids');
  fs.mkdirSync(path.join(top, 'pids'), { recursive: true });
  for (const file of fs.readdirSync(pids)) {
    fs.copyFileSync(path.join(pids, file), path.join(top, 'pids', `scale-${label}-${file}`));
  }
  return { dir, kube };
}

function expectedNodeTtlSeconds(nodes: number): number {
  // kube-controller-manager's TTL controller: the step for the cluster's size.
  const steps = [
    [100, 0],
    [500, 15],
    [1000, 30],
    [2000, 60],
    [10000, 300],
  ] as const;
  for (const [max, ttl] of steps) if (nodes <= max) return ttl;
  return 600;
}

export async function loadCluster(size: ScaleSize, seed: number): Promise<LoadedCluster> {
  const label = sizeLabel(size);
  const timings: Record<string, number> = {};
  let admin: KubeHttp | undefined;
  const phase = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const began = Date.now();
    say(`${label}: ${name}…`);
    const before = admin === undefined ? undefined : await scrape(admin).catch(() => undefined);
    let out: T;
    try {
      out = await work();
    } catch (error) {
      throw new Error(
        `loading ${label} failed in "${name}" after ${Math.round((Date.now() - began) / 1000)}s (phases done: ${JSON.stringify(timings)}): ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    timings[name] = Math.round((Date.now() - began) / 100) / 10;
    const after =
      before === undefined || admin === undefined ? undefined : await scrape(admin).catch(() => undefined);
    const t = before === undefined || after === undefined ? undefined : traffic(before, after, []);
    say(
      `${label}: ${name} done in ${timings[name]}s${
        t === undefined
          ? ''
          : ` (${t.requestsTotal} API requests: ${Object.entries(t.requests)
              .sort((a, b) => b[1] - a[1])
              .slice(0, 4)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')})`
      }`,
    );
    return out;
  };

  const { dir, kube } = await phase('control plane', () => startControlPlane(label));
  admin = makeKubeHttp(kube.userKubeconfigPath, { guarded: true });
  const controller = makeKubeCluster({
    connection: makeKubeConnection(makeKubeAccess({ kind: 'file', path: kube.controllerKubeconfigPath })),
    logger: silentLogger,
    maxConcurrentCalls: 32,
    callTimeoutMs: 60_000,
  });
  const renewer = new LeaseRenewer(admin);
  const stop = async () => {
    renewer.stop();
    admin.close();
    await stopDaemons(dir);
  };

  try {
    const server = await moto();
    const { stack, network, amd64 } = await phase('stack on moto', async () => {
      await resetMoto(server);
      // The stack is sized for the cluster it serves (its clusterSize caps the summary).
      const deployed = await prepareColdStart(server, kube.controllerKubeconfigPath, {
        [EnvVar.clusterSize]: `${size.nodes},${size.pods}`,
      });
      const ec2 = new EC2Client(awsClientConfig(server));
      const net = await makeLargeNetwork(ec2, ZONES);
      const amis = await publishAl2023(ec2, new SSMClient(awsClientConfig(server)));
      return { stack: deployed, network: net, amd64: amis.amd64 };
    });
    // prepareColdStart set the stack's environment for in-process handlers; the steps' processes
    // get the same values.
    const lambdaEnv: LambdaEnvironment = {
      server,
      controllerKubeconfigPath: kube.controllerKubeconfigPath,
      stackEnv: flotillaEnv(process.env),
    };
    const logDir = path.join(dir, 'logs');
    await phase('catalog Lambda (fills the offering cache)', async () => {
      const result = await invokeLambda('catalog', SCHEDULED_EVENT, lambdaEnv, {
        logFile: path.join(logDir, 'setup-catalog.log'),
        requestId: 'setup-catalog',
      });
      if (!result.ok) throw new Error(`the catalog Lambda failed: ${result.error}`);
    });
    await phase('admission policy and flow schemas', () => applyPolicies(admin));
    const { pool, nodeClass } = await phase('EC2NodeClass and NodePool, first provisioner run', async () => {
      await applyGettingStarted(admin);
      const result = await invokeLambda('provisioner', SCHEDULED_EVENT, lambdaEnv, {
        logFile: path.join(logDir, 'setup-provisioner-1.log'),
        requestId: 'setup-provisioner-1',
      });
      if (!result.ok) throw new Error(`the first provisioner run failed: ${result.error}`);
      return waitUntil(
        'the EC2NodeClass and NodePool to be Ready',
        async () => {
          const classes = (await controller.nodeClasses()).items;
          const pools = (await controller.nodePools()).items;
          const c = classes.find((x) => x.name === 'default');
          const p = pools.find((x) => x.pool.name === 'default');
          const ready = c?.status?.conditions.some((x) => x.type === 'Ready' && x.status === 'True');
          return ready && p?.ready ? { pool: p, nodeClass: c as EC2NodeClass } : undefined;
        },
        60_000,
      );
    });

    const cloud = makeAwsCloud({
      ec2: new EC2Client(awsConfigAs(server, 'provisioner')),
      dynamodb: new DynamoDBClient(awsConfigAs(server, 'provisioner')),
      tableName: STACK_NAMES.stateTable,
      region: server.region,
      cluster: CLUSTER_INFO,
      clock: systemClock,
      logger: silentLogger,
    });
    const types = await cloud.instanceTypes(nodeClass);
    const typesByName = new Map(types.map((t) => [t.name, t]));
    const plan = planCluster(size, nodeShapes(typesByName), seed);
    const random = new Random(seed ^ 0x5eed);

    await phase('namespaces', () => createNamespaces(admin, plan));
    const instances = await phase('instances (moto)', () =>
      launchInstances(new EC2Client(awsClientConfig(server)), plan.nodes, {
        network,
        imageId: amd64,
        instanceProfile: nodeClass.status?.instanceProfile,
        nodeClass,
      }),
    );
    const nodeNames = new Map<number, string>();
    await phase('NodeClaims (as Flotilla writes them, controller identity)', () =>
      forEachLimit('NodeClaims', plan.nodes, 32, async (node) => {
        const instance = instances.get(node.index);
        if (instance === undefined) throw new Error(`no instance for node ${node.index}`);
        nodeNames.set(node.index, instance.PrivateDnsName ?? '');
        await createNodeClaim(controller, node, pool, nodeClass, types, typesByName, instance, random);
      }),
    );
    const nodeTtl = String(expectedNodeTtlSeconds(size.nodes));
    await phase('Nodes (as kubelet registers them, admin) and their Leases', () =>
      forEachLimit('Nodes', plan.nodes, CONCURRENCY, async (node) => {
        const instance = instances.get(node.index);
        const type = typesByName.get(node.shape.instanceType) as InstanceType;
        const claim = await controller.nodeClaim(node.nodeClaimName);
        const name = nodeNames.get(node.index) ?? '';
        const ip = instance?.PrivateIpAddress ?? '';
        const body = nodeObject({
          name,
          instanceId: instance?.InstanceId ?? '',
          zone: node.zone,
          ip,
          instanceType: node.shape.instanceType,
          arch: 'amd64',
          labels: claim?.labels ?? {},
        });
        (body['metadata'] as { annotations: Record<string, string> }).annotations[
          'node.alpha.kubernetes.io/ttl'
        ] = nodeTtl;
        // kubelet registers its Node with a status; this one is Ready from the start (a real one
        // turns Ready seconds later), so kube-controller-manager adds no not-ready taint.
        const status = nodeStatus({
          name,
          instanceId: instance?.InstanceId ?? '',
          ip,
          arch: 'amd64',
          capacity: toQuantityMap(type.capacity),
          allocatable: toQuantityMap(computeAllocatable(type)),
          now: new Date().toISOString(),
          random: new Random(seed + node.index),
          workloadImages: workloadImagesOn(plan, node.index),
        });
        const created = await admin.request<{ metadata: { uid: string } }>(
          'POST',
          '/api/v1/nodes?fieldManager=kubelet',
          { ...body, ...status },
        );
        await renewer.create(name, created.body.metadata.uid);
      }),
    );
    await phase('registration (Flotilla lifecycle decisions, controller identity)', async () => {
      await waitUntil(
        'no Node with a not-ready or unreachable taint',
        async () => {
          const nodes = await admin.request<{ items: { spec?: { taints?: { key: string }[] } }[] }>(
            'GET',
            '/api/v1/nodes',
          );
          // A Lease renewed late lets kube-controller-manager mark a Node unreachable (16 of 5,000
          // once on this machine), or not ready, and only its kubelet's next status report takes
          // that back.
          const unreachable = nodes.body.items.some((n) =>
            (n.spec?.taints ?? []).some(
              (t) => t.key === 'node.kubernetes.io/unreachable' || t.key === 'node.kubernetes.io/not-ready',
            ),
          );
          if (unreachable) await reportReady(admin);
          return nodes.body.items.every((n) =>
            (n.spec?.taints ?? []).every((t) => t.key === 'karpenter.sh/unregistered'),
          )
            ? true
            : undefined;
        },
        600_000,
        // Each look lists every Node (75 MB at 5,000): looking every second starves the API server,
        // and the Leases it renews late turn more Nodes NotReady.
        5_000,
      );
      await registerAll(controller);
    });
    const owners = await phase('workloads: ReplicaSets, PodDisruptionBudgets, DaemonSets', () =>
      createWorkloads(admin, plan),
    );
    await phase('pods (created bound, status Running as kubelet reports it)', () =>
      createPods(admin, plan, owners, nodeNames, instances, seed),
    );
    const objectBytes = await phase('checking what the API server holds', () =>
      checkLoaded(admin, controller, plan),
    );
    await phase('settling (controllers catch up)', () => settle(admin, 240_000));
    return {
      size,
      dir,
      kube,
      admin,
      controller,
      server,
      stack,
      lambdaEnv,
      summaryBucket: lambdaEnv.stackEnv[(EnvVar as Record<string, string>)['summaryBucket'] ?? ''],
      plan,
      objectBytes,
      timings,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The images a node pulled for the workloads placed on it. */
function workloadImagesOn(plan: ClusterPlan, nodeIndex: number): string[] {
  const images = new Set<string>();
  for (const pod of plan.pods) {
    if (pod.node !== nodeIndex) continue;
    const w = plan.workloads[pod.workload];
    if (w !== undefined) images.add(`internal-images/${w.team}/${w.app}:${w.seed % 97}.${w.seed % 13}.0`);
  }
  for (let i = 0; images.size < 28; i += 1)
    images.add(`internal-images/cache/warm-layer-${i}:v${nodeIndex % 7}`);
  return [...images];
}

/**
 * A ValidatingAdmissionPolicy that refuses pods created with `generateName` in the bench's
 * namespaces: the ReplicaSet and DaemonSet controllers create their pods that way, so they cannot
 * race the loader, which creates every pod itself (with the owner references those controllers
 * set). Plus flow schemas that count Flotilla's requests (the priority levels they had before).
 */
async function applyPolicies(admin: KubeHttp): Promise<void> {
  const name = 'bench-scale-loader-creates-pods';
  await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        namespaceSelector: { matchLabels: { [BENCH_NAMESPACE_LABEL]: 'true' } },
        resourceRules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
        ],
      },
      validations: [
        {
          expression: "!has(object.metadata.generateName) || object.metadata.generateName == ''",
          message: 'bench:scale creates the pods of its workloads itself',
        },
      ],
    },
  });
  await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions: ['Deny'] },
  });
  const everything = {
    resourceRules: [
      { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
    ],
    nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
  };
  const schemas = [
    {
      name: FLOTILLA_FLOW_SCHEMAS[0],
      level: 'global-default',
      subject: { kind: 'Group', group: { name: CONTROLLER_GROUP } },
    },
    {
      name: FLOTILLA_FLOW_SCHEMAS[1],
      level: 'workload-low',
      subject: { kind: 'ServiceAccount', serviceAccount: { name: 'flotilla-shim', namespace: 'flotilla' } },
    },
  ];
  for (const schema of schemas) {
    await admin.request('POST', '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas', {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: schema.name },
      spec: {
        priorityLevelConfiguration: { name: schema.level },
        matchingPrecedence: 800,
        distinguisherMethod: { type: 'ByUser' },
        rules: [{ subjects: [schema.subject], ...everything }],
      },
    });
  }
}

/** `infra/getting-started.yaml` as a user applies it, with spot allowed and limits for thousands of nodes. */
async function applyGettingStarted(admin: KubeHttp): Promise<void> {
  const values: Record<string, string> = {
    CLUSTER_NAME: 'test-cluster',
    NODE_ROLE_NAME: STACK_NAMES.nodeRole,
  };
  const text = fs
    .readFileSync(path.join(projectRoot, 'infra', 'getting-started.yaml'), 'utf8')
    .replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => values[name] ?? '');
  for (const document of parseAllDocuments(text)) {
    const object = document.toJS() as {
      apiVersion: string;
      kind: string;
      spec: {
        template?: { spec: { requirements: { key: string; operator: string; values: string[] }[] } };
        limits?: Record<string, unknown>;
      };
    };
    if (object.kind === 'NodePool') {
      for (const r of object.spec.template?.spec.requirements ?? []) {
        if (r.key === 'karpenter.sh/capacity-type') r.values = ['spot', 'on-demand'];
      }
      object.spec.limits = { cpu: 200_000 };
    }
    const plural = object.kind === 'NodePool' ? 'nodepools' : 'ec2nodeclasses';
    await admin.request('POST', `/apis/${object.apiVersion}/${plural}`, object);
  }
}

async function createNamespaces(admin: KubeHttp, plan: ClusterPlan): Promise<void> {
  const names = [...new Set([...plan.namespaces, ...plan.daemonSets.map((d) => d.namespace)])];
  for (const name of names) {
    await admin.request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { [BENCH_NAMESPACE_LABEL]: 'true' } },
    });
  }
  // Pods need the namespace's default ServiceAccount, which kube-controller-manager creates.
  await waitUntil(
    'the default ServiceAccount of every namespace',
    async () => {
      const list = await admin.request<{ items: { metadata: { namespace: string } }[] }>(
        'GET',
        '/api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault',
      );
      const have = new Set(list.body.items.map((i) => i.metadata.namespace));
      return names.every((n) => have.has(n)) ? true : undefined;
    },
    60_000,
  );
  // The admission policy is in force once a pod with generateName is refused.
  const probe = names[0] ?? 'default';
  await waitUntil(
    'the admission policy to refuse controller-style pods',
    async () => {
      try {
        const created = await admin.request<{ metadata: { name: string } }>(
          'POST',
          `/api/v1/namespaces/${probe}/pods`,
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { generateName: 'policy-probe-' },
            spec: { containers: [{ name: 'c', image: 'internal-images/platform/pause:3.10' }] },
          },
        );
        await admin.request('DELETE', `/api/v1/namespaces/${probe}/pods/${created.body.metadata.name}`);
        return undefined;
      } catch (error) {
        return String(error).includes('creates the pods of its workloads itself') ? true : undefined;
      }
    },
    60_000,
  );
}

async function createNodeClaim(
  controller: Cluster,
  node: PlannedNode,
  pool: ClusterNodePool,
  nodeClass: EC2NodeClass,
  types: readonly InstanceType[],
  typesByName: ReadonlyMap<string, InstanceType>,
  instance: Instance,
  random: Random,
): Promise<void> {
  const type = typesByName.get(node.shape.instanceType) as InstanceType;
  const reqs = nodePoolRequirements(pool.pool);
  const candidates = launchCandidates(type, types);
  const narrowed = reqs.replacing([
    Requirement.in(
      Label.instanceType,
      candidates.map((c) => c.name),
    ),
  ]);
  const requirements = narrowed.toSelectors();
  const labels = { ...(pool.pool.labels ?? {}), ...narrowed.singleValuedLabels() };
  const claim = toNewNodeClaim(
    node.nodeClaimName,
    {
      name: node.nodeClaimName,
      nodePoolName: 'default',
      nodeClassName: nodeClass.name,
      labels,
      requirements,
      taints: [],
      startupTaints: [],
      pods: [],
      requests: { cpu: node.usedCpuMillis, memory: node.usedMemoryBytes, pods: node.pods },
      instanceTypes: candidates.map((c) => ({ name: c.name, priceUsdPerHour: onDemandPrice(c) })),
      minValuesRelaxed: false,
    },
    pool,
    nodeClass,
  );
  if (!(await controller.createNodeClaim(claim))) throw new Error(`NodeClaim ${node.nodeClaimName} exists`);
  const launchedAt = instance.LaunchTime?.getTime() ?? Date.now();
  const request = launchRequestOf(node, nodeClass, candidates, requirements, {
    ...labels,
    [Label.nodePool]: 'default',
    [Label.nodeClass]: nodeClass.name,
  });
  const record = launchRecordOf(request, random, launchedAt - 1_000);
  const cloudInstance = toCloudInstance(instance);
  const metadata = launchedLabels(cloudInstance, type, labels);
  await controller.patchNodeClaimMetadata(node.nodeClaimName, {
    ...metadata,
    annotations: {
      [LAUNCH_ANNOTATION]: launchAnnotation(record, launchedAt - 500),
      // As the instance-name pass leaves a NodeClaim of a cluster that has run for a while
      // (instance-names.ts); without it every scheduled run would tag 20 more of the loaded ones.
      // The instances keep their launch-time Name tag, which nothing reads.
      [Annotation.tagged]: 'true',
    },
  });
  await controller.patchNodeClaimStatus(node.nodeClaimName, launchedStatus(cloudInstance, type));
}

/**
 * Registers and initializes every NodeClaim with the steps Flotilla's lifecycle decides for it
 * (decideLifecycle: Node labels, finalizer, owner and taints; Registered, Initialized and Ready),
 * applied with Flotilla's adapter as its controller identity, many NodeClaims at once. The
 * provisioner's own pass does the same one NodeClaim at a time.
 */
async function registerAll(controller: Cluster): Promise<void> {
  const [claims, nodes] = await Promise.all([controller.nodeClaims(), controller.nodes()]);
  const byProviderId = new Map(nodes.items.map((n) => [n.providerId ?? '', n]));
  const nowMs = Date.now();
  await forEachLimit('registrations', claims.items, 32, async (claim) => {
    const node = byProviderId.get(claim.status.providerId ?? '');
    const steps = decideLifecycle({ claim, nodes: node === undefined ? [] : [node], nowMs });
    let nodeName: string | undefined;
    let nodePatch: NodePatch = {};
    const conditions: NonNullable<NodeClaimStatusPatch['conditions']>[number][] = [];
    let statusNodeName: string | undefined;
    for (const step of steps) {
      switch (step.kind) {
        case 'register':
        case 'initialize':
          nodeName = step.nodeName;
          nodePatch = mergeNodePatches(nodePatch, step.nodePatch);
          conditions.push(...(step.statusPatch.conditions ?? []));
          statusNodeName = step.statusPatch.nodeName ?? statusNodeName;
          break;
        case 'ready':
        case 'condition':
          conditions.push(step.update);
          break;
        case 'delete':
          throw new Error(`the lifecycle wants to delete NodeClaim ${claim.name}: ${step.message}`);
      }
    }
    if (nodeName === undefined || !conditions.some((c) => c.type === 'Ready' && c.status === 'True'))
      throw new Error(`NodeClaim ${claim.name} would not become Ready: ${JSON.stringify(steps)}`);
    await controller.patchNode(nodeName, nodePatch);
    await controller.patchNodeClaimStatus(claim.name, {
      ...(statusNodeName === undefined ? {} : { nodeName: statusNodeName }),
      // As the garbage collector's consistency check leaves a NodeClaim whose Node has what it
      // expected (consistency.ts): a cluster that has run a while has it on every NodeClaim.
      conditions: [
        ...conditions,
        {
          type: NodeClaimConditionType.consistentStateFound,
          status: 'True',
          reason: NodeClaimConditionType.consistentStateFound,
          message: '',
        },
      ],
    });
  });
}

function mergeNodePatches(a: NodePatch, b: NodePatch): NodePatch {
  const union = <T>(x: readonly T[] | undefined, y: readonly T[] | undefined) => [...(x ?? []), ...(y ?? [])];
  return {
    labels: { ...(a.labels ?? {}), ...(b.labels ?? {}) },
    annotations: { ...(a.annotations ?? {}), ...(b.annotations ?? {}) },
    addFinalizers: [...new Set(union(a.addFinalizers, b.addFinalizers))],
    removeFinalizers: union(a.removeFinalizers, b.removeFinalizers),
    addTaints: union(a.addTaints, b.addTaints),
    removeTaints: union(a.removeTaints, b.removeTaints),
    addOwnerReferences: union(a.addOwnerReferences, b.addOwnerReferences),
  };
}

/** uids of the ReplicaSets and DaemonSets, and the DaemonSets' revision hashes. */
interface Owners {
  readonly replicaSets: string[];
  readonly daemonSets: { uid: string; revision: string }[];
}

async function createWorkloads(admin: KubeHttp, plan: ClusterPlan): Promise<Owners> {
  const replicaSets: string[] = new Array(plan.workloads.length).fill('');
  await forEachLimit('ReplicaSets and PodDisruptionBudgets', plan.workloads, 16, async (w, i) => {
    const created = await admin.request<{ metadata: { uid: string } }>(
      'POST',
      `/apis/apps/v1/namespaces/${w.namespace}/replicasets?fieldManager=kube-controller-manager`,
      replicaSetObject(w, workloadTemplate(w)),
    );
    replicaSets[i] = created.body.metadata.uid;
    await admin.request(
      'POST',
      `/apis/policy/v1/namespaces/${w.namespace}/poddisruptionbudgets`,
      pdbObject(w),
    );
  });
  const daemonSets: { uid: string; revision: string }[] = [];
  for (const ds of plan.daemonSets) {
    const created = await admin.request<{ metadata: { uid: string } }>(
      'POST',
      `/apis/apps/v1/namespaces/${ds.namespace}/daemonsets`,
      daemonSetObject(ds),
    );
    // The DaemonSet controller records the template's revision before it creates pods; its pods
    // carry the revision's hash, or a rolling update would replace them.
    const revision = await waitUntil(
      `the ControllerRevision of DaemonSet ${ds.name}`,
      async () => {
        const list = await admin.request<{ items: { metadata: { labels?: Record<string, string> } }[] }>(
          'GET',
          `/apis/apps/v1/namespaces/${ds.namespace}/controllerrevisions?labelSelector=k8s-app%3D${ds.name}`,
        );
        return list.body.items[0]?.metadata.labels?.['controller-revision-hash'];
      },
      60_000,
    );
    daemonSets.push({ uid: created.body.metadata.uid, revision });
  }
  return { replicaSets, daemonSets };
}

async function createPods(
  admin: KubeHttp,
  plan: ClusterPlan,
  owners: Owners,
  nodeNames: ReadonlyMap<number, string>,
  instances: ReadonlyMap<number, Instance>,
  seed: number,
): Promise<void> {
  const templates = plan.workloads.map((w) => workloadTemplate(w));
  const startedAt = new Date(Date.now() - 3 * 3600_000).toISOString();
  const podIps = new Map<string, number>(
    ZONES.map((z, i) => [z, ((10 << 24) | ((i * 64 + 63) << 8) | 254) >>> 0]),
  );
  const nextIp = (zone: string) => {
    const ip = podIps.get(zone) ?? 0;
    podIps.set(zone, ip - 1);
    return ipOf(ip);
  };
  type Job =
    | { kind: 'workload'; index: number }
    | { kind: 'daemon'; daemonSet: number; node: number; name: string };
  const jobs: Job[] = plan.pods.map((_, index) => ({ kind: 'workload', index }));
  const random = new Random(seed ^ 0xda3e);
  // Unique per DaemonSet: 2,000 random five-letter suffixes collide now and then.
  plan.daemonSets.forEach((_, daemonSet) => {
    const names = new Set<string>();
    for (const node of plan.nodes) {
      let name = random.suffix(5);
      while (names.has(name)) name = random.suffix(5);
      names.add(name);
      jobs.push({ kind: 'daemon', daemonSet, node: node.index, name });
    }
  });
  await forEachLimit('pods', jobs, CONCURRENCY, async (job, i) => {
    let body: Record<string, unknown>;
    let namespace: string;
    let nodeIndex: number;
    if (job.kind === 'workload') {
      const pod = plan.pods[job.index];
      if (pod === undefined) return;
      const w = plan.workloads[pod.workload];
      const template = templates[pod.workload];
      if (w === undefined || template === undefined) return;
      nodeIndex = pod.node;
      namespace = w.namespace;
      body = workloadPod(
        template,
        w,
        pod.name,
        owners.replicaSets[pod.workload] ?? '',
        nodeNames.get(pod.node) ?? '',
      );
    } else {
      const ds = plan.daemonSets[job.daemonSet];
      const owner = owners.daemonSets[job.daemonSet];
      if (ds === undefined || owner === undefined) return;
      nodeIndex = job.node;
      namespace = ds.namespace;
      body = daemonPod(
        ds,
        owner.uid,
        owner.revision,
        `${ds.name}-${job.name}`,
        nodeNames.get(job.node) ?? '',
      );
    }
    const node = plan.nodes[nodeIndex] as PlannedNode;
    const hostIp = instances.get(nodeIndex)?.PrivateIpAddress ?? '10.0.0.1';
    const podIp = (body['spec'] as { hostNetwork?: boolean }).hostNetwork ? hostIp : nextIp(node.zone);
    const name = (body['metadata'] as { name: string }).name;
    try {
      await admin.request(
        'POST',
        `/api/v1/namespaces/${namespace}/pods?fieldManager=kube-controller-manager`,
        body,
      );
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    await admin.request(
      'PATCH',
      `/api/v1/namespaces/${namespace}/pods/${name}/status?fieldManager=kubelet`,
      runningPodStatus(body, new Random(seed + i * 7919), hostIp, podIp, startedAt),
      'application/merge-patch+json',
    );
  });
}

/** Counts what the API server holds against the plan, and measures one object of each kind. */
async function checkLoaded(
  admin: KubeHttp,
  controller: Cluster,
  plan: ClusterPlan,
): Promise<Record<string, number>> {
  const count = async (path: string) => {
    const list = await admin.request<{ items: unknown[]; metadata: { remainingItemCount?: number } }>(
      'GET',
      `${path}${path.includes('?') ? '&' : '?'}limit=1`,
    );
    return list.body.items.length + (list.body.metadata.remainingItemCount ?? 0);
  };
  const pods = await count('/api/v1/pods');
  // remainingItemCount is not given for lists with a field selector: page through the others.
  let notRunning = 0;
  let next: string | undefined;
  do {
    const page: { body: { items: unknown[]; metadata: { continue?: string } } } = await admin.request(
      'GET',
      `/api/v1/pods?fieldSelector=status.phase%21%3DRunning&limit=500${next ? `&continue=${encodeURIComponent(next)}` : ''}`,
    );
    notRunning += page.body.items.length;
    next = page.body.metadata.continue || undefined;
  } while (next !== undefined);
  const running = pods - notRunning;
  const nodes = await count('/api/v1/nodes');
  const claims = (await controller.nodeClaims()).items;
  const ready = claims.filter((c) =>
    c.status.conditions.some((x) => x.type === 'Ready' && x.status === 'True'),
  );
  // Not controller.nodes(): it reads every pod too, with client-node's object model.
  let readyNodes = await reportReady(admin);
  // On a busy machine a few Leases keep being renewed late (8 Nodes of 5,000 once), so Nodes keep
  // turning NotReady between the report and the count: report them again a few times.
  for (let attempt = 1; readyNodes < plan.size.nodes && attempt < 20; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    readyNodes = await reportReady(admin);
  }
  say(
    `API server holds ${nodes} nodes (${readyNodes} Ready), ${pods} pods (${running} Running), ${claims.length} NodeClaims (${ready.length} Ready); planned ${plan.size.nodes} nodes, ${plan.size.pods} pods`,
  );
  if (nodes !== plan.size.nodes || pods !== plan.size.pods || running !== plan.size.pods)
    throw new Error(
      `loaded ${nodes} nodes / ${pods} pods (${running} Running), planned ${plan.size.nodes} / ${plan.size.pods}`,
    );
  if (ready.length !== plan.size.nodes || readyNodes !== plan.size.nodes)
    throw new Error(`${ready.length} NodeClaims and ${readyNodes} Nodes Ready of ${plan.size.nodes}`);
  const one = async (path: string, withoutManagedFields = false) => {
    const list = await admin.request<{ items: { metadata?: Record<string, unknown> }[] }>('GET', path);
    const item = list.body.items[0] ?? {};
    if (withoutManagedFields && item.metadata) delete item.metadata['managedFields'];
    return JSON.stringify(item).length;
  };
  const w = plan.workloads[0];
  const workloadPod = `/api/v1/namespaces/${w?.namespace}/pods?limit=1&labelSelector=app%3D${w?.app}`;
  return {
    workloadPod: await one(workloadPod),
    workloadPodWithoutManagedFields: await one(workloadPod, true),
    daemonSetPod: await one('/api/v1/namespaces/platform-system/pods?limit=1'),
    node: await one('/api/v1/nodes?limit=1'),
    nodeClaim: await one('/apis/karpenter.sh/v1/nodeclaims?limit=1'),
  };
}

/**
 * Nodes Ready, after reporting Ready again, as a kubelet that is back reports it, for any the node
 * lifecycle controller marked Unknown: on a loaded machine a lease renewal can come after the 40 s
 * grace period during a long load. A Node Ready again that still carries the controller's not-ready
 * or unreachable taint is reported too: the controller takes the taint off when the Node changes
 * (at 5,000 nodes a few hundred kept it for minutes otherwise).
 */
async function reportReady(admin: KubeHttp): Promise<number> {
  type NodeItem = {
    metadata: { name: string };
    spec?: { taints?: { key: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  };
  const isReady = (n: NodeItem) =>
    (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const tainted = (n: NodeItem) =>
    (n.spec?.taints ?? []).some(
      (t) => t.key === 'node.kubernetes.io/unreachable' || t.key === 'node.kubernetes.io/not-ready',
    );
  const list = await admin.request<{ items: NodeItem[] }>('GET', '/api/v1/nodes');
  const notReady = list.body.items.filter((n) => !isReady(n) || tainted(n)).map((n) => n.metadata.name);
  if (notReady.length === 0) return list.body.items.length;
  say(
    `${notReady.length} Nodes not Ready or still tainted (a lease renewal came late, or kube-controller-manager has yet to take a new Node's taint off): reporting them Ready again`,
  );
  const now = new Date().toISOString();
  await forEachLimit('Nodes reported Ready again', notReady, 16, async (name) => {
    await admin.request(
      'PATCH',
      `/api/v1/nodes/${name}/status`,
      {
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
      'application/strategic-merge-patch+json',
    );
    await admin.request(
      'PATCH',
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`,
      { spec: { renewTime: microTime(new Date()) } },
      'application/merge-patch+json',
    );
  });
  const again = await admin.request<{ items: NodeItem[] }>('GET', '/api/v1/nodes');
  return again.body.items.filter(isReady).length;
}

/**
 * Waits until the control plane's controllers are quiet: fewer than 30 requests in 5 s besides
 * the bench's Lease renewals (e.g. kube-controller-manager annotating thousands of Nodes at its
 * 20 requests a second after a load).
 */
export async function settle(admin: KubeHttp, timeoutMs: number): Promise<void> {
  let before = await scrape(admin);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await scrape(admin);
    const t = traffic(before, after, []);
    // The scrape itself is a GET of /metrics, not counted (non-resource).
    if (t.requestsTotal < 30) return;
    say(
      `settling: ${t.requestsTotal} requests in 5 s (${Object.entries(t.requests)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
    );
    before = after;
  }
  say('still not quiet; measuring anyway');
}

/** Plays the kubelets' Node Leases: each renewed every LEASE_RENEW_MS. */
class LeaseRenewer {
  private readonly leases = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(private readonly admin: KubeHttp) {
    this.timer = setInterval(() => void this.tick(), 1_000);
  }

  async create(node: string, nodeUid: string): Promise<void> {
    await this.admin.request('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: node,
        namespace: 'kube-node-lease',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid }],
      },
      spec: { holderIdentity: node, leaseDurationSeconds: 40, renewTime: microTime(new Date()) },
    });
    this.leases.set(node, Date.now());
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const due = [...this.leases].filter(([, at]) => Date.now() - at >= LEASE_RENEW_MS).map(([n]) => n);
      await forEachLimit(
        'lease renewals',
        due,
        16,
        async (node) => {
          try {
            await this.admin.request(
              'PATCH',
              `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`,
              { spec: { renewTime: microTime(new Date()) } },
              'application/merge-patch+json',
            );
            this.leases.set(node, Date.now());
          } catch (error) {
            // The Node was deleted (a disruption pass took it) and its Lease went with it.
            if (error instanceof KubeHttpError && error.status === 404) {
              this.leases.delete(node);
              return;
            }
            throw error;
          }
        },
        60_000,
        true,
      ).catch((error: unknown) => say(`lease renewal failed (retried next second): ${String(error)}`));
    } finally {
      this.busy = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Creates the pending pods: a ReplicaSet's pods that only a NodePool's new node can take. */
export async function createPendingPods(
  cluster: LoadedCluster,
  seed: number,
  count: number = PENDING_PODS,
  /**
   * Wait for kube-scheduler to mark them Unschedulable (polled each second). Off where the
   * caller waits for the shim's event instead, which comes only after the mark: a poll would
   * hold the event back by up to its interval. @default true
   */
  waitUnschedulable = true,
): Promise<void> {
  const random = new Random(seed ^ 0xbeef);
  const namespace = 'team-analytics';
  const hash = random.suffix(10);
  const w = {
    namespace,
    team: 'analytics',
    app: 'analytics-reporting',
    hash,
    replicas: count,
    cpuMillis: 1000,
    memoryBytes: 6 * 2 ** 30,
    pdb: { maxUnavailable: 1 },
    seed,
  };
  const template = workloadTemplate(w);
  // Memory-optimized nodes: the NodePool allows category r, the loaded nodes are m and c. No
  // anti-affinity: a batch that packs several pods to a node (with the Deployments' preferred
  // hostname anti-affinity, Flotilla, as Karpenter, would launch one node per pod).
  const spec = template.spec as Record<string, unknown>;
  spec['nodeSelector'] = { [Label.instanceCategory]: 'r' };
  delete spec['affinity'];
  const rs = await cluster.admin.request<{ metadata: { uid: string } }>(
    'POST',
    `/apis/apps/v1/namespaces/${namespace}/replicasets?fieldManager=kube-controller-manager`,
    replicaSetObject(w, template),
  );
  const unique = new Set<string>();
  while (unique.size < count) unique.add(`${w.app}-${hash}-${random.suffix(5)}`);
  const names = [...unique];
  await forEachLimit('pending pods', names, 16, async (name) => {
    const body = workloadPod(template, w, name, rs.body.metadata.uid, '');
    delete (body['spec'] as Record<string, unknown>)['nodeName'];
    await cluster.admin.request(
      'POST',
      `/api/v1/namespaces/${namespace}/pods?fieldManager=kube-controller-manager`,
      body,
    );
  });
  cluster.pending = { namespace, replicaSet: `${w.app}-${hash}`, names };
  if (!waitUnschedulable) return;
  await waitUntil(
    `kube-scheduler to mark the ${count} pods Unschedulable`,
    async () => {
      const list = await cluster.admin.request<{
        items: { status?: { conditions?: { type: string; status: string; reason?: string }[] } }[];
      }>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=app%3D${w.app}`);
      const unschedulable = list.body.items.filter((p) =>
        (p.status?.conditions ?? []).some(
          (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
        ),
      );
      return unschedulable.length === count ? true : undefined;
    },
    300_000,
    1_000,
  );
}

/** Deletes the pending pods and their ReplicaSet (gone at once: no kubelet runs them). */
export async function deletePendingPods(cluster: LoadedCluster): Promise<void> {
  const pending = cluster.pending;
  if (pending === undefined) return;
  await cluster.admin.request(
    'DELETE',
    `/apis/apps/v1/namespaces/${pending.namespace}/replicasets/${pending.replicaSet}?propagationPolicy=Orphan`,
  );
  await forEachLimit('deleting the pending pods', pending.names, 16, async (name) => {
    try {
      await cluster.admin.request(
        'DELETE',
        `/api/v1/namespaces/${pending.namespace}/pods/${name}?gracePeriodSeconds=0`,
      );
    } catch (error) {
      if (!String(error).includes('HTTP 404')) throw error;
    }
  });
  cluster.pending = undefined;
}

/**
 * Deletes every lease in the state table (as the account). An invocation that died (out of
 * memory) leaves its lease until the TTL (2 to 3 minutes), and the next step would only wait for
 * it; the bench clears them so that each step measures its own work.
 */
export async function clearLeases(cluster: LoadedCluster): Promise<number> {
  const dynamodb = new DynamoDBClient(awsClientConfig(cluster.server));
  const keys: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    // The offering cache fills the table: the leases may be pages away.
    const page = await dynamodb.send(
      new ScanCommand({
        TableName: STACK_NAMES.stateTable,
        FilterExpression: 'begins_with(pk, :lease)',
        ExpressionAttributeValues: { ':lease': { S: 'lease#' } },
        ProjectionExpression: 'pk, sk',
        ...(start === undefined ? {} : { ExclusiveStartKey: start }),
      }),
    );
    keys.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  for (let i = 0; i < keys.length; i += 25) {
    await dynamodb.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [STACK_NAMES.stateTable]: keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } })),
        },
      }),
    );
  }
  return keys.length;
}

/**
 * The size of the cluster summary the shim publishes, when the stack has a summary bucket (read
 * with the account's keys); undefined otherwise or when there is none yet.
 */
export async function summaryObjectBytes(cluster: LoadedCluster): Promise<number | undefined> {
  const key = (STACK_NAMES as unknown as Record<string, unknown>)['summaryObject'];
  if (cluster.summaryBucket === undefined || typeof key !== 'string') return undefined;
  try {
    const s3 = await import('@aws-sdk/client-s3');
    const client = new s3.S3Client({ ...awsClientConfig(cluster.server), forcePathStyle: true });
    const head = await client.send(new s3.HeadObjectCommand({ Bucket: cluster.summaryBucket, Key: key }));
    return head.ContentLength;
  } catch {
    return undefined;
  }
}

/** Empties the pod-event queue (the shim's earlier events, the provisioner's follow-ups). */
export async function purgePodEvents(cluster: LoadedCluster): Promise<void> {
  const sqs = new SQSClient(awsClientConfig(cluster.server));
  await sqs.send(new PurgeQueueCommand({ QueueUrl: cluster.stack.queueUrls.podEvents }));
}

/** The shim's pod event for `pod` on the pod-event queue, as a Lambda event source mapping receives it. */
export async function receivePodEvent(
  cluster: LoadedCluster,
  pod: string,
  timeoutMs: number,
): Promise<{ id: string; receiptHandle: string; body: string; receivedAtMs: number; sentAtMs: number }> {
  const sqs = new SQSClient(awsClientConfig(cluster.server));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const page = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: cluster.stack.queueUrls.podEvents,
        MaxNumberOfMessages: 10,
        // Short polls: the harness's SQS may answer a long poll only at its end, where an event
        // source mapping hands a message over as it arrives.
        WaitTimeSeconds: 0,
        VisibilityTimeout: 300,
        MessageSystemAttributeNames: ['SentTimestamp'],
      }),
    );
    const receivedAtMs = Date.now();
    for (const m of page.Messages ?? []) {
      const body = m.Body ?? '';
      if (!body.includes(`"name":"${pod}"`)) continue;
      // When SQS took the message.
      const sentAtMs = Number(m.Attributes?.SentTimestamp ?? receivedAtMs);
      return { id: m.MessageId ?? '', receiptHandle: m.ReceiptHandle ?? '', body, receivedAtMs, sentAtMs };
    }
    if ((page.Messages ?? []).length === 0) await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the shim forwarded no pod event for ${pod} within ${timeoutMs} ms`);
}
