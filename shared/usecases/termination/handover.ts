import type { NodeDeletion } from '../../messages/node-deletion.ts';
import type { TerminationQueue, TerminationRequest } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';

// How a controller that deleted a NodeClaim hands it to termination, the one way every controller
// does it: a message on the termination queue so the drain starts at once, or, without a queue or
// when the message cannot be sent, the termination sweep, which finds every deleting NodeClaim. The
// NodeClaim is deleted either way, so a failed send is a warning, never a failure of the
// controller's step: what it had left to do (the next candidate, its Events, its decision) goes on.

/** How a controller asks for a drain now: a message on the termination queue. */
export type TerminationRequester = (nodeClaim: string) => Promise<void>;

/** The termination queue as a requester: a message with no delay. */
export function viaQueue(queue: Pick<TerminationQueue, 'enqueue'>): TerminationRequester {
  return (nodeClaim) => queue.enqueue({ nodeClaim }, 0);
}

/** Where a deleted NodeClaim went for its drain. */
export type TerminationHandover = 'termination queue' | 'termination sweep';

/** Asks termination to start on `nodeClaim`, and says where it went (`fields` name it in the warning). */
export async function handToTermination(
  requestTermination: TerminationRequester | undefined,
  nodeClaim: string,
  logger: Logger,
  fields: Readonly<Record<string, unknown>> = { nodeClaim },
): Promise<TerminationHandover> {
  if (requestTermination === undefined) return 'termination sweep';
  try {
    await requestTermination(nodeClaim);
    return 'termination queue';
  } catch (error) {
    logger.warn('termination request not sent', { ...fields, error, fallback: 'termination sweep' });
    return 'termination sweep';
  }
}

/** How a deletion the shim reported is sent on to termination: a request with no delay. */
export type DeletionRelay = (request: TerminationRequest) => Promise<void>;

/** The termination queue as a relay. */
export function relayViaQueue(queue: Pick<TerminationQueue, 'enqueue'>): DeletionRelay {
  return (request) => queue.enqueue(request, 0);
}

/**
 * Sends the Node and NodeClaim deletions the shim reported on to termination, so a `kubectl delete
 * node` or `kubectl delete nodeclaim` starts draining at once, as Karpenter's termination controllers
 * react to their watch, rather than at the next termination sweep. Each object once; a NodeClaim's
 * request is marked relayed (termination leaves it alone when its drain is already under way, as
 * for the NodeClaims Flotilla deletes and hands over itself). The report is untrusted: termination
 * acts only on what the API server confirms. A send that fails is a warning, the sweep the fallback;
 * returns the requests sent.
 */
export async function relayDeletions(
  relay: DeletionRelay,
  deletions: readonly Pick<NodeDeletion, 'object' | 'name'>[],
  logger: Logger,
): Promise<readonly TerminationRequest[]> {
  const seen = new Set<string>();
  const sent: TerminationRequest[] = [];
  for (const d of deletions) {
    const key = `${d.object}/${d.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const request: TerminationRequest =
      d.object === 'Node' ? { node: d.name } : { nodeClaim: d.name, relayed: true };
    try {
      await relay(request);
      sent.push(request);
    } catch (error) {
      logger.warn('deletion not relayed to termination', {
        object: key,
        error,
        fallback: 'termination sweep',
      });
    }
  }
  if (sent.length > 0) {
    logger.info('deletions relayed to termination', {
      count: sent.length,
      objects: [...seen].slice(0, 10),
    });
  }
  return sent;
}
