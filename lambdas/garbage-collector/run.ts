import { FlotillaError } from '../../shared/core/errors.ts';
import type { GarbageCollectionResult } from '../../shared/usecases/garbage-collection/garbage-collection.ts';
import type { GarbageCollector } from '../../shared/usecases/garbage-collection/setup.ts';
import type { NodeRepairResult } from '../../shared/usecases/node-repair/repair.ts';
import { isScheduleEvent } from '../common/sqs.ts';

// The garbage collector Lambda's event handling, apart from the cold-start wiring in handler.ts:
// the garbage-collection schedule runs one pass (shared/usecases/garbage-collection/garbage-collection.ts), then, when
// node repair is on, one repair pass (shared/usecases/node-repair/repair.ts).

/** Some steps of a garbage-collection pass failed; the others were done and the next pass retries. */
export class GarbageCollectionStepsFailedError extends FlotillaError {
  readonly code = 'GarbageCollectionStepsFailed';

  constructor(readonly failed: readonly { readonly step: string; readonly error: unknown }[]) {
    super(
      `${failed.length} garbage-collection steps failed (${failed
        .slice(0, 5)
        .map((f) => f.step)
        .join(', ')}); the next pass retries them`,
      { cause: failed[0]?.error },
    );
  }
}

/** The passes one invocation runs (setUpGarbageCollector). */
export type GarbageCollectorDeps = GarbageCollector;

/** What one invocation did: the garbage-collection pass and, when on, the repair pass. */
export interface GarbageCollectorResult extends GarbageCollectionResult {
  readonly repair?: NodeRepairResult;
}

/**
 * Garbage-collection schedule target: one pass per invocation, then the repair pass when wired.
 * When steps of either failed, it throws after both (so the function's error metric and alarm see it); any other event is acknowledged and
 * logged.
 */
export function makeGarbageCollectorHandler(deps: GarbageCollectorDeps) {
  return async function handler(
    event: unknown,
  ): Promise<GarbageCollectorResult | { readonly kind: 'ignored' }> {
    if (!isScheduleEvent(event)) {
      deps.logger.warn('event ignored', { why: 'not an EventBridge schedule' });
      return { kind: 'ignored' };
    }
    const result = await deps.pass();
    const repair = deps.repair === undefined ? undefined : await deps.repair();
    const failed = [...result.failed, ...(repair?.failed ?? [])];
    if (failed.length > 0) throw new GarbageCollectionStepsFailedError(failed);
    return repair === undefined ? result : { ...result, repair };
  };
}
