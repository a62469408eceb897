import type { TerminationQueue } from '../../ports/work-queue.ts';
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
