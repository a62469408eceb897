// Disruption passes more often than the schedule fires. EventBridge runs a rule at most once a
// minute; a pass every `intervalSeconds` (a divisor of 60 below it) comes from the passes each tick
// asks for between itself and the next one, as delayed messages to the disruption Lambda. Pure:
// the handler sends what this returns.

import { passIntervalProblem, SCHEDULE_TICK_SECONDS } from '../../messages/disruption-pass.ts';

/** One pass a tick asks for. */
export interface PassBetweenTicks {
  /** When it is due (epoch ms). */
  readonly dueAtMs: number;
  /** How long SQS holds its message back, in whole seconds (1–59). */
  readonly delaySeconds: number;
}

/**
 * The passes the tick that fired at `tickAtMs` asks for, every `intervalSeconds` until the next
 * tick; none when the interval is a minute or more. A pass due within a second of `nowMs` (or
 * already past, when the invocation started late) is left out: the tick's own pass covers it.
 */
export function passesBetweenTicks(
  intervalSeconds: number,
  tickAtMs: number,
  nowMs: number,
): readonly PassBetweenTicks[] {
  if (intervalSeconds >= SCHEDULE_TICK_SECONDS || passIntervalProblem(intervalSeconds) !== undefined) {
    return [];
  }
  const passes: PassBetweenTicks[] = [];
  for (let at = intervalSeconds; at < SCHEDULE_TICK_SECONDS; at += intervalSeconds) {
    const dueAtMs = tickAtMs + at * 1000;
    const delaySeconds = Math.round((dueAtMs - nowMs) / 1000);
    if (delaySeconds < 1) continue;
    passes.push({ dueAtMs, delaySeconds: Math.min(delaySeconds, SCHEDULE_TICK_SECONDS - 1) });
  }
  return passes;
}
