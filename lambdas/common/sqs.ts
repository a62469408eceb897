import { z } from 'zod';
import type { Decoded } from '../../shared/messages/decoded.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { BatchItem, BatchOutcome } from '../../shared/usecases/state/batch.ts';

// The event shapes Lambdas share (an SQS batch, an EventBridge schedule) and the SQS partial batch
// kit, in the spirit of Powertools' processPartialResponse: every record is decoded with a message
// codec; a malformed one is logged with its problem and reported as a batch item failure without
// holding back the rest; the decoded ones go to a use-case driver, which reports the ids that
// failed. SQS delivers the failures again and, after maxReceiveCount, moves them to the
// dead-letter queue.

const sqsEvent = z.object({
  Records: z.array(z.object({ messageId: z.string().min(1), body: z.string() }).loose()).min(1),
});

const scheduleEvent = z
  .object({ 'detail-type': z.literal('Scheduled Event'), source: z.literal('aws.events') })
  .loose();

/** An SQS batch as Lambda's event source mapping delivers it (the fields Flotilla reads). */
export type SqsBatch = z.infer<typeof sqsEvent>;

/** The SQS partial batch response: the messages to deliver again. */
export interface BatchResponse {
  readonly batchItemFailures: readonly { readonly itemIdentifier: string }[];
}

/** The SQS batch in `event`, or undefined when the event is something else. */
export function parseSqsBatch(event: unknown): SqsBatch | undefined {
  const parsed = sqsEvent.safeParse(event);
  return parsed.success ? parsed.data : undefined;
}

/** Whether `event` is an EventBridge schedule's invocation. */
export function isScheduleEvent(event: unknown): boolean {
  return scheduleEvent.safeParse(event).success;
}

export interface PartialBatchSpec<T> {
  readonly logger: Logger;
  /** Decodes one record's body (a codec from shared/messages, or one built on it). */
  readonly decode: (body: string) => Decoded<T>;
  /** The fixed log message of a record that does not decode, e.g. `termination message rejected`. */
  readonly rejected: string;
  /** Handles the decoded records (a use-case driver) and reports those to deliver again. */
  readonly handle: (items: readonly BatchItem<T>[]) => Promise<BatchOutcome>;
}

/**
 * Processes one SQS batch: decodes every record, rejects the malformed ones (logged as
 * `spec.rejected` with messageId and problem), hands the rest to `spec.handle` and returns the
 * partial batch response, failures in record order. The handler reports its own failures; should
 * it throw all the same, every decoded record is delivered again.
 */
export async function processPartialResponse<T>(
  batch: SqsBatch,
  spec: PartialBatchSpec<T>,
): Promise<BatchResponse> {
  const { logger } = spec;
  const failed = new Set<string>();
  const items: BatchItem<T>[] = [];
  for (const record of batch.Records) {
    const decoded = spec.decode(record.body);
    if (decoded.ok) items.push({ id: record.messageId, message: decoded.message });
    else {
      logger.warn(spec.rejected, { messageId: record.messageId, problem: decoded.problem });
      failed.add(record.messageId);
    }
  }
  if (items.length > 0) {
    try {
      for (const id of (await spec.handle(items)).failed) failed.add(id);
    } catch (error) {
      logger.error('batch failed', { error, messages: items.length });
      for (const item of items) failed.add(item.id);
    }
  }
  return {
    batchItemFailures: batch.Records.filter((r) => failed.has(r.messageId)).map((r) => ({
      itemIdentifier: r.messageId,
    })),
  };
}
