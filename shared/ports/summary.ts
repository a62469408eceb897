import type { BoundPod, ClusterNode, NodeClaimRead, NodeInfo, ReadResult } from './cluster-objects.ts';

// The cluster summary as the Lambdas see it: what the shim's watches saw of the pods, Nodes and
// NodeClaims, published between invocations (shared/apis/summary-document.ts has its format). A
// cache, never the truth, and untrusted input: whoever holds the shim's role can write it, and the
// times inside it come from the shim's clock. What it says may choose what to look at, never what
// to do: every deletion, termination, taint, eviction, disruption condition and command, and every
// existing Node a plan counts on, is confirmed by a read of the API server first. Its age is judged
// by the store's clock (S3's LastModified), and its size is capped before it is read.

/**
 * How old a summary's publication and watches may be for the Lambdas to read it instead of the
 * API server: whatever they read of the cluster is at least this current.
 */
export const SUMMARY_MAX_AGE_MS = 60_000;

/**
 * How far a document's own times may run ahead of the time its store gives it (S3's
 * LastModified has whole seconds, and a node's clock may be off by a little): further ahead, and
 * the document is refused.
 */
export const SUMMARY_CLOCK_TOLERANCE_MS = 5_000;

/** What a published summary says of the Nodes and NodeClaims, read without its pods. */
export interface ClusterSummaryHead {
  readonly cluster: string;
  /**
   * When it was published (epoch ms). From a store (S3), the time the store gives the object, not
   * a time the document states.
   */
  readonly publishedAtMs: number;
  /**
   * Up to when every watch behind it is known to have been current (epoch ms). From a store, the
   * store's time of the object less how far the document says its slowest watch was behind.
   */
  readonly currentAtMs: number;
  /** Nodes without their pods, read without them. */
  nodeInfos(): ReadResult<NodeInfo>;
  /** NodeClaims, read without the pods. */
  nodeClaims(): NodeClaimRead;
}

/** A published summary, read back in domain terms. */
export interface ClusterSummary extends ClusterSummaryHead {
  readonly counts: { readonly pods: number; readonly nodes: number; readonly nodeClaims: number };
  /**
   * Nodes with their pods (converted on first use, then kept). The pods are most of a summary and
   * are read only here and in `boundPods()`.
   * @throws SummaryUnavailableError (from a SummarySource) when the summary's pods cannot be read.
   */
  nodes(): ReadResult<ClusterNode>;
  /** @throws SummaryUnavailableError (from a SummarySource) when the summary's pods cannot be read. */
  boundPods(): ReadResult<BoundPod>;
}

/** Where the latest summary is published. */
export interface SummarySource {
  /**
   * The latest published summary, or undefined when none has been published yet.
   * @throws SummaryUnavailableError when it cannot be read (the caller reads the API server).
   */
  read(): Promise<ClusterSummary | undefined>;
  /**
   * The latest published summary's head (its Nodes and NodeClaims), which a source may serve from
   * a head it read before, unchanged since, without downloading the summary again. Without it,
   * `read()` serves heads too.
   * @throws SummaryUnavailableError (or its SummaryDatedAheadError, SummaryTooLargeError) when it
   *   cannot be read (the caller reads the API server).
   */
  readHead?(): Promise<ClusterSummaryHead | undefined>;
}

/**
 * The most a summary may hold before it is read: more, and it is refused (a summary of a cluster
 * larger than the stack was sized for, or a hostile one made to exhaust a Lambda's memory).
 */
export interface SummaryLimits {
  /** Bytes of the stored (gzipped) object, checked before it is downloaded. */
  readonly storedBytes: number;
  /** Bytes of its text once unzipped; unzipping stops there. */
  readonly textBytes: number;
  readonly nodes: number;
  readonly nodeClaims: number;
  readonly pods: number;
}

/**
 * The limits for a stack sized for `nodes` Nodes and `pods` pods (its `clusterSize`): a quarter
 * more objects than that, so a cluster that outgrows its size a little is still read while the
 * stack is resized, and the bytes those objects take in a real document with room to spare (a
 * Node with its NodeClaim weighs about 7 KiB of text, a pod about 360 bytes; BENCHMARKS.md).
 * Past them the Lambdas read the API server, as for any summary they cannot use.
 */
export function summaryLimitsFor(size: { readonly nodes: number; readonly pods: number }): SummaryLimits {
  const nodes = Math.ceil(1.25 * size.nodes) + 100;
  const pods = Math.ceil(1.25 * size.pods) + 2_000;
  const textBytes = nodes * 9 * 1_024 + pods * 512;
  // A gzipped document is several times smaller than its text; never larger.
  return { storedBytes: textBytes, textBytes, nodes, nodeClaims: nodes, pods };
}

/** The summary could not be read or is not one this version understands. */
export class SummaryUnavailableError extends Error {
  readonly code: string = 'SummaryUnavailableError';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'SummaryUnavailableError';
  }
}

/** The summary holds more than its limits allow (SummaryLimits); it is not read. */
export class SummaryTooLargeError extends SummaryUnavailableError {
  override readonly code = 'SummaryTooLargeError';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'SummaryTooLargeError';
  }
}

/** The summary states times ahead of when its store says it was written; it is not read. */
export class SummaryDatedAheadError extends SummaryUnavailableError {
  override readonly code = 'SummaryDatedAheadError';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'SummaryDatedAheadError';
  }
}
