import fs from 'node:fs';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeInstancesCommand, EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  disruptionFunction,
  type FLOTILLA_FUNCTIONS,
  provisionerFunction,
  terminationFunction,
} from '../../infra/functions.ts';
import { makeAwsCloud } from '../../shared/adapters/aws/aws-cloud.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeNodeClassResolver } from '../../shared/adapters/aws/nodeclass.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import { isConditionTrue } from '../../shared/core/index.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { reconcileNodeClasses } from '../../shared/usecases/nodeclass/nodeclass.ts';
import { quietMetrics } from '../fixtures/metrics.ts';
import { awsConfigAs } from '../harness/aws/identity.ts';
import { STACK_CLUSTER, STACK_NAMES } from '../harness/aws/stack.ts';
import { terminateThroughFlotilla } from '../harness/cleanup.ts';
import { awsClientConfig, type Kube, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import {
  type Invoke,
  SCHEDULED_EVENT,
  startQueueTrigger,
  startSchedule,
} from '../harness/lambda-triggers.ts';
import { NodeSimulator } from '../harness/node-sim.ts';
import { projectRoot } from '../harness/paths.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { CLUSTER_INFO } from '../integration/aws/cloud-fixture.ts';
import { K8S_VERSION, makeNetwork, publishAl2023, silentLogger } from '../integration/aws/fixtures.ts';
import { asLambda, prepareColdStart } from '../integration/aws/lambda-cold-start.ts';

// A new user's first day, doing only what the README says: the stack is deployed (on moto), the
// cluster manifests it renders are applied (the harness applies them to its API server), the
// getting-started manifest is applied as written, and a Deployment needs nodes. Flotilla runs only
// as its Lambdas' handlers, with their roles and the controller group, invoked by what the stack
// wires to them: the catalog schedule, pod-event batches the shim (its shipped bundle, as its own
// process) sends, follow-ups and the pending-pods schedule for the provisioner, the termination
// queue and the garbage-collection schedule for termination. The two schedules run every 10 s
// instead of 1 and 2 minutes, to keep the test short. Nothing in it writes a status.
// Then `kubectl delete node`: the node is drained, its pods come back elsewhere, its instance is
// terminated and nothing is left on a finalizer. Last, with the disruption Lambda on its schedule:
// a DaemonSet (whose pods kube-controller-manager pins to their nodes with `matchFields`) and a bare
// pod pinned the same way; once the Deployment is gone the nodes with only DaemonSet pods are
// removed as empty, and the node of the bare pod stays while it runs.

const NAMESPACE = `journey-${Math.random().toString(36).slice(2, 8)}`;
const SCHEDULE_MS = 10_000;
const REPLICAS = 3;

let server: Moto;
let cube: Kube;
let simulator: NodeSimulator;
let shim: ShimProcess | undefined;
let disruption: Invoke;
const stops: (() => Promise<void>)[] = [];
const scheduleErrors: unknown[] = [];
/** Every JSON log line the handlers wrote to standard output, as CloudWatch Logs would get it. */
const logs: Record<string, unknown>[] = [];
let restoreStdout: () => void = () => {};

/** Imports a handler as its Lambda's cold start does; every invocation runs with that Lambda's role. */
async function lambda(
  name: (typeof FLOTILLA_FUNCTIONS)[number]['name'],
  load: () => Promise<unknown>,
): Promise<Invoke> {
  const module = (await asLambda(server, name, load)) as {
    handler: (event: unknown, context: { awsRequestId: string }) => Promise<unknown>;
  };
  return (event) =>
    asLambda(server, name, () =>
      module.handler(event, { awsRequestId: `${name}-${Math.random().toString(16).slice(2, 10)}` }),
    );
}

function captureStdout(): () => void {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = String(chunk);
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (typeof parsed['lambda'] === 'string') {
          logs.push(parsed);
          return true;
        }
      } catch {
        // Not one of Flotilla's lines: let it through.
      }
    }
    return write(chunk, ...(rest as []));
  }) as typeof process.stdout.write;
  return () => {
    process.stdout.write = write;
  };
}

const apps = () => cube.userKubeConfig.makeApiClient(AppsV1Api);
const core = () => cube.userKubeConfig.makeApiClient(CoreV1Api);
const custom = () => cube.userKubeConfig.makeApiClient(CustomObjectsApi);
const adminEc2 = () => new EC2Client(awsClientConfig(server));

async function instances(): Promise<Instance[]> {
  const out = await adminEc2().send(
    new DescribeInstancesCommand({ Filters: [{ Name: 'tag:karpenter.sh/nodepool', Values: ['default'] }] }),
  );
  return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
}

async function webPods() {
  return (await core().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'app=web' })).items;
}

async function claims() {
  const cluster = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
  return (await cluster.nodeClaims()).items.filter((c) => c.nodePoolName === 'default');
}

beforeAll(async () => {
  [server, cube] = await Promise.all([moto(), kube()]);
  await resetMoto(server);
  // `cdk deploy`: the stack's resources, and (in the user's account already) a VPC whose subnets
  // and security group carry karpenter.sh/discovery=<cluster>, and AWS's EKS-optimized AMIs.
  const stack = await prepareColdStart(server, cube.controllerKubeconfigPath);
  const admin = awsClientConfig(server);
  await makeNetwork(new EC2Client(admin));
  await publishAl2023(new EC2Client(admin), new SSMClient(admin));
  simulator = NodeSimulator.start({
    ec2: adminEc2(),
    kubeConfig: cube.userKubeConfig,
    clusterName: STACK_CLUSTER,
  });
  restoreStdout = captureStdout();

  const catalog = await lambda('catalog', () => import('../../lambdas/catalog/handler.ts'));
  const provisioner = await lambda('provisioner', () => import('../../lambdas/provisioner/handler.ts'));
  const termination = await lambda('termination', () => import('../../lambdas/termination/handler.ts'));
  disruption = await lambda('disruption', () => import('../../lambdas/disruption/handler.ts'));
  // The deployment's first catalog run (the stack invokes it after creating it; here, its schedule).
  await catalog(SCHEDULED_EVENT);

  const sqs = new SQSClient(admin);
  stops.push(
    startQueueTrigger({
      sqs,
      queueUrl: stack.queueUrls.podEvents,
      row: provisionerFunction,
      queue: 'podEvents',
      invoke: provisioner,
    }),
    startQueueTrigger({
      sqs,
      queueUrl: stack.queueUrls.termination,
      row: terminationFunction,
      queue: 'termination',
      invoke: termination,
    }),
    startSchedule({
      row: provisionerFunction,
      schedule: 'pendingPods',
      invoke: provisioner,
      periodMs: SCHEDULE_MS,
      onError: (e) => scheduleErrors.push(e),
    }),
    startSchedule({
      row: terminationFunction,
      schedule: 'garbageCollection',
      invoke: termination,
      periodMs: SCHEDULE_MS,
      onError: (e) => scheduleErrors.push(e),
    }),
  );
  shim = await startShimProcess({
    server,
    kubeconfigPath: cube.shimKubeconfigPath,
    clusterName: STACK_CLUSTER,
    queueUrl: stack.queueUrls.podEvents,
  });
});

afterAll(async () => {
  shim?.stop();
  for (const stop of stops.reverse()) await stop();
  restoreStdout();
  // Uninstall as a user would; Flotilla's termination and NodeClass controller finish it.
  await core()
    .deleteNamespace({ name: NAMESPACE })
    .catch(() => undefined);
  await custom()
    .deleteClusterCustomObject({ group: 'karpenter.sh', version: 'v1', plural: 'nodepools', name: 'default' })
    .catch(() => undefined);
  await custom()
    .deleteClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      name: 'default',
    })
    .catch(() => undefined);
  const cluster = makeKubeCluster({ connection: cube.controllerConnection(), logger: silentLogger });
  const terminationAws = awsConfigAs(server, 'termination');
  await terminateThroughFlotilla(
    {
      cluster,
      cloud: makeAwsCloud({
        ec2: new EC2Client(terminationAws),
        dynamodb: new DynamoDBClient(terminationAws),
        tableName: STACK_NAMES.stateTable,
        region: server.region,
        cluster: CLUSTER_INFO,
        clock: systemClock,
        logger: silentLogger,
      }),
      logger: silentLogger,
      metrics: quietMetrics,
    },
    (claim) => claim.nodePoolName === 'default',
  );
  const provisionerAws = awsConfigAs(server, 'provisioner');
  await reconcileNodeClasses(
    {
      cluster,
      resolver: makeNodeClassResolver({
        ec2: new EC2Client(provisionerAws),
        ssm: new SSMClient(provisionerAws),
        clusterName: STACK_CLUSTER,
        region: server.region,
        kubernetesVersion: K8S_VERSION,
      }),
      leases: new DynamoLeaseStore(new DynamoDBClient(provisionerAws), STACK_NAMES.stateTable),
      clock: systemClock,
      logger: silentLogger,
      metrics: quietMetrics,
    },
    { holder: 'journey-teardown', scope: 'all' },
    {
      nodeClasses: (await cluster.nodeClasses()).items.filter((c) => c.name === 'default'),
      nodeClaims: (await cluster.nodeClaims()).items,
    },
  );
  await simulator.stop();
});

describe("a new user's first day", () => {
  it('the Deployment runs on nodes launched for it: the getting-started manifest as written, nothing but the handlers', async () => {
    // `envsubst < infra/getting-started.yaml | kubectl apply -f -`, with the two values the README names.
    const values: Record<string, string> = {
      CLUSTER_NAME: STACK_CLUSTER,
      NODE_ROLE_NAME: STACK_NAMES.nodeRole,
    };
    const text = fs
      .readFileSync(path.join(projectRoot, 'infra', 'getting-started.yaml'), 'utf8')
      .replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => values[name] ?? '');
    const objects = cube.userKubeConfig.makeApiClient(KubernetesObjectApi);
    for (const object of loadAllYaml(text)) await objects.create(object as never);
    await core().createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const labels = { app: 'web' };
    await apps().createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'web', namespace: NAMESPACE },
        spec: {
          replicas: REPLICAS,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              terminationGracePeriodSeconds: 0,
              containers: [
                {
                  name: 'app',
                  image: 'public.ecr.aws/docker/library/busybox:stable',
                  resources: { requests: { cpu: '1', memory: '256Mi' } },
                },
              ],
            },
          },
        },
      },
    });

    const running = await waitFor(
      `${REPLICAS} pods of web Running`,
      async () => {
        const pods = await webPods();
        return pods.length === REPLICAS && pods.every((p) => p.status?.phase === 'Running')
          ? pods
          : undefined;
      },
      { timeoutMs: 120_000 },
    );

    // One launch per node needed: every instance has a NodeClaim, every node runs some of the pods.
    const launchedInstances = await instances();
    expect(launchedInstances.length).toBeGreaterThan(0);
    const nodesInUse = new Set(running.map((p) => p.spec?.nodeName));
    expect(nodesInUse.size).toBe(launchedInstances.length);
    // Pods can run on a node before the next scheduled lifecycle pass marks its NodeClaim
    // Initialized and Ready; the pass does so within its period.
    const lifecycleConditions = ['Launched', 'Registered', 'Initialized', 'Ready'];
    const nodeClaims = await waitFor(
      'every NodeClaim Launched, Registered, Initialized and Ready',
      async () => {
        const current = await claims();
        return current.every((claim) =>
          lifecycleConditions.every((type) => isConditionTrue(claim.status.conditions, type)),
        )
          ? current
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(nodeClaims).toHaveLength(launchedInstances.length);

    // The EC2NodeClass was resolved in the very invocation that launched for the first pods.
    const resolved = logs.find(
      (l) => l['message'] === 'ec2NodeClass resolved' && l['decision'] === 'resolveNodeClass' && l['changed'],
    );
    const firstLaunch = logs.find((l) => l['message'] === 'launch decided' && l['outcome'] === 'launched');
    expect(resolved?.['holder']).toBeDefined();
    expect(firstLaunch?.['holder']).toBe(resolved?.['holder']);
    const nodeClass = (await custom().getClusterCustomObject({
      group: 'karpenter.k8s.aws',
      version: 'v1',
      plural: 'ec2nodeclasses',
      name: 'default',
    })) as { status?: { conditions?: { type: string; status: string }[]; instanceProfile?: string } };
    expect(nodeClass.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(nodeClass.status?.instanceProfile).toMatch(new RegExp(`^${STACK_CLUSTER}_`));

    // Pod creation → CreateFleet (the instance's launch time), as the shim path delivers it.
    const nodesByName = new Map((await core().listNode()).items.map((n) => [n.metadata?.name ?? '', n]));
    const delays = running
      .map((pod) => {
        const node = nodesByName.get(pod.spec?.nodeName ?? '');
        const id = node?.spec?.providerID?.split('/').pop();
        const instance = launchedInstances.find((i) => i.InstanceId === id);
        const created = pod.metadata?.creationTimestamp?.getTime() ?? Number.NaN;
        return (instance?.LaunchTime?.getTime() ?? Number.NaN) - created;
      })
      .sort((a, b) => a - b);
    const p50 = delays[Math.floor((delays.length - 1) / 2)] ?? Number.NaN;
    progress(`user journey: pod → CreateFleet p50 ${p50} ms over ${delays.length} pods (whole seconds)`);
    // Seconds, not the one-minute schedule: the shim's event started the run.
    expect(p50).toBeLessThan(15_000);
    expect(scheduleErrors).toEqual([]);
  });

  it('kubectl delete node: its pods run elsewhere, its instance is terminated, and no finalizer is left', async () => {
    const before = await webPods();
    const victim = before[0]?.spec?.nodeName ?? '';
    const node = await core().readNode({ name: victim });
    const instanceId = node.spec?.providerID?.split('/').pop() ?? '';
    const claim = (await claims()).find((c) => c.status.nodeName === victim);
    expect(claim).toBeDefined();

    await core().deleteNode({ name: victim });

    await waitFor(
      `node ${victim} gone, its NodeClaim gone and its instance terminated`,
      async () => {
        const nodeGone = await core()
          .readNode({ name: victim })
          .then(
            () => false,
            () => true,
          );
        const claimGone = !(await claims()).some((c) => c.name === claim?.name);
        const instance = (await instances()).find((i) => i.InstanceId === instanceId);
        return nodeGone && claimGone && instance?.State?.Name === 'terminated' ? true : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const after = await waitFor(
      `${REPLICAS} pods of web Running again`,
      async () => {
        const pods = await webPods();
        return pods.length === REPLICAS && pods.every((p) => p.status?.phase === 'Running')
          ? pods
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(after.every((p) => p.spec?.nodeName !== victim)).toBe(true);
    // Nothing hangs on Flotilla's finalizer.
    for (const n of (await core().listNode({ labelSelector: 'karpenter.sh/nodepool=default' })).items) {
      if (n.metadata?.deletionTimestamp !== undefined) {
        expect(n.metadata.finalizers ?? []).not.toContain('karpenter.sh/termination');
      }
    }
    const deleted = logs.find(
      (l) =>
        l['message'] === 'deleting nodeclaim' &&
        l['decision'] === 'delete' &&
        l['reason'] === 'node deleted' &&
        l['nodeClaim'] === claim?.name,
    );
    expect(deleted?.['lambda']).toBe('termination');
    expect(scheduleErrors).toEqual([]);
  });

  it('a DaemonSet and a bare pod pinned with matchFields: read as they are, and the pinned pod keeps its node', async () => {
    const defaultNodes = async () =>
      (await core().listNode({ labelSelector: 'karpenter.sh/nodepool=default' })).items.filter(
        (n) => n.metadata?.deletionTimestamp === undefined,
      );
    // A node agent on every node: kube-controller-manager creates one pod per node, each pinned to
    // its node by a matchFields term on metadata.name.
    const agent = { app: 'agent' };
    await apps().createNamespacedDaemonSet({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'agent', namespace: NAMESPACE },
        spec: {
          selector: { matchLabels: agent },
          template: {
            metadata: { labels: agent },
            spec: {
              terminationGracePeriodSeconds: 0,
              tolerations: [{ operator: 'Exists' }],
              containers: [
                {
                  name: 'agent',
                  image: 'public.ecr.aws/docker/library/busybox:stable',
                  resources: { requests: { cpu: '10m', memory: '16Mi' } },
                },
              ],
            },
          },
        },
      },
    });
    const nodes = await defaultNodes();
    await waitFor(
      'an agent pod Running on every node',
      async () => {
        const pods = (await core().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'app=agent' }))
          .items;
        const on = new Set(pods.filter((p) => p.status?.phase === 'Running').map((p) => p.spec?.nodeName));
        return nodes.every((n) => on.has(n.metadata?.name)) ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const agentPod = (await core().listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'app=agent' }))
      .items[0];
    expect(
      agentPod?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
        ?.nodeSelectorTerms[0]?.matchFields?.[0]?.key,
    ).toBe('metadata.name');

    // A bare pod pinned as a DaemonSet pod is, but owned by nothing: deleting its node loses it.
    const pinnedNode = (await webPods())[0]?.spec?.nodeName ?? '';
    await core().createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'pinned', namespace: NAMESPACE },
        spec: {
          terminationGracePeriodSeconds: 0,
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  { matchFields: [{ key: 'metadata.name', operator: 'In', values: [pinnedNode] }] },
                ],
              },
            },
          },
          containers: [
            {
              name: 'app',
              image: 'public.ecr.aws/docker/library/busybox:stable',
              resources: { requests: { cpu: '10m', memory: '16Mi' } },
            },
          ],
        },
      },
    });
    const pinnedRunning = async () => {
      const pod = await core().readNamespacedPod({ namespace: NAMESPACE, name: 'pinned' });
      return pod.status?.phase === 'Running' && pod.spec?.nodeName === pinnedNode;
    };
    await waitFor(
      'the pinned pod Running on its node',
      async () => ((await pinnedRunning()) ? true : undefined),
      {
        timeoutMs: 60_000,
      },
    );

    // The Deployment goes; the user shortens consolidateAfter so the test need not wait a minute.
    await apps().patchNamespacedDeployment(
      { name: 'web', namespace: NAMESPACE, body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await custom().patchClusterCustomObject(
      {
        group: 'karpenter.sh',
        version: 'v1',
        plural: 'nodepools',
        name: 'default',
        body: { spec: { disruption: { consolidateAfter: '5s' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor('no pod of web left', async () => ((await webPods()).length === 0 ? true : undefined), {
      timeoutMs: 60_000,
    });
    const stopDisruption = startSchedule({
      row: disruptionFunction,
      schedule: 'disruption',
      invoke: disruption,
      periodMs: SCHEDULE_MS,
      onError: (e) => scheduleErrors.push(e),
    });
    stops.push(stopDisruption);

    // Nodes left with only their agent pod are empty and go; the pinned pod's node stays.
    await waitFor(
      'every node but the pinned pod’s removed as empty',
      async () => {
        const left = (await defaultNodes()).map((n) => n.metadata?.name);
        return left.length === 1 && left[0] === pinnedNode ? true : undefined;
      },
      { timeoutMs: 180_000 },
    );
    const passes = () =>
      logs.filter((l) => l['lambda'] === 'disruption' && l['decision'] === 'disruptionPass').length;
    const seen = passes();
    await waitFor('two more disruption passes', async () => (passes() >= seen + 2 ? true : undefined), {
      timeoutMs: 60_000,
    });
    expect(await pinnedRunning()).toBe(true);
    expect((await defaultNodes()).map((n) => n.metadata?.name)).toEqual([pinnedNode]);

    // Positive control: without the bare pod, the node is empty too (its agent pod does not hold it).
    await core().deleteNamespacedPod({ namespace: NAMESPACE, name: 'pinned' });
    await waitFor(
      'the pinned pod’s node removed once the pod is gone',
      async () => ((await defaultNodes()).length === 0 ? true : undefined),
      {
        timeoutMs: 180_000,
      },
    );
    // Every pod read as it is: no DaemonSet or pinned pod was left out of a read.
    expect(logs.filter((l) => l['message'] === 'skipped malformed object')).toEqual([]);
    expect(scheduleErrors).toEqual([]);
  });
});
