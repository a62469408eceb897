/**
 * The termination Lambda's work item: move one NodeClaim's termination on, or start the termination
 * of a Node a user deleted (its NodeClaim is deleted, then drained as any other). `relayed` marks a
 * request made for a deletion the shim reported rather than by the controller that deleted it:
 * it is left alone when that NodeClaim's termination is already under way.
 */
export type TerminationRequest =
  | { readonly nodeClaim: string; readonly relayed?: true }
  | { readonly node: string };

/** What a termination request names, for messages and logs. */
export function describeTerminationRequest(request: TerminationRequest): string {
  return 'node' in request ? `node "${request.node}"` : `nodeClaim "${request.nodeClaim}"`;
}

/**
 * The termination queue: termination steps that must wait (a drain blocked by a budget, an
 * instance still shutting down) are handed to a later invocation by sending a delayed request.
 */
export interface TerminationQueue {
  /**
   * Sends the request, delivered after `delaySeconds` (clamped to 0…900, SQS's range).
   * @throws QueueSendError when the queue refuses it.
   */
  enqueue(request: TerminationRequest, delaySeconds: number): Promise<void>;
}
