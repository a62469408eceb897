import { parseTerminationMessage } from '../../shared/messages/termination-request.ts';
import {
  driveTerminationRequests,
  driveTerminationSweep,
  type TerminationSweepDeps,
} from '../../shared/usecases/termination/driver.ts';
import type { TerminationResult } from '../../shared/usecases/termination/termination.ts';
import { type BatchResponse, isScheduleEvent, parseSqsBatch, processPartialResponse } from '../common/sqs.ts';

// The termination Lambda's event handling, apart from the cold-start wiring in handler.ts: the
// event is parsed here, the drive loop is the use case's (shared/usecases/termination/driver.ts).

export type TerminationDeps = TerminationSweepDeps;

export type TerminationHandlerResult =
  | BatchResponse
  | { readonly kind: 'swept'; readonly results: readonly TerminationResult[] }
  | { readonly kind: 'ignored' };

/**
 * Termination-queue and schedule target. A queue message names one NodeClaim: passes run until it
 * is done or the budget is spent, then a delayed message carries the rest to a later invocation
 * and the current one is acknowledged; malformed messages and NodeClaims whose passes fail are
 * batch item failures. The schedule sweeps every terminating NodeClaim within the same budget,
 * without starting message chains; its errors propagate to the schedule's retries.
 */
export function makeTerminationHandler(deps: TerminationDeps) {
  const { logger } = deps;
  return async function handler(event: unknown): Promise<TerminationHandlerResult> {
    const batch = parseSqsBatch(event);
    if (batch !== undefined) {
      return processPartialResponse(batch, {
        logger,
        decode: parseTerminationMessage,
        rejected: 'termination message rejected',
        handle: (items) => driveTerminationRequests(deps, items),
      });
    }
    if (isScheduleEvent(event)) return { kind: 'swept', results: await driveTerminationSweep(deps) };
    logger.warn('event ignored', { why: 'neither an SQS batch nor an EventBridge schedule' });
    return { kind: 'ignored' };
  };
}
