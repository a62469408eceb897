import type { Clock } from '../../ports/clock.ts';
import type { ClusterEvent } from '../../ports/cluster.ts';

// Events as the API server's event recorder keeps them: one per subject, reason and message,
// repeats within the dedupe window dropped, later ones counted.

/** An event as stored, for the simulator and tests to read back. */
export interface StoredEvent {
  readonly event: ClusterEvent;
  readonly count: number;
  readonly firstMs: number;
  readonly lastMs: number;
}

export function makeEventRecorder(clock: Clock, dedupeMs: number) {
  const events = new Map<string, StoredEvent>();
  function record(event: ClusterEvent): void {
    const s = event.subject;
    const key = [
      s.kind,
      s.kind === 'Pod' ? s.namespace : '',
      s.name,
      event.type,
      event.reason,
      event.message,
    ].join('\n');
    const nowMs = clock.now().getTime();
    const existing = events.get(key);
    if (existing === undefined) {
      events.set(key, {
        event: { ...event, message: event.message.slice(0, 1024) },
        count: 1,
        firstMs: nowMs,
        lastMs: nowMs,
      });
      return;
    }
    if (nowMs - existing.lastMs < dedupeMs) return;
    events.set(key, { ...existing, count: existing.count + 1, lastMs: nowMs });
  }
  return { record, list: (): readonly StoredEvent[] => [...events.values()] };
}
