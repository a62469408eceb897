import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { FunctionDefinition, QueueName, ScheduleName } from '../../infra/functions.ts';

// What invokes a Lambda of the stack, played against moto as AWS plays it: an SQS event source
// mapping configured from the function's row (infra/functions.ts), and an EventBridge schedule.

/** A Lambda handler as its trigger calls it. */
export type Invoke = (event: unknown) => Promise<unknown>;

/** The EventBridge event a schedule delivers. */
export const SCHEDULED_EVENT = {
  version: '0',
  source: 'aws.events',
  'detail-type': 'Scheduled Event',
  detail: {},
} as const;

/**
 * Lambda's SQS event source mapping as `row` configures it for `queue`: long-polls the queue,
 * gathers up to `batchSize` messages within the batching window, invokes at most `maxConcurrency`
 * handlers at once, deletes what the handler did not report as failed (the rest reappear after the
 * visibility timeout). `sqs` plays the Lambda service, with the account's own credentials.
 * Returns a function that stops polling and waits for the invocations in flight.
 */
export function startQueueTrigger(options: {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly row: FunctionDefinition;
  readonly queue: QueueName;
  readonly invoke: Invoke;
  /** Seconds a received message stays invisible. @default 120 */
  readonly visibilityTimeoutSeconds?: number;
}): () => Promise<void> {
  const { sqs, queueUrl } = options;
  const mapping = options.row.triggers.find((t) => t.kind === 'queue' && t.queue === options.queue);
  if (mapping?.kind !== 'queue') throw new Error(`${options.row.name} has no ${options.queue} queue trigger`);
  const batchSize = mapping.batchSize;
  const windowMs = mapping.maxBatchingWindow?.toMilliseconds() ?? 0;
  const maxConcurrency = mapping.maxConcurrency ?? 1_000;
  let running = true;
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    while (running) {
      const batch: Message[] = [];
      const windowEnds = Date.now() + windowMs;
      do {
        const page = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(10, batchSize - batch.length),
            WaitTimeSeconds: batch.length === 0 ? 1 : 0,
            VisibilityTimeout: options.visibilityTimeoutSeconds ?? 120,
          }),
        );
        batch.push(...(page.Messages ?? []));
        if (batch.length === 0) break;
        if (batch.length < batchSize && Date.now() < windowEnds) await new Promise((r) => setTimeout(r, 100));
      } while (running && batch.length < batchSize && Date.now() < windowEnds);
      if (batch.length === 0) continue;
      while (inFlight.size >= maxConcurrency) await Promise.race(inFlight);
      const records = batch.map((m) => ({
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
      }));
      const invocation = (async () => {
        const response = (await options.invoke({ Records: records })) as {
          batchItemFailures?: { itemIdentifier: string }[];
        };
        const failed = new Set((response.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        const done = records.filter((r) => !failed.has(r.messageId));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
            }),
          );
        }
      })().finally(() => inFlight.delete(invocation));
      inFlight.add(invocation);
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all(inFlight);
  };
}

/**
 * An EventBridge schedule of `row`: one invocation every `periodMs` (the first after one period),
 * never two at once. Tests compress the stack's minutes into seconds where they say so.
 */
export function startSchedule(options: {
  readonly row: FunctionDefinition;
  readonly schedule: ScheduleName;
  readonly invoke: Invoke;
  readonly periodMs: number;
  /** Told about an invocation that failed (a schedule retries on its own; tests record it). */
  readonly onError?: (error: unknown) => void;
}): () => Promise<void> {
  if (!options.row.triggers.some((t) => t.kind === 'schedule' && t.schedule === options.schedule)) {
    throw new Error(`${options.row.name} is not on the ${options.schedule} schedule`);
  }
  let current: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (current !== undefined) return;
    current = options
      .invoke(SCHEDULED_EVENT)
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        current = undefined;
      });
  }, options.periodMs);
  return async () => {
    clearInterval(timer);
    await current;
  };
}
