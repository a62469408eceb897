import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DisruptionPassRequest, toDisruptionPassMessage } from '../../messages/disruption-pass.ts';
import { QueueSendError } from '../../ports/errors.ts';
import { MAX_DELAY_SECONDS } from './termination-queue.ts';

/** One delayed pass for the disruption queue. */
export interface DelayedPass {
  readonly request: DisruptionPassRequest;
  /** 0 to MAX_DELAY_SECONDS (SQS's range). */
  readonly delaySeconds: number;
}

/**
 * The disruption queue over SQS: the passes a schedule tick asks for, sent in batches of ten
 * (SendMessageBatch; its permission is sqs:SendMessage).
 * @returns a function that sends them; it throws QueueSendError naming the passes SQS refused.
 */
export function makeDisruptionPassQueue(sqs: SQSClient, queueUrl: string) {
  return async (passes: readonly DelayedPass[]): Promise<void> => {
    for (let start = 0; start < passes.length; start += 10) {
      const chunk = passes.slice(start, start + 10);
      let failed: readonly { readonly Id?: string | undefined; readonly Message?: string | undefined }[];
      try {
        const out = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((pass, i) => ({
              Id: String(start + i),
              MessageBody: toDisruptionPassMessage(pass.request),
              DelaySeconds: Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.round(pass.delaySeconds))),
            })),
          }),
        );
        failed = out.Failed ?? [];
      } catch (error) {
        throw new QueueSendError(
          `sending ${chunk.length} disruption passes to ${queueUrl} failed: ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (failed.length > 0) {
        const due = failed.map((f) => passes[Number(f.Id)]?.request.dueAt ?? `entry ${f.Id}`);
        throw new QueueSendError(
          `${queueUrl} refused the disruption passes due at ${due.join(', ')}: ${failed[0]?.Message ?? 'no reason given'}`,
        );
      }
    }
  };
}
