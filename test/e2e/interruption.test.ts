import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import {
  EventBridgeClient,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PolicyV1Api,
  type V1Toleration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERRUPTION_RULES } from '../../infra/flotilla-cluster.ts';
import { makeInterruptionHandler } from '../../lambdas/interruption/run.ts';
import { makeTerminationHandler } from '../../lambdas/termination/run.ts';
import { makeEc2CatalogSource } from '../../shared/adapters/aws/catalog-source.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { parseEC2NodeClass } from '../../shared/adapters/aws/nodeclass-schema.ts';
import { makeNodeClassStatusWriter } from '../../shared/adapters/aws/nodeclass-status-writer.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/index.ts';
import { makeManualClock, systemClock } from '../../shared/ports/clock.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import type { TerminationQueue } from '../../shared/ports/work-queue.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { handleInterruption, indexNodeClaims } from '../../shared/usecases/interruption.ts';
import { reconcileLifecycle } from '../../shared/usecases/lifecycle.ts';
import { provision } from '../../shared/usecases/provision.ts';
import { terminateNodeClaim } from '../../shared/usecases/termination.ts';
import { forceDeleteNodeClaims } from '../harness/cleanup.ts';
import { awsClientConfig, kube, type Moto, moto, resetMoto } from '../harness/index.ts';
import { NodeSimulator } from '../harness/node-sim.ts';
import { waitFor } from '../harness/proc.ts';
import { setUpAccount, TABLE } from '../integration/aws/cloud-fixture.ts';
import { CLUSTER, nodeClassObject, silentLogger } from '../integration/aws/fixtures.ts';

// A spot interruption end to end: EC2's event goes on the bus (PutEvents) → the stack's rule →
// the interruption queue (SQS) → the interruption Lambda's handler → the NodeClaim is deleted and
// its drain starts on the termination queue → the termination Lambda's handler taints the Node,
// evicts its pods (PDB-aware), terminates the instance and releases the finalizers, while the
// provisioner launches the replacement. Lambda invocations are played here: messages are received
// from the real (moto) queues and handed to the handlers' run functions, deleted unless reported
// as batch item failures. Everything this file creates is scoped by a run id (pool template label
// and taint), because the API server is shared with other test files.

const id = randomBytes(3).toString('hex');
const namespace = `interrupt-${id}`;
const RUN_LABEL = 'flotilla-e2e/run';
const GROUP_LABEL = 'flotilla-e2e/group';
const runToleration: V1Toleration = { key: RUN_LABEL, operator: 'Equal', value: id, effect: 'NoSchedule' };
const nodeClassName = `intr-${id}`;
const karpenter = { group: 'karpenter.sh', version: 'v1' };
const createdPools: string[] = [];
const ignore = () => undefined;

let server: Moto;
let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let cluster: Cluster;
let simulator: NodeSimulator;
let sqs: SQSClient;
let account: Awaited<ReturnType<typeof setUpAccount>>;
const awsClock = makeManualClock(new Date());
let interruptionQueueUrl = '';
let terminationQueueUrl = '';
let terminationQueue: TerminationQueue;
const logLines: Record<string, unknown>[] = [];
const logger = makeLogger({}, { level: 'info', sink: (line) => logLines.push(JSON.parse(line)) });

beforeAll(async () => {
  let cube: Awaited<ReturnType<typeof kube>>;
  [server, cube] = await Promise.all([moto(), kube()]);
  kc = cube.kubeConfig;
  await resetMoto(server);
  account = await setUpAccount(server, awsClock);
  const catalog = await makeEc2CatalogSource({
    ec2: account.ec2,
    region: 'us-east-1',
    clock: awsClock,
    logger: silentLogger,
  }).fetchCatalog();
  await account.cloud.offeringCache.writeCatalog(catalog);

  sqs = new SQSClient(awsClientConfig(server));
  interruptionQueueUrl = await createQueue(`interruption-${id}`);
  terminationQueueUrl = await createQueue(`termination-${id}`);
  terminationQueue = makeSqsTerminationQueue(sqs, terminationQueueUrl);
  const queueArn = await arnOf(interruptionQueueUrl);
  const events = new EventBridgeClient(awsClientConfig(server));
  // The stack's rules, pattern for pattern, each targeting the interruption queue.
  for (const rule of INTERRUPTION_RULES) {
    await events.send(
      new PutRuleCommand({
        Name: `${rule.id}-${id}`,
        EventPattern: JSON.stringify(toEventPatternJson(rule.pattern)),
      }),
    );
    await events.send(
      new PutTargetsCommand({ Rule: `${rule.id}-${id}`, Targets: [{ Id: 'queue', Arn: queueArn }] }),
    );
  }

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
  // Resolved as the provisioner would, so the NodePool status pass of the lifecycle sees it Ready.
  const parsed = parseEC2NodeClass(nodeClass);
  await makeNodeClassStatusWriter(kc).write(nodeClassName, await account.resolver.resolve(parsed));
  simulator = NodeSimulator.start({ ec2: account.ec2, kubeConfig: kc, clusterName: CLUSTER });
});

afterAll(async () => {
  await stopControllers();
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
  const nodes = await core.listNode({ labelSelector: `${RUN_LABEL}=${id}` }).catch(() => ({ items: [] }));
  for (const node of nodes.items) {
    const name = node.metadata?.name ?? '';
    await cluster.patchNode(name, { removeFinalizers: ['karpenter.sh/termination'] }).catch(ignore);
    await core.deleteNode({ name }).catch(ignore);
  }
  const events = await core.listNamespacedEvent({ namespace: 'default' }).catch(() => ({ items: [] }));
  for (const e of events.items) {
    if (e.involvedObject.name?.includes(id)) {
      await core.deleteNamespacedEvent({ namespace: 'default', name: e.metadata?.name ?? '' }).catch(ignore);
    }
  }
  await core.deleteNamespace({ name: namespace }).catch(ignore);
});

/** CDK's EventPattern (camelCase keys) as the JSON EventBridge stores. */
function toEventPatternJson(
  pattern: (typeof INTERRUPTION_RULES)[number]['pattern'],
): Record<string, unknown> {
  return {
    ...(pattern.source === undefined ? {} : { source: pattern.source }),
    ...(pattern.detailType === undefined ? {} : { 'detail-type': pattern.detailType }),
    ...(pattern.detail === undefined ? {} : { detail: pattern.detail }),
  };
}

async function createQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const created = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return created.QueueUrl ?? '';
}

async function arnOf(queueUrl: string): Promise<string> {
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return attrs.Attributes?.['QueueArn'] ?? '';
}

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/events/${name}.json`, import.meta.url), 'utf8')) as {
    id: string;
    resources: string[];
    detail: Record<string, unknown>;
    [key: string]: unknown;
  };

/** A real-shaped EventBridge entry (as EC2 publishes it) for PutEvents. */
function ec2Entry(
  fixtureName: string,
  instanceId: string,
  zone: string,
  detail: Record<string, unknown> = {},
) {
  const event = fixture(fixtureName);
  return {
    Source: event['source'] as string,
    DetailType: event['detail-type'] as string,
    Resources: [`arn:aws:ec2:${zone}:instance/${instanceId}`],
    Detail: JSON.stringify({ ...event.detail, 'instance-id': instanceId, ...detail }),
  };
}

const interruptionHandler = makeInterruptionHandler({
  logger,
  indexNodeClaims: () => indexNodeClaims(cluster),
  handle: (message, claims) =>
    handleInterruption({ cluster, cloud: account.cloud, terminationQueue, logger }, message, claims),
});

const terminationHandler = makeTerminationHandler({
  logger,
  terminate: (name) => terminateNodeClaim({ cluster, cloud: account.cloud, logger }, name, new Date()),
  enqueue: (nodeClaim, delaySeconds) => terminationQueue.enqueue({ nodeClaim }, delaySeconds),
  terminatingNodeClaims: async () =>
    (await cluster.nodeClaims()).items
      .filter(
        (c) => c.deleting && c.finalizers.includes('karpenter.sh/termination') && c.labels[RUN_LABEL] === id,
      )
      .map((c) => c.name),
  sleep: (ms) => sleep(ms),
  nowMs: () => Date.now(),
  // Short invocations, so a drain spans several of them as a long one spans Lambda timeouts.
  budgetMs: 3_000,
});

/** One Lambda invocation on what the queue holds now: received, handled, acknowledged. */
async function invoke(
  queueUrl: string,
  handler: (event: unknown) => Promise<unknown>,
  visibilityTimeout = 30,
): Promise<{ readonly messages: readonly Message[]; readonly failed: readonly string[] }> {
  const received = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: visibilityTimeout,
      WaitTimeSeconds: 0,
    }),
  );
  const messages = received.Messages ?? [];
  if (messages.length === 0) return { messages, failed: [] };
  const result = (await handler({
    Records: messages.map((m) => ({
      messageId: m.MessageId ?? '',
      body: m.Body ?? '',
      receiptHandle: m.ReceiptHandle,
    })),
  })) as { batchItemFailures: { itemIdentifier: string }[] };
  const failed = result.batchItemFailures.map((f) => f.itemIdentifier);
  for (const m of messages) {
    if (failed.includes(m.MessageId ?? '')) continue;
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle ?? '' }));
  }
  return { messages, failed };
}

// The other Lambdas, played in the background: provisioner (when this file's pods are pending),
// NodeClaim lifecycle, and the termination queue's consumer.
let controllersRunning: Promise<void> | undefined;
let stopRequested = false;
let provisionRuns = 0;
const controllerErrors: unknown[] = [];

function startControllers(): void {
  stopRequested = false;
  controllersRunning = (async () => {
    while (!stopRequested) {
      try {
        await reconcileLifecycle({ cluster, cloud: account.cloud, logger: silentLogger }, new Date());
        await invoke(terminationQueueUrl, terminationHandler);
        if ((await pendingPods()).length > 0) {
          provisionRuns += 1;
          await provision(
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
            {
              holder: `run-${provisionRuns}-${id}`,
              leaseName: `provisioner#${id}`,
              batchIdleMs: 300,
              batchMaxMs: 2_000,
            },
          );
        }
      } catch (error) {
        controllerErrors.push(error);
      }
      await sleep(300);
    }
  })();
}

async function stopControllers(): Promise<void> {
  stopRequested = true;
  await controllersRunning;
}

async function pendingPods() {
  const pods = await core.listNamespacedPod({ namespace });
  return pods.items.filter((p) =>
    p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable'),
  );
}

async function createPool(
  group: string,
  capacityType: 'spot' | 'on-demand',
  terminationGracePeriod?: string,
): Promise<string> {
  const name = `intr-${id}-${group}`;
  createdPools.push(name);
  await custom.createClusterCustomObject({
    ...karpenter,
    plural: 'nodepools',
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name },
      spec: {
        template: {
          metadata: { labels: { [RUN_LABEL]: id, [GROUP_LABEL]: group } },
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: nodeClassName },
            requirements: [
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: [capacityType] },
              { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
            ],
            taints: [{ key: RUN_LABEL, value: id, effect: 'NoSchedule' }],
            expireAfter: '720h',
            ...(terminationGracePeriod === undefined ? {} : { terminationGracePeriod }),
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

async function deploy(
  group: string,
  name: string,
  replicas: number,
  cpu: string,
  options: { annotations?: Record<string, string>; gracePeriodSeconds?: number } = {},
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
          metadata: {
            labels,
            ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
          },
          spec: {
            nodeSelector: { [RUN_LABEL]: id, [GROUP_LABEL]: group },
            tolerations: [runToleration],
            terminationGracePeriodSeconds: options.gracePeriodSeconds ?? 0,
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
}

async function guard(app: string, minAvailable: number): Promise<void> {
  await kc.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
    namespace,
    body: { metadata: { name: app }, spec: { minAvailable, selector: { matchLabels: { app } } } },
  });
}

async function podsOf(app: string) {
  return (await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;
}

const isReady = (p: Awaited<ReturnType<typeof podsOf>>[number]) =>
  p.metadata?.deletionTimestamp === undefined &&
  p.status?.phase === 'Running' &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

async function running(app: string, count: number, notOn?: string) {
  return waitFor(
    `${count} pods of ${app} Running${notOn === undefined ? '' : ` off ${notOn}`}`,
    async () => {
      const pods = (await podsOf(app)).filter((p) => p.metadata?.deletionTimestamp === undefined);
      return pods.length === count && pods.every((p) => isReady(p) && p.spec?.nodeName !== notOn)
        ? pods
        : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

async function claimsOf(pool: string) {
  return (await cluster.nodeClaims()).items.filter((c) => c.nodePoolName === pool);
}

async function instanceState(instanceId: string): Promise<string | undefined> {
  const out = await account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

const instanceOf = (providerId: string | undefined) => /\/(i-[0-9a-z]+)$/.exec(providerId ?? '')?.[1] ?? '';

describe('interruption and termination end to end (EventBridge → SQS → Lambdas, moto + kube-apiserver)', () => {
  it('a spot interruption drains the node within its PDB (do-not-disrupt pods too), replaces it and terminates the instance', async () => {
    const pool = await createPool('spot', 'spot');
    await deploy('spot', 'web', 2, '500m');
    await deploy('spot', 'keeper', 1, '250m', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
    await guard('web', 1);
    await waitFor('3 pods pending', async () => ((await pendingPods()).length === 3 ? true : undefined), {
      timeoutMs: 60_000,
    });
    startControllers();
    const [firstWeb] = await running('web', 2);
    await running('keeper', 1);
    const [original] = await claimsOf(pool);
    expect(await claimsOf(pool)).toHaveLength(1);
    const oldNode = firstWeb?.spec?.nodeName ?? '';
    expect(original?.status.nodeName).toBe(oldNode);
    expect(original?.labels['karpenter.sh/capacity-type']).toBe('spot');
    const instanceId = instanceOf(original?.status.providerId);
    const zone = original?.labels['topology.kubernetes.io/zone'] ?? '';

    // Watch the PDB's promise while the drain runs: never fewer than 1 ready web pod.
    let minReady = Number.POSITIVE_INFINITY;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        minReady = Math.min(minReady, (await podsOf('web')).filter(isReady).length);
        await sleep(100);
      }
    })();

    // EC2 publishes the warning; the stack's rule routes it to the interruption queue.
    const events = new EventBridgeClient(awsClientConfig(server));
    const put = await events.send(
      new PutEventsCommand({ Entries: [ec2Entry('spot-interruption', instanceId, zone)] }),
    );
    expect(put.FailedEntryCount ?? 0).toBe(0);
    const delivery = await waitFor(
      'the event on the interruption queue',
      async () => {
        const got = await invoke(interruptionQueueUrl, interruptionHandler);
        return got.messages.length > 0 ? got : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(delivery.failed).toEqual([]);
    expect(JSON.parse(delivery.messages[0]?.Body ?? '{}')).toMatchObject({
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      detail: { 'instance-id': instanceId },
    });
    expect(
      logLines.find((l) => l['message'] === 'interruption handled' && l['instanceId'] === instanceId),
    ).toMatchObject({
      kind: 'spotInterruption',
      action: 'cordonAndDrain',
      nodeClaim: original?.name,
    });

    // The drain: the Node is tainted, pods evicted, replacements launched elsewhere.
    await waitFor(
      'the old node tainted karpenter.sh/disrupted',
      async () => {
        const node = await cluster.node(oldNode);
        return node === undefined || node.taints?.some((t) => t.key === 'karpenter.sh/disrupted')
          ? true
          : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(logLines.some((l) => l['message'] === 'tainted node' && l['node'] === oldNode)).toBe(true);
    await running('web', 2, oldNode);
    await running('keeper', 1, oldNode);
    await waitFor(
      'the old NodeClaim gone',
      async () => ((await cluster.nodeClaim(original?.name ?? '')) ? undefined : true),
      {
        timeoutMs: 30_000,
      },
    );
    watching = false;
    await watcher;

    expect(minReady).toBeGreaterThanOrEqual(1);
    const drainSteps = logLines.filter(
      (l) => l['message'] === 'drain step' && l['nodeClaim'] === original?.name,
    );
    expect(drainSteps.reduce((n, l) => n + Number(l['evicted'] ?? 0), 0)).toBe(3);
    // The budget let one web pod go at a time: the second waited for its replacement.
    expect(drainSteps.some((l) => Number(l['blocked']) > 0)).toBe(true);
    // The do-not-disrupt pod was evicted: an interruption is not a voluntary disruption.
    expect(drainSteps.some((l) => l['decision'] === 'forceDelete')).toBe(false);
    const evictedEvents = (await core.listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === 'Evicted' && e.source?.component === 'flotilla',
    );
    expect(evictedEvents.some((e) => e.involvedObject.name?.startsWith('keeper-'))).toBe(true);

    // A replacement NodeClaim in another offering, the old instance terminated, the offering backed off.
    const [replacement] = await claimsOf(pool);
    expect(await claimsOf(pool)).toHaveLength(1);
    expect(replacement?.name).not.toBe(original?.name);
    expect(await instanceState(instanceId)).toBe('terminated');
    const unavailable = await account.cloud.unavailableOfferings.list(awsClock.now());
    expect(unavailable.get(`spot:m5.large:${zone}`)).toMatchObject({ reason: 'spot interruption' });
    expect(replacement?.labels['topology.kubernetes.io/zone']).not.toBe(zone);
    expect(await cluster.node(oldNode)).toBeUndefined();
    const claimEvents = (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
      (e) => e.involvedObject.name === original?.name,
    );
    expect(claimEvents.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['SpotInterrupted', 'TerminatingOnInterruption']),
    );
    expect(controllerErrors).toEqual([]);
    await stopControllers();
  });

  it('the same event twice changes nothing the second time; a malformed one goes to the DLQ while nine others are processed', async () => {
    const pool = await createPool('dup', 'on-demand');
    await deploy('dup', 'dup', 1, '500m');
    startControllers();
    await running('dup', 1);
    const [claim] = await claimsOf(pool);
    await stopControllers();
    const instanceId = instanceOf(claim?.status.providerId);

    // A queue with the stack's redrive shape: after maxReceiveCount receives, the DLQ.
    const dlqUrl = await createQueue(`dup-dlq-${id}`);
    const queueUrl = await createQueue(`dup-${id}`, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlqUrl), maxReceiveCount: 2 }),
    });
    const stopping = JSON.stringify({
      ...fixture('state-change-stopping'),
      time: new Date().toISOString(),
      detail: { 'instance-id': instanceId, state: 'stopping' },
    });
    const others = Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({
        ...fixture('rebalance'),
        id: `rebalance-${i}-${id}`,
        detail: { 'instance-id': `i-0ff${i}${id}` },
      }),
    );
    const bodies = [stopping, '{"version":"0","detail-type": truncated', ...others];
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: bodies.map((MessageBody, i) => ({ Id: `m${i}`, MessageBody })),
      }),
    );
    const first = await invoke(queueUrl, interruptionHandler, 1);
    expect(first.messages).toHaveLength(10);
    expect(first.failed).toHaveLength(1);
    const deleting = await cluster.nodeClaim(claim?.name ?? '');
    expect(deleting?.deleting).toBe(true);
    expect(
      logLines.filter(
        (l) => l['message'] === 'interruption handled' && String(l['eventId']).startsWith('rebalance-'),
      ),
    ).toHaveLength(8);

    // The same stopping event again, in a later batch.
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: 'again', MessageBody: stopping }] }),
    );
    const statusBefore = (await cluster.nodeClaim(claim?.name ?? ''))?.status;
    await sleep(1_100);
    let second = await invoke(queueUrl, interruptionHandler, 1);
    const seen = [...second.messages];
    // The malformed message comes back after its visibility timeout; receive until the queue is empty.
    for (let round = 0; round < 10 && (second.messages.length > 0 || round < 3); round += 1) {
      await sleep(1_100);
      second = await invoke(queueUrl, interruptionHandler, 1);
      seen.push(...second.messages);
    }
    expect(seen.some((m) => m.Body === stopping)).toBe(true);
    const repeat = logLines.filter(
      (l) =>
        l['message'] === 'interruption handled' &&
        l['instanceId'] === instanceId &&
        l['kind'] === 'instanceStopped',
    );
    expect(repeat.map((l) => l['action'])).toEqual(['cordonAndDrain', 'alreadyDeleting']);
    expect((await cluster.nodeClaim(claim?.name ?? ''))?.status).toEqual(statusBefore);
    const inDlq = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10 }));
    expect(inDlq.Messages?.map((m) => m.Body)).toEqual(['{"version":"0","detail-type": truncated']);

    // One termination request was queued, not two; the drain then finishes.
    const requests: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const got = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: terminationQueueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 0,
        }),
      );
      const forClaim = (got.Messages ?? []).filter((m) => m.Body?.includes(`"${claim?.name}"`));
      requests.push(...forClaim.map((m) => m.MessageId ?? ''));
    }
    expect(new Set(requests).size).toBe(1);
    startControllers();
    await waitFor(
      'the stopped NodeClaim gone',
      async () => ((await cluster.nodeClaim(claim?.name ?? '')) ? undefined : true),
      {
        timeoutMs: 30_000,
      },
    );
    expect(await instanceState(instanceId)).toBe('terminated');
    await stopControllers();
  });

  it('a drain blocked by a PDB outlives one invocation, continues in later ones, and terminationGracePeriod ends it', async () => {
    const pool = await createPool('tgp', 'on-demand', '20s');
    await deploy('tgp', 'stubborn', 1, '500m', { gracePeriodSeconds: 5 });
    await guard('stubborn', 1);
    startControllers();
    const [pod] = await running('stubborn', 1);
    const [claim] = await claimsOf(pool);
    expect(claim?.terminationGracePeriod).toBe('20s');
    const instanceId = instanceOf(claim?.status.providerId);
    await stopControllers();

    // kubectl delete nodeclaim: the schedule's sweep finds it, and cannot finish within one budget.
    await cluster.deleteNodeClaim(claim?.name ?? '');
    const swept = (await terminationHandler({
      version: '0',
      source: 'aws.events',
      'detail-type': 'Scheduled Event',
      detail: {},
    })) as { kind: string; results: { nodeClaim: string; kind: string; waitingOn?: string }[] };
    expect(swept.kind).toBe('swept');
    expect(swept.results).toEqual([
      expect.objectContaining({ nodeClaim: claim?.name, kind: 'continue', waitingOn: 'drain' }),
    ]);
    const annotated = await cluster.nodeClaim(claim?.name ?? '');
    const deadline = annotated?.annotations['karpenter.sh/nodeclaim-termination-timestamp'];
    expect(Date.parse(deadline ?? '')).toBe(
      Math.floor(((annotated?.deletedAtMs ?? 0) + 20_000) / 1000) * 1000,
    );

    // From here the termination queue carries it, one short invocation after another.
    await terminationQueue.enqueue({ nodeClaim: claim?.name ?? '' }, 0);
    startControllers();
    await waitFor(
      'the NodeClaim gone',
      async () => ((await cluster.nodeClaim(claim?.name ?? '')) ? undefined : true),
      {
        timeoutMs: 60_000,
      },
    );
    await stopControllers();

    const mine = logLines.filter((l) => l['nodeClaim'] === claim?.name);
    const handedOn = mine.filter(
      (l) => l['message'] === 'termination continues later' && l['queued'] === true,
    );
    expect(handedOn.length).toBeGreaterThanOrEqual(2);
    const evictions = mine.filter((l) => l['message'] === 'drain step' && l['decision'] === 'evict');
    expect(evictions.length).toBeGreaterThan(0);
    expect(evictions.every((l) => l['evicted'] === 0 && Number(l['blocked']) === 1)).toBe(true);
    const forced = mine.filter((l) => l['message'] === 'drain step' && l['decision'] === 'forceDelete');
    expect(forced).toHaveLength(1);
    expect(forced[0]).toMatchObject({
      reason: 'terminationGracePeriod',
      pods: [`${namespace}/${pod?.metadata?.name}`],
    });
    expect(mine.some((l) => l['message'] === 'instance terminated' && l['instanceId'] === instanceId)).toBe(
      true,
    );
    expect(await instanceState(instanceId)).toBe('terminated');
    expect(controllerErrors).toEqual([]);
  });
});
