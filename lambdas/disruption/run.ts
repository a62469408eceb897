import { randomUUID } from 'node:crypto';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { DisruptionPassResult } from '../../shared/usecases/disruption/controller.ts';
import { isScheduleEvent } from '../common/sqs.ts';

// The disruption Lambda's event handling, apart from the cold-start wiring in handler.ts: the
// disruption schedule runs one pass of the disruption controller (shared/usecases/disruption).

export interface DisruptionDeps {
  readonly logger: Logger;
  /** One disruption pass under the given lease holder (the invocation id). */
  readonly pass: (holder: string) => Promise<DisruptionPassResult>;
}

/**
 * Disruption schedule target: one pass per invocation. Its errors propagate to the schedule's
 * retries; any other event is acknowledged and logged.
 */
export function makeDisruptionHandler(deps: DisruptionDeps) {
  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<DisruptionPassResult | { readonly kind: 'ignored' }> {
    if (isScheduleEvent(event)) return deps.pass(context?.awsRequestId ?? randomUUID());
    deps.logger.warn('event ignored', { why: 'not an EventBridge schedule' });
    return { kind: 'ignored' };
  };
}
