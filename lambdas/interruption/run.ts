import { parseInterruptionEvent } from '../../shared/messages/interruption-event.ts';
import {
  handleInterruptionBatch,
  type InterruptionDriverDeps,
} from '../../shared/usecases/interruption/driver.ts';
import { type BatchResponse, parseSqsBatch, processPartialResponse } from '../common/sqs.ts';

// The interruption Lambda's event handling, apart from the cold-start wiring in handler.ts so it
// runs in tests against the real adapters. The batch handling is the use case's
// (shared/usecases/interruption/driver.ts).

export type InterruptionDeps = InterruptionDriverDeps;

/**
 * Interruption-queue target. Each record is one EventBridge event: malformed ones are reported as
 * batch item failures (SQS redelivers them and, after maxReceiveCount, moves them to the
 * dead-letter queue) without holding back the rest; unknown kinds are acknowledged and logged; an
 * event delivered twice in a batch is handled once; a record whose handling fails is retried alone.
 */
export function makeInterruptionHandler(deps: InterruptionDeps) {
  const { logger } = deps;
  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<BatchResponse> {
    const batch = parseSqsBatch(event);
    if (batch === undefined) {
      logger.warn('interruption event ignored', { reason: 'not an SQS batch' });
      return { batchItemFailures: [] };
    }
    return processPartialResponse(batch, {
      logger,
      decode: parseInterruptionEvent,
      rejected: 'interruption message rejected',
      handle: (items) => handleInterruptionBatch(deps, items, context?.awsRequestId),
    });
  };
}
