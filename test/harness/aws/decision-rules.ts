import { EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { awsClientConfig, type Moto } from '../moto.ts';
import { STACK_NAMES } from './stack.ts';

// A rule on the stack's decision bus as a team would add one, with the account's own credentials:
// what it matches goes to a queue of its own, read back as the events EventBridge delivered.

/** The queue a rule with `pattern` on the stack's decision bus delivers to; `read` drains it. */
export async function decisionRule(
  server: Moto,
  name: string,
  pattern: Record<string, unknown>,
): Promise<{ read(): Promise<Record<string, unknown>[]> }> {
  const config = awsClientConfig(server);
  const sqs = new SQSClient(config);
  const events = new EventBridgeClient(config);
  const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
  const attributes = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  await events.send(
    new PutRuleCommand({
      Name: name,
      EventBusName: STACK_NAMES.decisionBus,
      EventPattern: JSON.stringify(pattern),
    }),
  );
  await events.send(
    new PutTargetsCommand({
      Rule: name,
      EventBusName: STACK_NAMES.decisionBus,
      Targets: [{ Id: 'queue', Arn: attributes.Attributes?.['QueueArn'] }],
    }),
  );
  return {
    async read() {
      const out: Message[] = [];
      for (;;) {
        const got = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
        );
        if ((got.Messages ?? []).length === 0) break;
        out.push(...(got.Messages ?? []));
      }
      return out.map((m) => JSON.parse(m.Body ?? '{}') as Record<string, unknown>);
    },
  };
}
