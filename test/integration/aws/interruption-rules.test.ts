import {
  EventBridgeClient,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { Stack } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseInterruptionEvent } from '../../../shared/messages/interruption-event.ts';
import { INTERRUPTION_KINDS } from '../../../shared/messages/interruption-kinds.ts';
import {
  type EventJson,
  fixtureFor,
  interruptionSamples,
} from '../../fixtures/events/interruption-samples.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { makeStack } from '../../infra/stacks.ts';

// The interruption rules exactly as the stack synthesizes them, on moto's EventBridge, each with
// its own queue: a sample event of every kind in the table reaches its own rule's queue only, and
// what arrives parses back to that kind through the codec; an event outside every kind's detail
// filter reaches no queue.

let server: Moto;
let sqs: SQSClient;
let bus: EventBridgeClient;
/** Rule construct id (`SpotInterruptionRule`, …) → the URL of the queue its moto twin targets. */
const queueOf = new Map<string, string>();
/** Rule construct id → the synthesized EventPattern. */
const patternOf = new Map<string, { detail?: Record<string, string[]> }>();

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  sqs = new SQSClient(awsClientConfig(server));
  bus = new EventBridgeClient(awsClientConfig(server));
  const { stack, cluster, template } = makeStack();
  const resources = template.toJSON()['Resources'] as Record<
    string,
    { Properties: { EventPattern?: Record<string, unknown> } }
  >;
  for (const rule of cluster.interruptionRules) {
    const logicalId = Stack.of(rule).getLogicalId(rule.node.defaultChild as events.CfnRule);
    const pattern = resources[stack.resolve(logicalId) as string]?.Properties.EventPattern;
    if (pattern === undefined) throw new Error(`rule ${rule.node.id} has no EventPattern in the template`);
    const id = rule.node.id;
    const created = await sqs.send(new CreateQueueCommand({ QueueName: `rules-${id}` }));
    const queueUrl = created.QueueUrl ?? '';
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    await bus.send(new PutRuleCommand({ Name: id, EventPattern: JSON.stringify(pattern) }));
    await bus.send(
      new PutTargetsCommand({
        Rule: id,
        Targets: [{ Id: 'queue', Arn: attributes.Attributes?.['QueueArn'] }],
      }),
    );
    queueOf.set(id, queueUrl);
    patternOf.set(id, pattern);
  }
});

/** Puts the event on the bus and returns what each rule's queue received, by rule id. */
async function deliver(event: EventJson): Promise<Map<string, Message[]>> {
  const put = await bus.send(
    new PutEventsCommand({
      Entries: [
        {
          Source: event.source,
          DetailType: event['detail-type'],
          Detail: JSON.stringify(event.detail),
          Resources: (event['resources'] as string[] | undefined) ?? [],
        },
      ],
    }),
  );
  expect(put.FailedEntryCount).toBe(0);
  const received = new Map<string, Message[]>();
  for (const [id, queueUrl] of queueOf) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) continue;
    received.set(id, Messages);
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
  return received;
}

const samples = INTERRUPTION_KINDS.flatMap((row) =>
  interruptionSamples(row).map((sample) => ({ ...sample, row })),
);

describe('the synthesized interruption rules on EventBridge', () => {
  it('are one per rule of the table', () => {
    expect([...queueOf.keys()].sort()).toEqual(
      [...new Set(INTERRUPTION_KINDS.map((r) => `${r.rule}Rule`))].sort(),
    );
  });

  it.each(samples)(
    'deliver a sample of $label to its rule only, and it parses back to its kind',
    async ({ event, row }) => {
      const received = await deliver(event);
      expect([...received.keys()]).toEqual([`${row.rule}Rule`]);
      const [message] = received.get(`${row.rule}Rule`) ?? [];
      expect(parseInterruptionEvent(message?.Body ?? '')).toMatchObject({
        ok: true,
        message: { kind: row.kind, detailType: row.detailType, source: row.source },
      });
    },
  );

  it('deliver nothing outside the detail filters, which the codec would call a noop', async () => {
    const filtered = [...patternOf].filter(([, p]) => p.detail !== undefined);
    expect(filtered.length).toBeGreaterThan(0);
    for (const [id, pattern] of filtered) {
      const row = INTERRUPTION_KINDS.find((r) => `${r.rule}Rule` === id);
      if (row === undefined) throw new Error(`rule ${id} has no row`);
      const fixture = fixtureFor(row.source, row.detailType);
      for (const field of Object.keys(pattern.detail ?? {})) {
        const event = { ...fixture, detail: { ...fixture.detail, [field]: 'not-acted-on' } };
        expect(await deliver(event), `${id} with ${field}=not-acted-on`).toEqual(new Map());
        expect(parseInterruptionEvent(JSON.stringify(event))).toMatchObject({
          ok: true,
          message: { kind: 'noop' },
        });
      }
    }
  });
});
