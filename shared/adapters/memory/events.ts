import type { Clock } from '../../ports/clock.ts';
import { type ClusterEvent, eventDedupeKey } from '../../ports/cluster.ts';

// Events as the kube adapter keeps them: one per dedupe key (subject, reason, dedupe values), an
// occurrence within the key's dedupe window dropped, a later one counted with the latest message.

/** An event as stored, for the simulator and tests to read back. */
export interface StoredEvent {
  readonly event: ClusterEvent;
  readonly count: number;
  readonly firstMs: number;
  readonly lastMs: number;
}

/** Karpenter's and the API server's limit on an Event's message. */
const MAX_MESSAGE_CHARS = 1024;

export function makeEventRecorder(clock: Clock, dedupeMs: number) {
  const events = new Map<string, StoredEvent>();
  function record(event: ClusterEvent): void {
    const key = eventDedupeKey(event);
    const nowMs = clock.now().getTime();
    const stored = { ...event, message: event.message.slice(0, MAX_MESSAGE_CHARS) };
    const existing = events.get(key);
    if (existing === undefined) {
      events.set(key, { event: stored, count: 1, firstMs: nowMs, lastMs: nowMs });
      return;
    }
    const windowMs = event.dedupeSeconds === undefined ? dedupeMs : event.dedupeSeconds * 1000;
    if (nowMs - existing.lastMs < windowMs) return;
    events.set(key, { event: stored, count: existing.count + 1, firstMs: existing.firstMs, lastMs: nowMs });
  }
  return { record, list: (): readonly StoredEvent[] => [...events.values()] };
}
