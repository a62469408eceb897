import { z } from 'zod';

// The event shapes Lambdas share: an SQS batch and an EventBridge schedule.

export const sqsEvent = z.object({
  Records: z.array(z.object({ messageId: z.string().min(1), body: z.string() }).loose()).min(1),
});

export const scheduleEvent = z
  .object({ 'detail-type': z.literal('Scheduled Event'), source: z.literal('aws.events') })
  .loose();

/** The SQS partial batch response: the messages to deliver again. */
export interface BatchResponse {
  readonly batchItemFailures: readonly { readonly itemIdentifier: string }[];
}
