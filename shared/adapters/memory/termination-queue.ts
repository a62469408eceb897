import type { Clock } from '../../ports/clock.ts';
import type { TerminationQueue, TerminationRequest } from '../../ports/work-queue.ts';

/** The longest delay one message gets, as SQS gives it (the port clamps to 0…900 s). */
const MAX_DELAY_SECONDS = 900;

/** The termination queue in memory, plus what the simulator's termination controller reads. */
export interface MemoryTerminationQueue extends TerminationQueue {
  /**
   * Takes every request visible at the clock's instant off the queue: earliest visible first,
   * then in the order they were sent. Each request is delivered once.
   */
  receive(): readonly TerminationRequest[];
  /** When the earliest request still queued becomes visible; undefined when the queue is empty. */
  nextVisibleAt(): Date | undefined;
  /** Requests queued, visible or not yet. */
  size(): number;
}

interface Queued {
  readonly request: TerminationRequest;
  readonly visibleAtMs: number;
  readonly sequence: number;
}

/**
 * The TerminationQueue port in memory, for the simulator: a request sent with `delaySeconds`
 * becomes visible at the clock's instant plus that delay, rounded up to whole seconds and clamped
 * to 0…900 s as the SQS adapter sends it. Time comes only from the clock.
 */
export function makeMemoryTerminationQueue(clock: Clock): MemoryTerminationQueue {
  let queued: Queued[] = [];
  let sequence = 0;
  return {
    async enqueue(request, delaySeconds) {
      const delay = Number.isFinite(delaySeconds)
        ? Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.ceil(delaySeconds)))
        : 0;
      sequence += 1;
      queued.push({
        request: 'node' in request ? { node: request.node } : { ...request },
        visibleAtMs: clock.now().getTime() + delay * 1000,
        sequence,
      });
    },
    receive() {
      const nowMs = clock.now().getTime();
      const due = queued
        .filter((q) => q.visibleAtMs <= nowMs)
        .sort((a, b) => a.visibleAtMs - b.visibleAtMs || a.sequence - b.sequence);
      queued = queued.filter((q) => q.visibleAtMs > nowMs);
      return due.map((q) => q.request);
    },
    nextVisibleAt() {
      if (queued.length === 0) return undefined;
      return new Date(Math.min(...queued.map((q) => q.visibleAtMs)));
    },
    size: () => queued.length,
  };
}
