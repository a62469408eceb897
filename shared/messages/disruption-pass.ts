import { z } from 'zod';
import type { Decoded } from './decoded.ts';

// The disruption queue's message: a disruption pass asked for between two ticks of the disruption
// schedule. The disruption Lambda sends it to itself, delayed, when its schedule fires, and runs
// one pass for it when SQS delivers it. The intervals between passes Flotilla runs are part of the
// contract: the stack checks `disruptionInterval` with them, the Lambda its environment.

/** Seconds between the disruption schedule's ticks when the interval is under a minute. */
export const SCHEDULE_TICK_SECONDS = 60;

/** The shortest interval between passes: a pass at 2,000 nodes decides in about 5 s. */
export const MIN_PASS_INTERVAL_SECONDS = 10;

/**
 * Whether passes every `intervalSeconds` need passes between the schedule's ticks: a whole number of
 * seconds from MIN_PASS_INTERVAL_SECONDS that divides a minute evenly and is less than it. Whole
 * minutes are the schedule's own rate and need none.
 * @returns the problem with `intervalSeconds`, or undefined when it is one Flotilla runs.
 */
export function passIntervalProblem(intervalSeconds: number): string | undefined {
  if (!Number.isInteger(intervalSeconds) || intervalSeconds <= 0) {
    return `${intervalSeconds} s is not a whole number of seconds`;
  }
  if (intervalSeconds >= SCHEDULE_TICK_SECONDS) {
    return intervalSeconds % SCHEDULE_TICK_SECONDS === 0
      ? undefined
      : `${intervalSeconds} s is over a minute but not whole minutes (EventBridge's rates)`;
  }
  if (intervalSeconds < MIN_PASS_INTERVAL_SECONDS) {
    return `${intervalSeconds} s is shorter than ${MIN_PASS_INTERVAL_SECONDS} s`;
  }
  if (SCHEDULE_TICK_SECONDS % intervalSeconds !== 0) {
    return `${intervalSeconds} s does not divide a minute (10, 12, 15, 20 or 30 s do)`;
  }
  return undefined;
}

/** One pass asked for at `dueAt`, by the schedule tick of `tickAt`. */
export interface DisruptionPassRequest {
  readonly cluster: string;
  /** When the schedule fired (ISO 8601). */
  readonly tickAt: string;
  /** When the pass is due (ISO 8601). */
  readonly dueAt: string;
}

const isoTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not a time');
const message = z
  .object({
    version: z.literal(1),
    kind: z.literal('DisruptionPass'),
    cluster: z.string().min(1).max(100),
    tickAt: isoTime,
    dueAt: isoTime,
  })
  .strict();

/** The message body of a disruption pass request (version 1). */
export function toDisruptionPassMessage(request: DisruptionPassRequest): string {
  return JSON.stringify({ version: 1, kind: 'DisruptionPass', ...request });
}

/**
 * Parses a disruption queue message body; a body of another shape, or one for another cluster than
 * `cluster`, is a typed failure, not a throw.
 */
export function parseDisruptionPassMessage(body: string, cluster: string): Decoded<DisruptionPassRequest> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `disruption pass message is not JSON: ${(error as Error).message}` };
  }
  const parsed = message.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      problem: `disruption pass message: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  }
  const { version: _version, kind: _kind, ...request } = parsed.data;
  if (request.cluster !== cluster) {
    return {
      ok: false,
      problem: `disruption pass message is for cluster "${request.cluster}", not "${cluster}"`,
    };
  }
  return { ok: true, message: request };
}
