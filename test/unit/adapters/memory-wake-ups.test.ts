import { describe, expect, it } from 'vitest';
import { makeMemoryWakeUps } from '../../../shared/adapters/memory/index.ts';

// The simulator's twin of EventBridge Scheduler's NodePool wake-ups: armed, moved and removed as
// the adapter arms them, and one-time: a wake-up that fires is gone.

describe('the in-memory NodePool wake-ups', () => {
  it('arms, keeps, moves and removes one wake-up per NodePool, each firing once', async () => {
    const w = makeMemoryWakeUps();
    expect(
      await w.arm(
        new Map([
          ['web', 300],
          ['batch', 200],
        ]),
      ),
    ).toEqual({ armed: ['web', 'batch'], removed: [] });
    expect(
      await w.arm(
        new Map([
          ['web', 300],
          ['batch', 200],
        ]),
      ),
    ).toEqual({ armed: [], removed: [] });
    expect(w.next()).toBe(200);
    expect(w.fire(199)).toBe(false);
    expect(w.fire(250)).toBe(true);
    expect(w.next()).toBe(300);
    expect(await w.arm(new Map([['web', 400]]))).toEqual({ armed: ['web'], removed: [] });
    expect(await w.arm(new Map())).toEqual({ armed: [], removed: ['web'] });
    expect(w.next()).toBeUndefined();
    expect(w.fire(1_000)).toBe(false);
  });
});
