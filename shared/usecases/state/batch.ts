// What the queue-driven use cases take and give: a batch of decoded messages, each with the id its
// queue knows it by, in; the ids to deliver again out. The transport (SQS and its partial batch
// response in the Lambdas, an in-memory inbox in the simulator) stays outside.

/** One decoded message of a batch, with the id its queue knows it by (an SQS messageId). */
export interface BatchItem<T> {
  readonly id: string;
  readonly message: T;
}

/** What a batch driver reports: the ids of the items to deliver again, in the order it found them. */
export interface BatchOutcome {
  readonly failed: readonly string[];
}
