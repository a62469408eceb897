import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { makeFollowUpScheduler } from '../../../shared/adapters/aws/follow-up.ts';
import { parseQueueMessage } from '../../../shared/messages/pod-event.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { CloudApiError } from '../../../shared/ports/cloud.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER, STACK_NAMES } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// The provisioner's delayed follow-up to itself, on moto's SQS and DynamoDB: the stack's pod-event
// queue and state table, sent to and leased with the provisioner's role. `sqs` is the account's
// own client, for inspecting the queue.

let server: Moto;
let sqs: SQSClient;
let provisionerSqs: SQSClient;
let leases: DynamoLeaseStore;
let queueUrl: string;
const logs: Record<string, unknown>[] = [];
const logger = makeLogger({}, { level: 'debug', sink: (line) => logs.push(JSON.parse(line)) });

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
  const stack = await deployStack(server);
  queueUrl = stack.queueUrls.podEvents;
  const provisioner = awsConfigAs(server, 'provisioner');
  leases = new DynamoLeaseStore(new DynamoDBClient(provisioner), STACK_NAMES.stateTable);
  provisionerSqs = new SQSClient(provisioner);
  sqs = new SQSClient(awsClientConfig(server));
});

async function receiveAll() {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return out.Messages ?? [];
}

describe('provisioner follow-up', () => {
  it('sends one delayed follow-up however many invocations ask at once', async () => {
    const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
    const schedule = makeFollowUpScheduler({
      sqs: provisionerSqs,
      queueUrl,
      clusterName: STACK_CLUSTER,
      leases,
      clock,
      logger,
      delaySeconds: 2,
    });
    const sent = await Promise.all(
      Array.from({ length: 5 }, (_, i) => schedule(`invocation-${i}`, ['default-aaaaaaaaaa'])),
    );
    expect(sent.filter((s) => s !== undefined)).toEqual([{ delaySeconds: 2 }]);

    // Held back by SQS for the delay, then delivered once, in the shape the provisioner parses.
    expect(await receiveAll()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const messages = await receiveAll();
    expect(messages).toHaveLength(1);
    const parsed = parseQueueMessage(messages[0]?.Body ?? '');
    expect(parsed).toEqual({
      ok: true,
      message: {
        kind: 'followUp',
        followUp: {
          version: 'flotilla.follow-up/v1',
          kind: 'LifecycleFollowUp',
          cluster: STACK_CLUSTER,
          nodeClaims: ['default-aaaaaaaaaa'],
          requestedAt: '2026-11-21T10:00:00.000Z',
        },
      },
    });

    // Once the delay has passed, the invocation the message triggers may schedule the next one.
    clock.advance(2_000);
    expect(await schedule('invocation-next', ['default-aaaaaaaaaa'])).toEqual({ delaySeconds: 2 });
    // The decision line is the provisioner driver's; the scheduler only reports what it sent.
    expect(logs.filter((l) => l['message'] === 'follow-up scheduled')).toEqual([]);
  });

  it('reports a queue that cannot be reached and frees the lease for the next invocation', async () => {
    const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
    const options = {
      sqs: provisionerSqs,
      clusterName: STACK_CLUSTER,
      leases,
      clock,
      logger,
      delaySeconds: 5,
    };
    // The stack's queue is gone (deleted by hand): the role may send to it, but there is nothing there.
    await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    const broken = makeFollowUpScheduler({ ...options, queueUrl });
    await expect(broken('a', ['default-aaaaaaaaaa'])).rejects.toBeInstanceOf(CloudApiError);
    // Deployed again, the queue is back at the same URL.
    const restored = await sqs.send(new CreateQueueCommand({ QueueName: STACK_NAMES.queues.podEvents }));
    expect(restored.QueueUrl).toBe(queueUrl);
    const working = makeFollowUpScheduler({ ...options, queueUrl });
    expect(await working('b', ['default-aaaaaaaaaa'])).toEqual({ delaySeconds: 5 });
    expect(() => makeFollowUpScheduler({ ...options, queueUrl, delaySeconds: 901 })).toThrow(/0 to 900/);
  });
});
