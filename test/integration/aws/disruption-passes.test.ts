import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeDisruptionHandler } from '../../../lambdas/disruption/run.ts';
import { makeDisruptionPassQueue } from '../../../shared/adapters/aws/disruption-passes.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { QueueSendError } from '../../../shared/ports/errors.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { takeDenials } from '../../harness/iam-check.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// Passes between the disruption schedule's ticks, on moto's SQS: a tick sends them to the stack's
// disruption queue with the disruption Lambda's role, SQS holds each back until it is due, and the
// message it delivers runs a pass of the same handler. `sqs` is the account's own client, playing
// the event source mapping.

let server: Moto;
let sqs: SQSClient;
let queueUrl: string;

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
  queueUrl = (await deployStack(server)).queueUrls.disruptionPasses;
  sqs = new SQSClient(awsClientConfig(server));
});

async function receive() {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return out.Messages ?? [];
}

function scheduleEvent(time: Date) {
  return {
    version: '0',
    id: 'b2b5c1de-8a61-4f3e-9d0b-0d1f1f5b2a11',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: time.toISOString().replace('.000Z', 'Z'),
    region: 'us-east-1',
    resources: [],
    detail: {},
  };
}

describe('disruption passes between ticks', () => {
  it('are held back by SQS until due, and each one delivered runs a pass', async () => {
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    // The tick fired 9 s ago: with a pass every 10 s, the first is due in 1 s, the next in 11 s.
    const tick = new Date(now.getTime() - 9_000);
    const holders: string[] = [];
    const lines: Record<string, unknown>[] = [];
    const handler = makeDisruptionHandler({
      logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }),
      metrics: quietMetrics,
      clusterName: STACK_CLUSTER,
      pass: async (holder) => {
        holders.push(holder);
        return { kind: 'pass', decisions: [], inFlight: 0 };
      },
      between: {
        intervalSeconds: 10,
        send: makeDisruptionPassQueue(new SQSClient(awsConfigAs(server, 'disruption')), queueUrl),
        clock: makeManualClock(now),
      },
    });

    await handler(scheduleEvent(tick), { awsRequestId: 'tick' });
    expect(holders).toEqual(['tick']);
    const decision = lines.find((l) => l['decision'] === 'schedulePasses');
    expect(decision?.['dueAt']).toHaveLength(5);

    expect(await receive()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const delivered = await receive();
    expect(delivered).toHaveLength(1);
    expect(JSON.parse(delivered[0]?.Body ?? '')).toEqual({
      version: 1,
      kind: 'DisruptionPass',
      cluster: STACK_CLUSTER,
      tickAt: tick.toISOString(),
      dueAt: new Date(tick.getTime() + 10_000).toISOString(),
    });

    const record = { messageId: delivered[0]?.MessageId ?? '', body: delivered[0]?.Body ?? '' };
    expect(await handler({ Records: [record] }, { awsRequestId: 'queued' })).toEqual({
      batchItemFailures: [],
    });
    expect(holders).toEqual(['tick', 'queued']);
  });

  it('cannot be sent by a Lambda whose role does not name the queue', async () => {
    const send = makeDisruptionPassQueue(new SQSClient(awsConfigAs(server, 'provisioner')), queueUrl);
    const request = {
      cluster: STACK_CLUSTER,
      tickAt: new Date().toISOString(),
      dueAt: new Date().toISOString(),
    };
    await expect(send([{ request, delaySeconds: 0 }])).rejects.toThrow(QueueSendError);
    expect(takeDenials()).toEqual([
      expect.objectContaining({ lambda: 'provisioner', call: 'sqs:SendMessageBatch' }),
    ]);
    expect(await receive()).toEqual([]);
  });
});
