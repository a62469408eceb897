import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import {
  GetObjectCommand,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { makeSummaryConversions, readSummaryDocument } from '../../apis/cluster-summary.ts';
import { summaryObjectKey } from '../../apis/summary-document.ts';
import { readSummaryObjectMetadata } from '../../apis/summary-metadata.ts';
import { ValidationError } from '../../core/index.ts';
import {
  type ClusterSummary,
  type ClusterSummaryHead,
  SUMMARY_CLOCK_TOLERANCE_MS,
  SummaryDatedAheadError,
  type SummaryLimits,
  type SummarySource,
  SummaryTooLargeError,
  SummaryUnavailableError,
} from '../../ports/summary.ts';

// The cluster summary as a Lambda reads it: one GetObject of the object the shim publishes. A warm
// Lambda container keeps the last summary it read with its ETag and asks S3 only whether it changed
// (If-None-Match), so an unchanged summary costs one small request and no conversion. The object is
// unzipped at once and its head parsed; its pods are parsed only when a read needs them
// (readSummaryDocument), and a failure then is the same SummaryUnavailableError as one now.
// A read of the head alone (Nodes and NodeClaims) asks S3 for the object's metadata first: when
// the shim's head generation there is the one of the head the container holds
// (summary-metadata.ts), that head is used again, dated by the new object, and nothing is
// downloaded; the pods and times change every few seconds, the head far less often.
//
// The object is untrusted input (the shim's role writes it): its size is checked before it is
// downloaded and unzipping stops at a cap, so a small object that unzips to gigabytes costs
// nothing; and its age is S3's, not the document's: it counts from the object's LastModified, less
// how far behind the document says its slowest watch was, and a document that dates itself ahead
// of LastModified is refused.

const gunzipAsync = promisify(gunzip);

/** What zlib hands back at a time while unzipping a summary. */
const UNZIP_CHUNK_BYTES = 4 << 20;

export interface S3SummarySourceOptions {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly cluster: string;
  /** The most a summary may hold (summaryLimitsFor the stack's clusterSize). */
  readonly limits: SummaryLimits;
}

/** What one container has read so far. */
export interface SummaryReadStats {
  readonly reads: number;
  /** Reads S3 answered with the whole object. */
  readonly downloads: number;
  readonly bytesDownloaded: number;
  /** HeadObject requests (head reads in a container that holds a head). */
  readonly headRequests: number;
  /** Head reads served by the head held, nothing downloaded. */
  readonly headsReused: number;
}

export function makeS3SummarySource(options: S3SummarySourceOptions): SummarySource & {
  readHead(): Promise<ClusterSummaryHead | undefined>;
  stats(): SummaryReadStats;
} {
  const key = summaryObjectKey(options.cluster);
  const where = `s3://${options.bucket}/${key}`;
  let last:
    | { readonly etag: string; readonly summary: ClusterSummary; readonly head: string | undefined }
    | undefined;
  let reads = 0;
  let downloads = 0;
  let bytesDownloaded = 0;
  let headRequests = 0;
  let headsReused = 0;
  let inFlight: Promise<ClusterSummary | undefined> | undefined;
  let headInFlight: Promise<ClusterSummaryHead | undefined> | undefined;
  // A changed summary converts only the objects that changed since the last one.
  const conversions = makeSummaryConversions();
  const readOnce = async (): Promise<ClusterSummary | undefined> => {
    reads += 1;
    let body: Uint8Array;
    let etag: string | undefined;
    let storedAtMs: number | undefined;
    let head: string | undefined;
    try {
      const out = await options.s3.send(
        new GetObjectCommand({
          Bucket: options.bucket,
          Key: key,
          ...(last === undefined ? {} : { IfNoneMatch: last.etag }),
        }),
      );
      etag = out.ETag;
      storedAtMs = out.LastModified?.getTime();
      head = readSummaryObjectMetadata(out.Metadata)?.head;
      const length = out.ContentLength;
      if (length === undefined || length > options.limits.storedBytes) {
        // The body is left unread: the connection is closed, not drained.
        (out.Body as { destroy?: () => void } | undefined)?.destroy?.();
        throw new SummaryTooLargeError(
          `s3://${options.bucket}/${key} is ${length ?? 'of unknown size'} bytes, over the ${options.limits.storedBytes} the stack's clusterSize allows`,
        );
      }
      body = (await out.Body?.transformToByteArray()) ?? new Uint8Array();
    } catch (error) {
      if (error instanceof SummaryTooLargeError) throw error;
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
    if (storedAtMs === undefined || Number.isNaN(storedAtMs)) {
      throw new SummaryUnavailableError(`s3://${options.bucket}/${key} came without a LastModified time`);
    }
    let text: Buffer;
    try {
      // Unzipped off the main thread: the invocation's other reads go on meanwhile. In chunks of
      // 4 MiB rather than zlib's 16 KiB, so a document of tens of MB comes back in a few callbacks
      // on the main thread instead of thousands.
      text = await gunzipAsync(body, {
        maxOutputLength: options.limits.textBytes,
        chunkSize: UNZIP_CHUNK_BYTES,
      });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new SummaryTooLargeError(
          `s3://${options.bucket}/${key} unzips to more than the ${options.limits.textBytes} bytes the stack's clusterSize allows`,
          { cause: error },
        );
      }
      throw unreadable(error);
    }
    let summary: ClusterSummary;
    try {
      summary = withPodErrorsAs(readSummaryDocument(text, conversions, options.limits), unreadable);
    } catch (error) {
      if (error instanceof SummaryUnavailableError) throw error;
      throw unreadable(error);
    }
    summary = datedByStore(summary, storedAtMs, `s3://${options.bucket}/${key}`);
    if (summary.cluster !== options.cluster) {
      throw new SummaryUnavailableError(
        `s3://${options.bucket}/${key} is the summary of cluster "${summary.cluster}", not "${options.cluster}"`,
      );
    }
    if (etag !== undefined) last = { etag, summary, head };
    return summary;
  };
  const read = () => {
    inFlight ??= readOnce().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  /** The head held, when the object's metadata shows it unchanged; else the summary downloaded. */
  const readHeadOnce = async (): Promise<ClusterSummaryHead | undefined> => {
    const held = last;
    if (held?.head === undefined) return read();
    headRequests += 1;
    let out: HeadObjectCommandOutput;
    try {
      out = await options.s3.send(new HeadObjectCommand({ Bucket: options.bucket, Key: key }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const name = (error as { name?: unknown }).name;
      if (status === 404 || name === 'NotFound' || name === 'NoSuchKey') return undefined;
      throw new SummaryUnavailableError(
        `${where} could not be read: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    if (out.ETag !== undefined && out.ETag === held.etag) {
      headsReused += 1;
      return held.summary;
    }
    const metadata = readSummaryObjectMetadata(out.Metadata);
    if (metadata === undefined || metadata.head !== held.head) return read();
    const storedAtMs = out.LastModified?.getTime();
    if (storedAtMs === undefined || Number.isNaN(storedAtMs)) {
      throw new SummaryUnavailableError(`${where} came without a LastModified time`);
    }
    headsReused += 1;
    const { cluster, nodeInfos, nodeClaims } = held.summary;
    return datedByStore(
      {
        cluster,
        publishedAtMs: metadata.publishedAtMs,
        currentAtMs: metadata.currentAtMs,
        nodeInfos,
        nodeClaims,
      },
      storedAtMs,
      where,
    );
  };
  return {
    // Reads that overlap (an invocation reading Nodes and NodeClaims at once) share one request.
    read,
    // A head read joins a whole read under way (it holds the head too); a whole read never joins a
    // head read, which may serve an older document's head. Within one invocation, a head read
    // started after a whole read (as readClusterObjects orders them) sees the same document.
    readHead() {
      if (inFlight !== undefined) return inFlight;
      headInFlight ??= readHeadOnce().finally(() => {
        headInFlight = undefined;
      });
      return headInFlight;
    },
    stats: () => ({ reads, downloads, bytesDownloaded, headRequests, headsReused }),
  };
}

/**
 * The summary with its times taken from its store: published when the store says it was written,
 * and current up to that less how far the document says its slowest watch was behind then. The
 * document's own times count only against each other, so a shim whose clock runs ahead, or a
 * hostile document, can make a summary look no younger than its store's time.
 * @throws SummaryDatedAheadError when the document dates itself (or a watch) after `storedAtMs`.
 */
export function datedByStore<T extends ClusterSummaryHead>(summary: T, storedAtMs: number, where: string): T {
  const latest = Math.max(summary.publishedAtMs, summary.currentAtMs);
  if (latest > storedAtMs + SUMMARY_CLOCK_TOLERANCE_MS) {
    throw new SummaryDatedAheadError(
      `${where} says it was written at ${new Date(latest).toISOString()}, ${Math.round((latest - storedAtMs) / 1000)} s after S3 stored it (${new Date(storedAtMs).toISOString()}); is the shim's node clock ahead?`,
    );
  }
  const behindMs = Math.max(0, summary.publishedAtMs - summary.currentAtMs);
  return { ...summary, publishedAtMs: storedAtMs, currentAtMs: storedAtMs - behindMs };
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
