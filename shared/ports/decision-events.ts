/**
 * One decision as an event on the stack's event bus: its kind (the event's detail type, e.g.
 * `launch`) and its decision line as the log has it (the detail).
 */
export interface DecisionEvent {
  readonly kind: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/**
 * Where an invocation's decisions go as events, besides their log lines. `add` never blocks the
 * decision that called it; `flush`, at the end of the invocation, waits until every event added is
 * delivered or reported as not delivered (an error log line naming how many and why): the log
 * line stays the record of the decision, the event is its notification.
 */
export interface DecisionEventBus {
  add(event: DecisionEvent): void;
  flush(): Promise<void>;
}
