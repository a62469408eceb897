/** A request to move one NodeClaim's termination on: the termination Lambda's work item. */
export interface TerminationRequest {
  readonly nodeClaim: string;
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
