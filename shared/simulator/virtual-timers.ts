import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ManualClock } from '../ports/clock.ts';

// Calls that take time in the simulated world (an EC2 CreateFleet), on the virtual clock: a call
// waits on a timer, and while a controller's run has nothing left to do but wait, the clock moves
// to the earliest timer and lets its calls go on. Calls made at once wait together, as they would
// on the wire, so launching in parallel shows in virtual time as it would in real time.

/** Turns of the event loop a driven run may take with no timer to wait on before it is stuck. */
const MAX_IDLE_TURNS = 100_000;

export interface VirtualTimers {
  /** Resolves once the virtual clock has moved `ms` on (at once for 0 or less). */
  delay(ms: number): Promise<void>;
  /** Runs `work` to its end, moving the clock to each timer it waits on. */
  drive<T>(work: Promise<T>): Promise<T>;
}

interface Timer {
  readonly atMs: number;
  readonly seq: number;
  readonly resolve: () => void;
}

export function makeVirtualTimers(clock: ManualClock): VirtualTimers {
  const timers: Timer[] = [];
  let seq = 0;
  return {
    delay(ms) {
      if (ms <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        timers.push({ atMs: clock.now().getTime() + ms, seq: seq++, resolve });
      });
    },
    async drive(work) {
      let settled = false;
      const done = work.finally(() => {
        settled = true;
      });
      // Nothing the simulator awaits is real I/O: once a turn of the event loop has passed, every
      // call that can go on has, and what is left waits on timers.
      done.catch(() => undefined);
      let idleTurns = 0;
      while (!settled) {
        await nextTurn();
        if (settled) break;
        if (timers.length === 0) {
          // Nothing in the simulated world waits this long on anything but virtual time.
          if (++idleTurns > MAX_IDLE_TURNS) {
            throw new Error(
              `simulated work made no progress in ${MAX_IDLE_TURNS} turns and waits on no virtual timer`,
            );
          }
          continue;
        }
        idleTurns = 0;
        timers.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
        const atMs = (timers[0] as Timer).atMs;
        // Time never runs backwards: batching may have carried the clock past a timer.
        if (atMs > clock.now().getTime()) clock.set(new Date(atMs));
        while (timers.length > 0 && (timers[0] as Timer).atMs <= atMs) (timers.shift() as Timer).resolve();
      }
      return done;
    },
  };
}
