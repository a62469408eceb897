import { randomUUID } from 'node:crypto';
import type { InterruptionMessage } from '../../messages/interruption-event.ts';
import type { Lease, LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { BatchItem, BatchOutcome } from '../state/batch.ts';
import type { InstanceStatusPollResult } from './instance-status.ts';
import type { NodeClaimIndex } from './interruption.ts';

// The interruption Lambda's batch handling, shared with the simulator: the NodeClaims are read
// once per batch, each event is handled once however often EventBridge delivered it (within a batch
// by its id; across concurrent invocations by a short lease on the event), and an event whose
// handling fails is delivered again alone.

/**
 * How long one invocation may act on an event before another delivery may take it over: shorter
 * than the interruption Lambda's 45 s timeout, so the lease of an invocation that died has expired
 * by the time the queue delivers the event again (its 60 s visibility timeout).
 */
export const EVENT_LEASE_SECONDS = 40;

/** What handling a batch of interruption events uses. */
export interface InterruptionDriverDeps {
  readonly logger: Logger;
  /** Reads the NodeClaims, indexed by instance id (indexNodeClaims). */
  readonly indexNodeClaims: () => Promise<NodeClaimIndex>;
  /** Acts on one event (handleInterruption). */
  readonly handle: (message: InterruptionMessage, claims: NodeClaimIndex) => Promise<unknown>;
  /**
   * One invocation at a time acts on an event: another delivery of it in flight elsewhere is
   * handed back to the queue, and comes again once that invocation is done (it then finds the
   * NodeClaim already deleting). Without it, concurrent deliveries may each act (idempotently).
   */
  /** One instance status poll (the Lambda's schedule); absent, the schedule is ignored. */
  readonly pollInstanceStatus?: () => Promise<InstanceStatusPollResult>;
  readonly eventLeases?: {
    readonly store: LeaseStore;
    readonly clusterName: string;
    readonly now: () => Date;
  };
}

/**
 * Handles a batch of parsed interruption events in order. When the NodeClaims cannot be read,
 * every item fails; an item whose event id came earlier in the batch is acknowledged without
 * acting again (EventBridge delivers at least once); an item whose handling throws is logged and
 * fails alone.
 */
export async function handleInterruptionBatch(
  deps: InterruptionDriverDeps,
  items: readonly BatchItem<InterruptionMessage>[],
  holder: string = randomUUID(),
): Promise<BatchOutcome> {
  const { logger } = deps;
  if (items.length === 0) return { failed: [] };
  const failed: string[] = [];
  const seen = new Set<string>();
  const first: BatchItem<InterruptionMessage>[] = [];
  for (const item of items) {
    const { id, message } = item;
    if (seen.has(message.eventId)) {
      logger.info('interruption duplicate', { messageId: id, eventId: message.eventId, kind: message.kind });
      continue;
    }
    seen.add(message.eventId);
    first.push(item);
  }
  // The events' leases before the NodeClaims are read: an invocation that acted on an event before
  // released its lease only when done, so this read sees what it did.
  const leases = new Map<string, Lease>();
  const mine: BatchItem<InterruptionMessage>[] = [];
  for (const item of first) {
    if (deps.eventLeases === undefined) {
      mine.push(item);
      continue;
    }
    const { store, clusterName, now } = deps.eventLeases;
    try {
      const lease = await store.acquire(
        `interruption#${clusterName}#${item.message.eventId}`,
        holder,
        now(),
        EVENT_LEASE_SECONDS,
      );
      if (lease === undefined) {
        logger.info('interruption in progress elsewhere', {
          messageId: item.id,
          eventId: item.message.eventId,
          kind: item.message.kind,
          retry: 'redelivered by the queue',
        });
        failed.push(item.id);
        continue;
      }
      leases.set(item.message.eventId, lease);
      mine.push(item);
    } catch (error) {
      logger.error('interruption failed', {
        error,
        messageId: item.id,
        eventId: item.message.eventId,
        reason: 'taking the event lease failed',
      });
      failed.push(item.id);
    }
  }
  try {
    if (mine.length === 0) return { failed };
    let claims: NodeClaimIndex;
    try {
      claims = await deps.indexNodeClaims();
    } catch (error) {
      logger.error('interruption batch failed', {
        error,
        reason: 'reading NodeClaims failed',
        messages: items.length,
      });
      return { failed: [...failed, ...mine.map((i) => i.id)] };
    }
    for (const { id, message } of mine) {
      try {
        await deps.handle(message, claims);
      } catch (error) {
        logger.error('interruption failed', {
          error,
          messageId: id,
          eventId: message.eventId,
          kind: message.kind,
          instanceIds: message.instanceIds,
        });
        failed.push(id);
      }
    }
    return { failed };
  } finally {
    for (const lease of leases.values()) {
      await deps.eventLeases?.store.release(lease).catch((error: unknown) => {
        // It expires on its own within EVENT_LEASE_SECONDS.
        logger.warn('event lease not released', { lease: lease.name, error });
      });
    }
  }
}
