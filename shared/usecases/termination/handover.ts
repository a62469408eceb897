import type { Logger } from '../../runtime/logger.ts';

// How a controller that deleted a NodeClaim hands it to termination: a message on the termination
// queue so the drain starts at once, or, without a queue or when the message cannot be sent, the
// termination sweep, which finds every deleting NodeClaim. The NodeClaim is deleted either way, so
// a failed send is a warning, never a failure of the controller's step.

/** Where a deleted NodeClaim went for its drain. */
export type TerminationHandover = 'termination queue' | 'termination sweep';

/** Asks termination to start on `nodeClaim`, and says where it went (`fields` name it in the warning). */
export async function handToTermination(
  requestTermination: ((nodeClaim: string) => Promise<void>) | undefined,
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
