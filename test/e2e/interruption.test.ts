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
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERRUPTION_RULES } from '../../infra/flotilla-cluster.ts';
import { makeInterruptionHandler } from '../../lambdas/interruption/run.ts';
import { makeTerminationHandler } from '../../lambdas/termination/run.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import type { TerminationQueue } from '../../shared/ports/work-queue.ts';
import { setUpInterruption } from '../../shared/usecases/interruption/setup.ts';
import type { LambdaName } from '../harness/aws/identity.ts';
import { STACK_NAMES } from '../harness/aws/stack.ts';
import { awsClientConfig } from '../harness/index.ts';
import { waitFor } from '../harness/proc.ts';
import type { LambdaAws } from '../integration/aws/cloud-fixture.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// A spot interruption end to end: EC2's event goes on the bus (PutEvents) → the stack's rule →
// the stack's interruption queue (SQS) → the interruption Lambda's handler → the NodeClaim is
// deleted and its drain starts on the stack's termination queue → the termination Lambda's handler
// taints the Node, evicts its pods (PDB-aware), terminates the instance and releases the
// finalizers, while the provisioner launches the replacement. Lambda invocations are played here:
// messages are received from the stack's queues (moto) and handed to the handlers' run functions,
// deleted unless reported as batch item failures. Each handler is set up as its handler.ts sets it
// up and runs as its Lambda: the controller group on the API server, its own role on AWS (the IAM
// check holds every call of an invocation to that role's policy). The provisioner e2e fixture sets
// up moto with the stack deployed, the API server, the node simulator and this run's NodePools;
// the controllers loop below drives the provisioner's lifecycle pass itself.

const e2e = new ProvisionerE2E('interrupt', { lifecycleLoop: false });
const { id, namespace, logLines, logger, metrics } = e2e;

/** The account's own SQS client: it plays EventBridge and Lambda's event source mappings. */
let sqs: SQSClient;
let interruptionQueueUrl = '';
let terminationQueueUrl = '';
/** The interruption Lambda's AWS clients (ICE back-offs, termination requests). */
let interruptionAws: LambdaAws;
/** The stack's termination queue as the interruption Lambda sends to it. */
let interruptionToTermination: TerminationQueue;

beforeAll(async () => {
  const { server, account } = e2e.env;
  sqs = new SQSClient(awsClientConfig(server));
  interruptionQueueUrl = account.stack.queueUrls.interruption;
  terminationQueueUrl = account.stack.queueUrls.termination;
  interruptionAws = account.as('interruption');
  interruptionToTermination = makeSqsTerminationQueue(interruptionAws.sqs, terminationQueueUrl);
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
});

// After hooks run in reverse order: the controllers stop before the fixture tears the run down.
afterAll(() => stopControllers());

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

/** A handler invoked as `lambda`: every AWS call of the invocation is held to that Lambda's role. */
function invokedAs(lambda: LambdaName, handler: (event: unknown) => Promise<unknown>) {
  return (event: unknown) => asLambda(e2e.env.server, lambda, () => handler(event));
}

const interruptionHandler = invokedAs('interruption', (event) =>
  makeInterruptionHandler(
    setUpInterruption({
      cluster: e2e.env.cluster,
      cloud: interruptionAws.cloud,
      terminationQueue: interruptionToTermination,
      logger,
      metrics,
    }),
  )(event),
);

const terminationHandler = invokedAs('termination', (event) =>
  makeTerminationHandler(e2e.terminationLambda())(event),
);

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
  const { server } = e2e.env;
  controllersRunning = (async () => {
    while (!stopRequested) {
      try {
        await asLambda(server, 'provisioner', () => e2e.controllersPass());
        await invoke(terminationQueueUrl, terminationHandler);
        if ((await e2e.pendingPods()).length > 0) {
          provisionRuns += 1;
          await asLambda(server, 'provisioner', () =>
            e2e.run(`run-${provisionRuns}-${id}`, { batchMaxMs: 2_000 }),
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

/** A NodePool of m5.large in `capacityType`, its group and name suffix `group`. */
function createPool(group: string, capacityType: 'spot' | 'on-demand', terminationGracePeriod?: string) {
  return e2e.createPool(group, group, {
    instanceTypes: ['m5.large'],
    capacityTypes: [capacityType],
    ...(terminationGracePeriod === undefined ? {} : { terminationGracePeriod }),
  });
}

const isReady = (p: Awaited<ReturnType<typeof e2e.podsOf>>[number]) =>
  p.metadata?.deletionTimestamp === undefined &&
  p.status?.phase === 'Running' &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

async function running(app: string, count: number, notOn?: string) {
  return waitFor(
    `${count} pods of ${app} Running${notOn === undefined ? '' : ` off ${notOn}`}`,
    async () => {
      const pods = (await e2e.podsOf(app)).filter((p) => p.metadata?.deletionTimestamp === undefined);
      return pods.length === count && pods.every((p) => isReady(p) && p.spec?.nodeName !== notOn)
        ? pods
        : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

async function instanceState(instanceId: string): Promise<string | undefined> {
  const out = await e2e.env.account.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
  return out.Reservations?.[0]?.Instances?.[0]?.State?.Name;
}

const instanceOf = (providerId: string | undefined) => /\/(i-[0-9a-z]+)$/.exec(providerId ?? '')?.[1] ?? '';

describe('interruption and termination end to end (EventBridge → SQS → Lambdas, moto + kube-apiserver)', () => {
  it('a spot interruption drains the node within its PDB, holds the do-not-disrupt pod until the terminationGracePeriod, replaces the node and terminates the instance', async () => {
    const { cluster, core, account, awsClock, server } = e2e.env;
    const pool = await createPool('spot', 'spot', '20s');
    await e2e.deploy('spot', 'web', 2, '500m');
    await e2e.deploy('spot', 'keeper', 1, '250m', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
    await e2e.podDisruptionBudget('web', 1);
    await waitFor('3 pods pending', async () => ((await e2e.pendingPods()).length === 3 ? true : undefined), {
      timeoutMs: 60_000,
    });
    startControllers();
    const [firstWeb] = await running('web', 2);
    await running('keeper', 1);
    const [original] = await e2e.nodeClaimsOf(pool);
    expect(await e2e.nodeClaimsOf(pool)).toHaveLength(1);
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
        minReady = Math.min(minReady, (await e2e.podsOf('web')).filter(isReady).length);
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
      decision: 'handleInterruption',
      interruption: 'spotInterruption',
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
        timeoutMs: 60_000,
      },
    );
    watching = false;
    await watcher;

    expect(minReady).toBeGreaterThanOrEqual(1);
    const drainSteps = logLines.filter(
      (l) => l['message'] === 'drain step' && l['nodeClaim'] === original?.name,
    );
    expect(drainSteps.reduce((n, l) => n + Number(l['evicted'] ?? 0), 0)).toBe(2);
    // The budget let one web pod go at a time: the second waited for its replacement.
    expect(drainSteps.some((l) => Number(l['blocked']) > 0)).toBe(true);
    // The do-not-disrupt pod was not evicted, as in Karpenter: the terminationGracePeriod
    // force-deleted it at the deadline.
    expect(
      drainSteps.filter((l) => l['action'] === 'forceDelete').flatMap((l) => l['pods'] as string[]),
    ).toEqual([expect.stringMatching(/\/keeper-/)]);
    expect(drainSteps.every((l) => l['reason'] === 'SpotInterruption')).toBe(true);
    const evictedEvents = (await core.listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === 'Evicted' && e.source?.component === 'flotilla',
    );
    expect(evictedEvents.some((e) => e.involvedObject.name?.startsWith('keeper-'))).toBe(false);
    expect(evictedEvents.filter((e) => e.involvedObject.name?.startsWith('web-'))).toHaveLength(2);

    // A replacement NodeClaim in another offering, the old instance terminated, the offering backed off.
    const [replacement] = await e2e.nodeClaimsOf(pool);
    expect(await e2e.nodeClaimsOf(pool)).toHaveLength(1);
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
    const { cluster } = e2e.env;
    const pool = await createPool('dup', 'on-demand');
    await e2e.deploy('dup', 'dup', 1, '500m');
    startControllers();
    await running('dup', 1);
    const [claim] = await e2e.nodeClaimsOf(pool);
    await stopControllers();
    const instanceId = instanceOf(claim?.status.providerId);

    // The stack's interruption queue with its dead-letter queue (as the stack redrives it, after
    // fewer receives: 2 instead of 3, to keep the test short).
    const dlqUrl = await createQueue(`${STACK_NAMES.queues.interruption}-dlq`);
    const queueUrl = interruptionQueueUrl;
    await sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: queueUrl,
        Attributes: {
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlqUrl), maxReceiveCount: 2 }),
        },
      }),
    );
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
        l['interruption'] === 'instanceStopped',
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
    const { cluster } = e2e.env;
    const pool = await createPool('tgp', 'on-demand', '20s');
    await e2e.deploy('tgp', 'stubborn', 1, '500m', { terminationGracePeriodSeconds: 5 });
    await e2e.podDisruptionBudget('stubborn', 1);
    startControllers();
    const [pod] = await running('stubborn', 1);
    const [claim] = await e2e.nodeClaimsOf(pool);
    expect(claim?.terminationGracePeriod).toBe('20s');
    const instanceId = instanceOf(claim?.status.providerId);
    await stopControllers();

    // kubectl delete nodeclaim: the schedule's sweep finds it, and cannot finish within one budget.
    await e2e.env.custom.deleteClusterCustomObject({
      group: 'karpenter.sh',
      version: 'v1',
      plural: 'nodeclaims',
      name: claim?.name ?? '',
    });
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

    // From here the termination queue carries it, one short invocation after another (a
    // termination request, as the interruption or provisioner Lambda sends one).
    await makeSqsTerminationQueue(sqs, terminationQueueUrl).enqueue({ nodeClaim: claim?.name ?? '' }, 0);
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
    const evictions = mine.filter((l) => l['message'] === 'drain step' && l['action'] === 'evict');
    expect(evictions.length).toBeGreaterThan(0);
    expect(evictions.every((l) => l['evicted'] === 0 && Number(l['blocked']) === 1)).toBe(true);
    const forced = mine.filter((l) => l['message'] === 'drain step' && l['action'] === 'forceDelete');
    expect(forced).toHaveLength(1);
    expect(forced[0]).toMatchObject({
      decision: 'drain',
      podCount: 1,
      pods: [`${namespace}/${pod?.metadata?.name}`],
    });
    expect(forced[0]?.['deadline']).toEqual(expect.any(String));
    expect(mine.some((l) => l['message'] === 'instance terminated' && l['instanceId'] === instanceId)).toBe(
      true,
    );
    expect(await instanceState(instanceId)).toBe('terminated');
    expect(controllerErrors).toEqual([]);
  });
});
