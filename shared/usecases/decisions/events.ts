import type { DecisionEventBus } from '../../ports/decision-events.ts';
import type { DecisionObserver } from './sink.ts';

// Every decision also as an event on the stack's event bus: the detail type is the decision's kind
// and the detail its log line (level, message, the logger's fields such as `lambda`, `cluster` and
// `holder`, then the decision's own), so one EventBridge rule routes launches, disruptions or
// blocked pods to a topic, a chat channel or a ticket.

/** The observer that hands each decision written to the bus. */
export function decisionEvents(bus: Pick<DecisionEventBus, 'add'>): DecisionObserver {
  // The line writeDecisions wrote, not made again.
  return (decision, fields, _points, line) => {
    bus.add({
      kind: decision.kind,
      detail: { level: line.level, message: line.message, ...fields, ...line.fields },
    });
  };
}
