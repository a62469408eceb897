import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { QueueSendError } from '../../ports/errors.ts';

export { QueueSendError };

import type { TerminationQueue, TerminationRequest } from '../../ports/work-queue.ts';

/** The longest delay SQS gives one message. */
export const MAX_DELAY_SECONDS = 900;

const message = z.object({ version: z.literal(1), nodeClaim: z.string().min(1).max(253) }).strict();

/** The message body of a termination request (version 1). */
export function toTerminationMessage(request: TerminationRequest): string {
  return JSON.stringify({ version: 1, nodeClaim: request.nodeClaim });
}

/** Parses a termination queue message body. */
export function parseTerminationMessage(
  body: string,
):
  | { readonly ok: true; readonly request: TerminationRequest }
  | { readonly ok: false; readonly problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `termination message is not JSON: ${(error as Error).message}` };
  }
  const parsed = message.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      problem: `termination message: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  }
  return { ok: true, request: { nodeClaim: parsed.data.nodeClaim } };
}

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
          `sending the termination request of nodeClaim "${request.nodeClaim}" to ${queueUrl} failed: ${(error as Error).message}; the termination sweep picks the NodeClaim up on its schedule`,
          { cause: error },
        );
      }
    },
  };
}
