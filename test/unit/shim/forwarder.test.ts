import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchForwarder } from '../../../infra/shim/forwarder.ts';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('BatchForwarder', () => {
  it('sends a burst as batches of at most 10 once the burst goes quiet', async () => {
    const batches: number[][] = [];
    const forwarder = new BatchForwarder<number>({
      send: async (b) => void batches.push([...b]),
      idleMs: 100,
    });
    for (let i = 0; i < 23; i += 1) forwarder.add(i);
    await vi.advanceTimersByTimeAsync(99);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches.map((b) => b.length)).toEqual([10, 10, 3]);
    expect(batches.flat()).toEqual([...Array(23).keys()]);
  });

  it('does not hold items longer than maxWaitMs while items keep arriving', async () => {
    const batches: number[][] = [];
    const forwarder = new BatchForwarder<number>({
      send: async (b) => void batches.push([...b]),
      idleMs: 100,
      maxWaitMs: 250,
    });
    for (let i = 0; i < 5; i += 1) {
      forwarder.add(i);
      await vi.advanceTimersByTimeAsync(60);
    }
    // Items arrive every 60 ms (never 100 ms of quiet); without the cap they would wait until
    // 340 ms. At 300 ms all five went out together at the 250 ms cap.
    expect(batches).toEqual([[0, 1, 2, 3, 4]]);
  });

  it('keeps items when a send fails and delivers them on a retry', async () => {
    let fail = 2;
    const delivered: string[] = [];
    const errors: number[] = [];
    const forwarder = new BatchForwarder<string>({
      send: async (batch) => {
        if (fail > 0) {
          fail -= 1;
          throw new Error('queue unreachable');
        }
        delivered.push(...batch);
      },
      idleMs: 10,
      onError: (_error, pending) => errors.push(pending),
    });
    forwarder.add('a');
    forwarder.add('b');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(errors).toEqual([2, 2]);
    expect(delivered).toEqual(['a', 'b']);
    expect(forwarder.size).toBe(0);
  });

  it('drops the oldest items past maxPending and says how many', async () => {
    const drops: number[] = [];
    const forwarder = new BatchForwarder<number>({
      send: async () => {
        throw new Error('down');
      },
      maxPending: 3,
      onDrop: (n) => drops.push(n),
    });
    for (let i = 0; i < 5; i += 1) forwarder.add(i);
    expect(drops).toEqual([1, 1]);
    expect(forwarder.size).toBe(3);
  });

  it('flushes what is pending on close', async () => {
    const delivered: number[] = [];
    const forwarder = new BatchForwarder<number>({
      send: async (b) => void delivered.push(...b),
      idleMs: 10_000,
    });
    forwarder.add(1);
    await forwarder.close();
    expect(delivered).toEqual([1]);
    expect(() => forwarder.add(2)).toThrow(/closed/);
  });
});
