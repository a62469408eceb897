import type { InterruptionMessage } from '../messages/interruption-event.ts';
import type { Logger } from '../runtime/logger.ts';
import type { BatchItem, BatchOutcome } from './batch.ts';
import type { NodeClaimIndex } from './interruption.ts';

// The interruption Lambda's batch handling, shared with the simulator: the NodeClaims are read
// once per batch, each event is handled once however often EventBridge delivered it, and an event
// whose handling fails is delivered again alone.

/** What handling a batch of interruption events uses. */
export interface InterruptionDriverDeps {
  readonly logger: Logger;
  /** Reads the NodeClaims, indexed by instance id (indexNodeClaims). */
  readonly indexNodeClaims: () => Promise<NodeClaimIndex>;
  /** Acts on one event (handleInterruption). */
  readonly handle: (message: InterruptionMessage, claims: NodeClaimIndex) => Promise<unknown>;
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
): Promise<BatchOutcome> {
  const { logger } = deps;
  if (items.length === 0) return { failed: [] };
  let claims: NodeClaimIndex;
  try {
    claims = await deps.indexNodeClaims();
  } catch (error) {
    logger.error('interruption batch failed', {
      error,
      reason: 'reading NodeClaims failed',
      messages: items.length,
    });
    return { failed: items.map((i) => i.id) };
  }
  const failed: string[] = [];
  const seen = new Set<string>();
  for (const { id, message } of items) {
    if (seen.has(message.eventId)) {
      logger.info('interruption duplicate', { messageId: id, eventId: message.eventId, kind: message.kind });
      continue;
    }
    seen.add(message.eventId);
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
}
