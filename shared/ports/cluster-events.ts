// Kubernetes Events as the Cluster port records them, and the key under which occurrences of one
// Event are counted together.

/** The object an event is about. */
export type EventSubject =
  | { readonly kind: 'Pod'; readonly namespace: string; readonly name: string; readonly uid?: string }
  | {
      readonly kind: 'NodeClaim' | 'NodePool' | 'Node' | 'EC2NodeClass';
      readonly name: string;
      readonly uid?: string;
    };

/**
 * A Kubernetes Event. Occurrences with the same dedupe key (eventDedupeKey: subject, reason and
 * dedupe values) are one Event: a repeat within the dedupe window is dropped, a later one counted
 * on the same object (its message and type replaced by the latest), as Karpenter's recorder keys
 * them.
 */
export interface ClusterEvent {
  readonly subject: EventSubject;
  readonly type: 'Normal' | 'Warning';
  /** CamelCase, e.g. `FailedScheduling`, `InsufficientCapacityError`. */
  readonly reason: string;
  readonly message: string;
  /**
   * What tells occurrences apart besides the subject and reason (Karpenter's dedupe values: a
   * disruption reason, a command, an annotation value). @default [type, message]
   */
  readonly dedupeValues?: readonly string[];
  /** The dedupe window of this Event, in seconds. @default the adapter's window */
  readonly dedupeSeconds?: number;
}

/** The key under which occurrences of an Event are one: subject, reason and dedupe values. Pure. */
export function eventDedupeKey(event: ClusterEvent): string {
  const s = event.subject;
  return [
    s.kind,
    s.kind === 'Pod' ? s.namespace : '',
    s.name,
    event.reason,
    ...(event.dedupeValues ?? [event.type, event.message]),
  ].join('\n');
}
