import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { makeSummaryConversions, readSummaryDocument } from '../../apis/cluster-summary.ts';
import { summaryObjectKey } from '../../apis/summary-document.ts';
import { ValidationError } from '../../core/index.ts';
import { type ClusterSummary, type SummarySource, SummaryUnavailableError } from '../../ports/summary.ts';

// The cluster summary as a Lambda reads it: one GetObject of the object the shim publishes. A warm
// Lambda container keeps the last summary it read with its ETag and asks S3 only whether it changed
// (If-None-Match), so an unchanged summary costs one small request and no conversion. The object is
// unzipped at once and its head parsed; its pods are parsed only when a read needs them
// (readSummaryDocument), and a failure then is the same SummaryUnavailableError as one now.

const gunzipAsync = promisify(gunzip);

export interface S3SummarySourceOptions {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly cluster: string;
}

/** What one container has read so far. */
export interface SummaryReadStats {
  readonly reads: number;
  /** Reads S3 answered with the whole object. */
  readonly downloads: number;
  readonly bytesDownloaded: number;
}

export function makeS3SummarySource(
  options: S3SummarySourceOptions,
): SummarySource & { stats(): SummaryReadStats } {
  const key = summaryObjectKey(options.cluster);
  let last: { readonly etag: string; readonly summary: ClusterSummary } | undefined;
  let reads = 0;
  let downloads = 0;
  let bytesDownloaded = 0;
  let inFlight: Promise<ClusterSummary | undefined> | undefined;
  // A changed summary converts only the objects that changed since the last one.
  const conversions = makeSummaryConversions();
  const readOnce = async (): Promise<ClusterSummary | undefined> => {
    reads += 1;
    let body: Uint8Array;
    let etag: string | undefined;
    try {
      const out = await options.s3.send(
        new GetObjectCommand({
          Bucket: options.bucket,
          Key: key,
          ...(last === undefined ? {} : { IfNoneMatch: last.etag }),
        }),
      );
      etag = out.ETag;
      body = (await out.Body?.transformToByteArray()) ?? new Uint8Array();
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const name = (error as { name?: unknown }).name;
      if ((status === 304 || name === 'NotModified') && last !== undefined) return last.summary;
      if (status === 404 || name === 'NoSuchKey') return undefined;
      throw new SummaryUnavailableError(
        `s3://${options.bucket}/${key} could not be read: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    downloads += 1;
    bytesDownloaded += body.length;
    const unreadable = (error: unknown) =>
      new SummaryUnavailableError(
        `s3://${options.bucket}/${key} is not a cluster summary: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    let summary: ClusterSummary;
    try {
      // Unzipped off the main thread: the invocation's other reads go on meanwhile.
      summary = withPodErrorsAs(readSummaryDocument(await gunzipAsync(body), conversions), unreadable);
    } catch (error) {
      throw unreadable(error);
    }
    if (summary.cluster !== options.cluster) {
      throw new SummaryUnavailableError(
        `s3://${options.bucket}/${key} is the summary of cluster "${summary.cluster}", not "${options.cluster}"`,
      );
    }
    if (etag !== undefined) last = { etag, summary };
    return summary;
  };
  return {
    // Reads that overlap (an invocation reading Nodes and NodeClaims at once) share one request.
    read() {
      inFlight ??= readOnce().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    stats: () => ({ reads, downloads, bytesDownloaded }),
  };
}

/**
 * The summary with the ValidationError of pods that do not parse (they are parsed at the first
 * `nodes()` or `boundPods()`) thrown as `unreadable` makes it.
 */
function withPodErrorsAs(summary: ClusterSummary, unreadable: (error: unknown) => Error): ClusterSummary {
  const guarded =
    <T>(read: () => T) =>
    (): T => {
      try {
        return read();
      } catch (error) {
        if (error instanceof ValidationError) throw unreadable(error);
        throw error;
      }
    };
  return { ...summary, nodes: guarded(summary.nodes), boundPods: guarded(summary.boundPods) };
}
