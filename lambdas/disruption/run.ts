import { randomUUID } from 'node:crypto';
import type { DelayedPass } from '../../shared/adapters/aws/disruption-passes.ts';
import { parseDisruptionPassMessage } from '../../shared/messages/disruption-pass.ts';
import type { Clock } from '../../shared/ports/clock.ts';
import { writeDecision } from '../../shared/usecases/decisions/decision.ts';
import { passesBetweenTicks } from '../../shared/usecases/disruption/between-ticks.ts';
import type { DisruptionPassResult } from '../../shared/usecases/disruption/controller.ts';
import type { Disruption } from '../../shared/usecases/disruption/setup.ts';
import { type BatchResponse, isScheduleEvent, parseSqsBatch, processPartialResponse } from '../common/sqs.ts';

// The disruption Lambda's event handling, apart from the cold-start wiring in handler.ts: the
// disruption schedule runs one pass of the disruption controller (shared/usecases/disruption) and,
// when passes are to run more often than the schedule fires, first asks for the passes before its
// next tick (delayed messages on the disruption queue), each of which runs one pass too.

/** The disruption pass (setUpDisruption) and what the Lambda's events add. */
export interface DisruptionDeps extends Disruption {
  readonly clusterName: string;
  /** Passes between the schedule's ticks. Absent: a pass per tick only. */
  readonly between?: {
    readonly intervalSeconds: number;
    readonly send: (passes: readonly DelayedPass[]) => Promise<void>;
    readonly clock: Clock;
  };
}

/**
 * Disruption schedule and disruption queue target: one pass per invocation. A schedule tick first
 * sends the passes due before the next tick (when it cannot, it logs why and still runs its pass).
 * A pass's errors propagate: to the schedule's retries, or, for a queued pass, as its message's
 * failure (it goes to the dead-letter queue; the next tick runs a pass anyway). Any other event is
 * acknowledged and logged.
 */
export function makeDisruptionHandler(deps: DisruptionDeps) {
  const { logger } = deps;
  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<DisruptionPassResult | BatchResponse | { readonly kind: 'ignored' }> {
    const holder = context?.awsRequestId ?? randomUUID();
    if (isScheduleEvent(event)) {
      if (deps.between !== undefined) await askForPasses(deps, deps.between, event);
      return deps.pass(holder);
    }
    const batch = parseSqsBatch(event);
    if (batch !== undefined) {
      return processPartialResponse(batch, {
        logger,
        decode: (body) => parseDisruptionPassMessage(body, deps.clusterName),
        rejected: 'disruption pass message rejected',
        // However many messages came together, one pass serves them all.
        handle: async () => {
          await deps.pass(holder);
          return { failed: [] };
        },
      });
    }
    logger.warn('event ignored', { why: 'neither the disruption schedule nor the disruption queue' });
    return { kind: 'ignored' };
  };
}

async function askForPasses(
  deps: DisruptionDeps,
  between: NonNullable<DisruptionDeps['between']>,
  event: unknown,
): Promise<void> {
  const nowMs = between.clock.now().getTime();
  const fired = Date.parse(String((event as { time?: unknown }).time));
  const tickAtMs = Number.isNaN(fired) ? nowMs : fired;
  const passes = passesBetweenTicks(between.intervalSeconds, tickAtMs, nowMs);
  if (passes.length === 0) return;
  const tickAt = new Date(tickAtMs).toISOString();
  const delayed = passes.map((p) => ({
    request: { cluster: deps.clusterName, tickAt, dueAt: new Date(p.dueAtMs).toISOString() },
    delaySeconds: p.delaySeconds,
  }));
  const dueAt = delayed.map((d) => d.request.dueAt);
  try {
    await between.send(delayed);
  } catch (error) {
    deps.logger.error('disruption passes not scheduled', {
      error,
      dueAt,
      fallback: 'the next schedule tick',
    });
    return;
  }
  writeDecision(deps, {
    kind: 'schedulePasses',
    reason: `a pass every ${between.intervalSeconds} s; the schedule fires once a minute`,
    intervalSeconds: between.intervalSeconds,
    tickAt,
    dueAt,
  });
}
