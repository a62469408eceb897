import type { BoundPod, ClusterNode, NodeClaimRead, NodeInfo, ReadResult } from './cluster.ts';

// The cluster summary as the Lambdas see it: what the shim's watches saw of the pods, Nodes and
// NodeClaims, published between invocations (shared/apis/summary-document.ts has its format). A
// cache, never the truth: its age is known, and whatever deletes or terminates confirms with the
// API server first.

/**
 * How old a summary's publication and watches may be for the Lambdas to read it instead of the
 * API server: whatever they read of the cluster is at least this current.
 */
export const SUMMARY_MAX_AGE_MS = 60_000;

/** A published summary, read back in domain terms. */
export interface ClusterSummary {
  readonly cluster: string;
  /** When the shim published it (epoch ms). */
  readonly publishedAtMs: number;
  /** Up to when every watch behind it is known to have been current (epoch ms). */
  readonly currentAtMs: number;
  readonly counts: { readonly pods: number; readonly nodes: number; readonly nodeClaims: number };
  /**
   * Nodes with their pods (converted on first use, then kept). The pods are most of a summary and
   * are read only here and in `boundPods()`.
   * @throws SummaryUnavailableError (from a SummarySource) when the summary's pods cannot be read.
   */
  nodes(): ReadResult<ClusterNode>;
  /** Nodes without their pods, read without them. */
  nodeInfos(): ReadResult<NodeInfo>;
  /** NodeClaims, read without the pods. */
  nodeClaims(): NodeClaimRead;
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
}

/** The summary could not be read or is not one this version understands. */
export class SummaryUnavailableError extends Error {
  readonly code = 'SummaryUnavailableError';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'SummaryUnavailableError';
  }
}
