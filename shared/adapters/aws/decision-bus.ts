import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import type { DecisionEvent, DecisionEventBus } from '../../ports/decision-events.ts';
import type { Logger } from '../../runtime/logger.ts';

// The stack's event bus as the DecisionEventBus: PutEvents of ten entries at a time (EventBridge's
// most per call), sent while the invocation goes on and awaited by `flush` at its end. An entry
// EventBridge refuses is sent once more; what still fails, or a call that fails (throttled, denied),
// is one error line naming the bus, the number of events and the reason. The decisions themselves
// are in the log whatever happens here, so nothing is thrown at the use case.

/** The `source` of every decision event. */
export const DECISION_EVENT_SOURCE = 'flotilla';

/** Entries per PutEvents call (EventBridge's limit). */
const MAX_ENTRIES = 10;
/** Bytes per PutEvents call (EventBridge's limit is 256 KB; the margin covers its own accounting). */
const MAX_CALL_BYTES = 240 * 1024;
/** A detail past this size keeps only the line's level, message, decision and reason. */
const MAX_DETAIL_BYTES = 64 * 1024;

export interface DecisionBusOptions {
  readonly eventBridge: Pick<EventBridgeClient, 'send'>;
  /** The bus's name (or ARN). */
  readonly busName: string;
  readonly logger: Logger;
}

export function makeDecisionBus(options: DecisionBusOptions): DecisionEventBus {
  const { eventBridge, busName, logger } = options;
  let pending: PutEventsRequestEntry[] = [];
  const sending = new Set<Promise<void>>();

  const start = (entries: PutEventsRequestEntry[]): void => {
    const delivery: Promise<void> = deliver(entries).finally(() => sending.delete(delivery));
    sending.add(delivery);
  };

  /** Sends the entries in calls within EventBridge's limits; reports what did not arrive. */
  async function deliver(entries: readonly PutEventsRequestEntry[]): Promise<void> {
    const lost: { entry: PutEventsRequestEntry; reason: string }[] = [];
    for (const call of calls(entries)) {
      let left = call;
      for (let attempt = 0; attempt < 2 && left.length > 0; attempt++) {
        try {
          const out = await eventBridge.send(new PutEventsCommand({ Entries: left }));
          const results = out.Entries ?? [];
          const failed = left.flatMap((entry, i) => {
            const code = results[i]?.ErrorCode;
            return code === undefined
              ? []
              : [{ entry, reason: `${code}: ${results[i]?.ErrorMessage ?? ''}` }];
          });
          left = failed.map((f) => f.entry);
          if (attempt === 1) lost.push(...failed);
        } catch (error) {
          // A refused or failed call is not retried here: the SDK already retried what may pass.
          const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          lost.push(...left.map((entry) => ({ entry, reason })));
          left = [];
        }
      }
    }
    if (lost.length === 0) return;
    logger.error('decision events not delivered', {
      bus: busName,
      events: lost.length,
      decisions: [...new Set(lost.map((l) => l.entry.DetailType))].sort(),
      error: lost[0]?.reason,
    });
  }

  return {
    add(event: DecisionEvent): void {
      pending.push(toEntry(busName, event));
      if (pending.length >= MAX_ENTRIES) {
        const batch = pending;
        pending = [];
        start(batch);
      }
    },
    async flush(): Promise<void> {
      if (pending.length > 0) {
        const batch = pending;
        pending = [];
        start(batch);
      }
      while (sending.size > 0) await Promise.all([...sending]);
    },
  };
}

function toEntry(busName: string, event: DecisionEvent): PutEventsRequestEntry {
  let detail = JSON.stringify(event.detail);
  if (Buffer.byteLength(detail) > MAX_DETAIL_BYTES) {
    const { level, message, decision, reason } = event.detail;
    detail = JSON.stringify({ level, message, decision, reason, truncated: true });
  }
  return { EventBusName: busName, Source: DECISION_EVENT_SOURCE, DetailType: event.kind, Detail: detail };
}

/** The entries cut into calls of at most MAX_ENTRIES and MAX_CALL_BYTES. */
function calls(entries: readonly PutEventsRequestEntry[]): PutEventsRequestEntry[][] {
  const out: PutEventsRequestEntry[][] = [];
  let call: PutEventsRequestEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = Buffer.byteLength(entry.Detail ?? '') + Buffer.byteLength(entry.DetailType ?? '') + 64;
    if (call.length > 0 && (call.length === MAX_ENTRIES || bytes + size > MAX_CALL_BYTES)) {
      out.push(call);
      call = [];
      bytes = 0;
    }
    call.push(entry);
    bytes += size;
  }
  if (call.length > 0) out.push(call);
  return out;
}
