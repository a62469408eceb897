/**
 * Time as a parameter: every decision that depends on "now" (ICE back-offs, TTLs, condition
 * transition times) reads it from a Clock, so tests and the simulator can move time by hand.
 */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The wall clock, for production wiring. */
export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to: for tests and the simulator's virtual time. */
export interface ManualClock extends Clock {
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void;
  /** Jumps to `instant`. */
  set(instant: Date): void;
}

export function makeManualClock(start: Date = new Date('2026-01-01T00:00:00Z')): ManualClock {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms) => {
      current += ms;
    },
    set: (instant) => {
      current = instant.getTime();
    },
  };
}
