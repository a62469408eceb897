import { parseInterruptionEvent } from '../../shared/messages/interruption-event.ts';
import {
  handleInterruptionBatch,
  type InterruptionDriverDeps,
} from '../../shared/usecases/interruption/driver.ts';
import type { InstanceStatusPollResult } from '../../shared/usecases/interruption/instance-status.ts';
import { type BatchResponse, isScheduleEvent, parseSqsBatch, processPartialResponse } from '../common/sqs.ts';

// The interruption Lambda's event handling, apart from the cold-start wiring in handler.ts so it
// runs in tests against the real adapters. The batch handling is the use case's
// (shared/usecases/interruption/driver.ts).

export type InterruptionDeps = InterruptionDriverDeps;

/**
 * Interruption-queue and instance-status schedule target. Each queue record is one EventBridge
 * event: malformed ones are reported as batch item failures (SQS redelivers them and, after
 * maxReceiveCount, moves them to the dead-letter queue) without holding back the rest; unknown kinds
 * are acknowledged and logged; an event delivered twice in a batch is handled once; a record whose
 * handling fails is retried alone. The schedule runs one instance status poll; its errors
 * propagate to the schedule's retries.
 */
export function makeInterruptionHandler(deps: InterruptionDeps) {
  const { logger } = deps;
  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<BatchResponse | ({ readonly kind: 'polled' } & InstanceStatusPollResult)> {
    const batch = parseSqsBatch(event);
    if (batch === undefined) {
      if (isScheduleEvent(event) && deps.pollInstanceStatus !== undefined) {
        return { kind: 'polled', ...(await deps.pollInstanceStatus()) };
      }
      logger.warn('interruption event ignored', {
        reason: 'neither an SQS batch nor the instance status schedule',
      });
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
