import { FlotillaError } from '../../shared/core/errors.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { GarbageCollectionResult } from '../../shared/usecases/garbage-collection.ts';
import { isScheduleEvent } from '../common/sqs.ts';

// The garbage collector Lambda's event handling, apart from the cold-start wiring in handler.ts:
// the garbage-collection schedule runs one pass (shared/usecases/garbage-collection.ts).

/** Some steps of a garbage-collection pass failed; the others were done and the next pass retries. */
export class GarbageCollectionStepsFailedError extends FlotillaError {
  readonly code = 'GarbageCollectionStepsFailed';

  constructor(readonly failed: GarbageCollectionResult['failed']) {
    super(
      `${failed.length} garbage-collection steps failed (${failed
        .slice(0, 5)
        .map((f) => f.step)
        .join(', ')}); the next pass retries them`,
      { cause: failed[0]?.error },
    );
  }
}

export interface GarbageCollectorDeps {
  readonly logger: Logger;
  readonly pass: () => Promise<GarbageCollectionResult>;
}

/**
 * Garbage-collection schedule target: one pass per invocation. When steps failed, it throws after
 * the pass (so the function's error metric and alarm see it); any other event is acknowledged and
 * logged.
 */
export function makeGarbageCollectorHandler(deps: GarbageCollectorDeps) {
  return async function handler(
    event: unknown,
  ): Promise<GarbageCollectionResult | { readonly kind: 'ignored' }> {
    if (!isScheduleEvent(event)) {
      deps.logger.warn('event ignored', { why: 'not an EventBridge schedule' });
      return { kind: 'ignored' };
    }
    const result = await deps.pass();
    if (result.failed.length > 0) throw new GarbageCollectionStepsFailedError(result.failed);
    return result;
  };
}
