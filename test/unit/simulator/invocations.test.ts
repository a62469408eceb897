import { describe, expect, it } from 'vitest';
import { makeVirtualInvocations } from '../../../shared/simulator/invocations.ts';

// Lambda invocations on virtual time: each step runs one invocation until it sleeps or ends.

describe('virtual invocations', () => {
  it('parks an invocation at each sleep until it is woken, and steps one at a time', async () => {
    let now = 0;
    const trace: string[] = [];
    const invocations = makeVirtualInvocations(() => now);
    const body = (name: string, waits: readonly number[]) => async (sleep: (ms: number) => Promise<void>) => {
      for (const wait of waits) {
        trace.push(`${name}@${now}`);
        await sleep(wait);
      }
      trace.push(`${name} done@${now}`);
    };

    await invocations.start('a', body('a', [2_000, 1_000]));
    await invocations.start('b', body('b', [1_000]));
    expect(trace).toEqual(['a@0', 'b@0']);
    expect([...invocations.wakeTimes()].sort()).toEqual([1_000, 2_000]);
    expect(invocations.due(0)).toEqual([]);

    now = 1_000;
    expect(invocations.due(now)).toEqual(['b']);
    await invocations.resume('b');
    expect(invocations.has('b')).toBe(false);

    now = 2_000;
    await invocations.resume('a');
    expect(invocations.wakeTimes()).toEqual([3_000]);
    now = 3_000;
    await invocations.resume('a');
    expect(trace).toEqual(['a@0', 'b@0', 'b done@1000', 'a@2000', 'a done@3000']);
    expect(invocations.wakeTimes()).toEqual([]);
  });

  it('passes on what an invocation throws, at the step that runs it', async () => {
    const invocations = makeVirtualInvocations(() => 0);
    await invocations.start('a', async (sleep) => {
      await sleep(0);
      throw new Error('the pass failed');
    });
    await expect(invocations.resume('a')).rejects.toThrow('the pass failed');
    expect(invocations.has('a')).toBe(false);
    await expect(invocations.resume('a')).rejects.toThrow(/no invocation is parked under "a"/);
  });
});
