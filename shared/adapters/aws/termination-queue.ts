import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { toTerminationMessage } from '../../messages/termination-request.ts';
import { QueueSendError } from '../../ports/errors.ts';
import { describeTerminationRequest, type TerminationQueue } from '../../ports/work-queue.ts';

export { QueueSendError };

/** The longest delay SQS gives one message. */
export const MAX_DELAY_SECONDS = 900;

/** The termination queue over SQS: a delayed SendMessage per request. */
export function makeSqsTerminationQueue(sqs: SQSClient, queueUrl: string): TerminationQueue {
  return {
    async enqueue(request, delaySeconds) {
      const delay = Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.ceil(delaySeconds)));
      try {
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: toTerminationMessage(request),
            DelaySeconds: delay,
          }),
        );
      } catch (error) {
        throw new QueueSendError(
          `sending the termination request of ${describeTerminationRequest(request)} to ${queueUrl} failed: ${(error as Error).message}; the termination sweep picks it up on its schedule`,
          { cause: error },
        );
      }
    },
  };
}
