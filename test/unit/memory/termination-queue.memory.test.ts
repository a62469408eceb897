import { describe, expect, it } from 'vitest';
import { makeMemoryTerminationQueue } from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { TerminationRequest } from '../../../shared/ports/work-queue.ts';

const START = new Date('2026-11-21T10:00:00Z');

/** What a request names: each of these tests sends NodeClaim requests only. */
const named = (r: TerminationRequest) => ('nodeClaim' in r ? r.nodeClaim : `node ${r.node}`);

describe('the in-memory termination queue', () => {
  it('delivers a request once it is due, and only once', async () => {
    const clock = makeManualClock(START);
    const queue = makeMemoryTerminationQueue(clock);
    await queue.enqueue({ nodeClaim: 'a' }, 5);
    expect(queue.receive()).toEqual([]);
    expect(queue.nextVisibleAt()).toEqual(new Date(START.getTime() + 5000));
    clock.advance(4999);
    expect(queue.receive()).toEqual([]);
    clock.advance(1);
    expect(queue.receive()).toEqual([{ nodeClaim: 'a' }]);
    expect(queue.receive()).toEqual([]);
    expect(queue.size()).toBe(0);
    expect(queue.nextVisibleAt()).toBeUndefined();
  });

  it('delivers the earliest visible first, then in sending order', async () => {
    const clock = makeManualClock(START);
    const queue = makeMemoryTerminationQueue(clock);
    await queue.enqueue({ nodeClaim: 'late' }, 3);
    await queue.enqueue({ nodeClaim: 'now-1' }, 0);
    await queue.enqueue({ nodeClaim: 'soon' }, 1);
    await queue.enqueue({ nodeClaim: 'now-2' }, 0);
    expect(queue.receive().map(named)).toEqual(['now-1', 'now-2']);
    clock.advance(10_000);
    expect(queue.receive().map(named)).toEqual(['soon', 'late']);
  });

  it('rounds delays up to whole seconds and clamps them to the range SQS accepts', async () => {
    const clock = makeManualClock(START);
    const queue = makeMemoryTerminationQueue(clock);
    await queue.enqueue({ nodeClaim: 'fraction' }, 0.2);
    await queue.enqueue({ nodeClaim: 'negative' }, -30);
    await queue.enqueue({ nodeClaim: 'long' }, 3600);
    expect(queue.receive().map(named)).toEqual(['negative']);
    expect(queue.nextVisibleAt()).toEqual(new Date(START.getTime() + 1000));
    clock.advance(1000);
    expect(queue.receive().map(named)).toEqual(['fraction']);
    expect(queue.nextVisibleAt()).toEqual(new Date(START.getTime() + 900_000));
    expect(queue.size()).toBe(1);
  });

  it('keeps a copy of the request, not the caller object', async () => {
    const clock = makeManualClock(START);
    const queue = makeMemoryTerminationQueue(clock);
    const request = { nodeClaim: 'a' };
    await queue.enqueue(request, 0);
    request.nodeClaim = 'changed';
    expect(queue.receive()).toEqual([{ nodeClaim: 'a' }]);
  });
});
