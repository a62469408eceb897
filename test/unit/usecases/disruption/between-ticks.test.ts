import { describe, expect, it } from 'vitest';
import { passIntervalProblem } from '../../../../shared/messages/disruption-pass.ts';
import { passesBetweenTicks } from '../../../../shared/usecases/disruption/between-ticks.ts';

// Passes between the disruption schedule's once-a-minute ticks: which intervals Flotilla runs, and
// the delayed passes one tick asks for.

const tick = Date.parse('2026-11-26T10:00:00Z');

describe('passIntervalProblem', () => {
  it('accepts whole minutes and the divisors of a minute from 10 s', () => {
    for (const seconds of [10, 12, 15, 20, 30, 60, 120, 300]) {
      expect(passIntervalProblem(seconds), `${seconds} s`).toBeUndefined();
    }
  });

  it('names the problem with any other interval', () => {
    expect(passIntervalProblem(5)).toBe('5 s is shorter than 10 s');
    expect(passIntervalProblem(25)).toBe('25 s does not divide a minute (10, 12, 15, 20 or 30 s do)');
    expect(passIntervalProblem(90)).toBe("90 s is over a minute but not whole minutes (EventBridge's rates)");
    expect(passIntervalProblem(12.5)).toBe('12.5 s is not a whole number of seconds');
    expect(passIntervalProblem(0)).toBe('0 s is not a whole number of seconds');
    expect(passIntervalProblem(Number.NaN)).toBe('NaN s is not a whole number of seconds');
  });
});

describe('passesBetweenTicks', () => {
  it('asks for the pass half a minute after the tick, delayed from when the invocation runs', () => {
    expect(passesBetweenTicks(30, tick, tick + 1_200)).toEqual([
      { dueAtMs: tick + 30_000, delaySeconds: 29 },
    ]);
  });

  it('asks for every pass before the next tick at shorter intervals', () => {
    const passes = passesBetweenTicks(15, tick, tick);
    expect(passes.map((p) => (p.dueAtMs - tick) / 1000)).toEqual([15, 30, 45]);
    expect(passes.map((p) => p.delaySeconds)).toEqual([15, 30, 45]);
    expect(passesBetweenTicks(10, tick, tick)).toHaveLength(5);
  });

  it('leaves out passes a late invocation has reached: its own pass covers them', () => {
    expect(passesBetweenTicks(15, tick, tick + 31_000).map((p) => (p.dueAtMs - tick) / 1000)).toEqual([45]);
    // Due in under a second: no message for it.
    expect(passesBetweenTicks(30, tick, tick + 29_600)).toEqual([]);
    expect(passesBetweenTicks(30, tick, tick + 75_000)).toEqual([]);
  });

  it('asks for none at a minute or more, or at an interval Flotilla does not run', () => {
    expect(passesBetweenTicks(60, tick, tick)).toEqual([]);
    expect(passesBetweenTicks(120, tick, tick)).toEqual([]);
    expect(passesBetweenTicks(25, tick, tick)).toEqual([]);
  });

  it('keeps each delay inside the minute when the invocation runs before the tick it names', () => {
    // A clock seconds behind EventBridge's: never a delay past the next tick.
    const passes = passesBetweenTicks(30, tick, tick - 40_000);
    expect(passes).toEqual([{ dueAtMs: tick + 30_000, delaySeconds: 59 }]);
  });
});
