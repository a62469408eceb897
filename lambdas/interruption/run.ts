import {
  type InterruptionMessage,
  parseInterruptionEvent,
} from '../../shared/messages/interruption-event.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { NodeClaimIndex } from '../../shared/usecases/interruption.ts';
import { type BatchResponse, sqsEvent } from '../common/sqs.ts';

// The interruption Lambda's event handling, apart from the cold-start wiring in handler.ts so it
// runs in tests against the real adapters.

export interface InterruptionDeps {
  readonly logger: Logger;
  /** Reads the NodeClaims once per batch. */
  readonly indexNodeClaims: () => Promise<NodeClaimIndex>;
  /** Acts on one parsed event. */
  readonly handle: (message: InterruptionMessage, claims: NodeClaimIndex) => Promise<unknown>;
}

/**
 * Interruption-queue target. Each record is one EventBridge event: malformed ones are reported as
 * batch item failures (SQS redelivers them and, after maxReceiveCount, moves them to the
 * dead-letter queue) without holding back the rest; unknown kinds are acknowledged and logged; a
 * record whose handling fails is retried alone.
 */
export function makeInterruptionHandler(deps: InterruptionDeps) {
  const { logger } = deps;
  return async function handler(event: unknown): Promise<BatchResponse> {
    const batch = sqsEvent.safeParse(event);
    if (!batch.success) {
      logger.warn('interruption event ignored', { reason: 'not an SQS batch' });
      return { batchItemFailures: [] };
    }
    const failures: { itemIdentifier: string }[] = [];
    const valid: { messageId: string; message: InterruptionMessage }[] = [];
    for (const record of batch.data.Records) {
      const parsed = parseInterruptionEvent(record.body);
      if (parsed.ok) valid.push({ messageId: record.messageId, message: parsed.message });
      else {
        logger.warn('interruption message rejected', {
          messageId: record.messageId,
          problem: parsed.problem,
        });
        failures.push({ itemIdentifier: record.messageId });
      }
    }
    if (valid.length === 0) return { batchItemFailures: failures };

    let claims: NodeClaimIndex;
    try {
      claims = await deps.indexNodeClaims();
    } catch (error) {
      logger.error('interruption batch failed', {
        error,
        reason: 'reading NodeClaims failed',
        messages: valid.length,
      });
      return { batchItemFailures: [...failures, ...valid.map((v) => ({ itemIdentifier: v.messageId }))] };
    }
    const seen = new Set<string>();
    for (const { messageId, message } of valid) {
      // EventBridge delivers at least once: the same event twice in a batch is handled once.
      if (seen.has(message.eventId)) {
        logger.info('interruption duplicate', { messageId, eventId: message.eventId, kind: message.kind });
        continue;
      }
      seen.add(message.eventId);
      try {
        await deps.handle(message, claims);
      } catch (error) {
        logger.error('interruption failed', {
          error,
          messageId,
          eventId: message.eventId,
          kind: message.kind,
          instanceIds: message.instanceIds,
        });
        failures.push({ itemIdentifier: messageId });
      }
    }
    return { batchItemFailures: failures };
  };
}
