import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeQueueMessage } from '../../../lambdas/provisioner/run.ts';
import { makeNodeDeletionSender } from '../../../shared/adapters/aws/node-deletion.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { deployStack, STACK_CLUSTER } from '../../harness/aws/stack.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';

// The interruption Lambda telling the provisioner of a NodeClaim it deletes, on moto's SQS: sent to
// the stack's pod-event queue with the interruption role (its synthesized policy checked), and read
// back as the provisioner decodes it.

let server: Moto;
let queueUrl: string;

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  queueUrl = (await deployStack(server)).queueUrls.podEvents;
});

describe('node deletion sender', () => {
  it("puts a NodeClaim's deletion on the provisioner's queue, as the provisioner decodes it", async () => {
    const send = makeNodeDeletionSender({
      sqs: new SQSClient(awsConfigAs(server, 'interruption')),
      queueUrl,
      clusterName: STACK_CLUSTER,
      clock: makeManualClock(new Date('2026-11-27T00:00:00Z')),
    });
    await send({ name: 'default-0a1b2c3d4e', uid: 'uid-claim' });
    const out = await new SQSClient(awsClientConfig(server)).send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(out.Messages).toHaveLength(1);
    expect(decodeQueueMessage(out.Messages?.[0]?.Body ?? '', STACK_CLUSTER)).toMatchObject({
      ok: true,
      message: {
        kind: 'nodeDeletion',
        deletion: { object: 'NodeClaim', name: 'default-0a1b2c3d4e', observedAt: '2026-11-27T00:00:00.000Z' },
      },
    });
  });
});
