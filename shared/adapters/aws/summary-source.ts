import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import {
  GetObjectCommand,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';
import {
  makeSummaryConversions,
  parseSummaryDocument,
  parseSummaryJson,
  type SummaryParts,
  summaryFromParts,
} from '../../apis/cluster-summary.ts';
import { applySummaryChanges, parseSummaryChanges } from '../../apis/summary-apply.ts';
import { summaryChangesObjectKey } from '../../apis/summary-changes.ts';
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

// The cluster summary as a Lambda reads it. The shim publishes its whole document now and then (the
// base) and, every few seconds, the changes since that base (summary-changes.ts), which name the
// base by its ETag. A read gets the changes object; a container that holds the base it names
// applies them to it, and one that does not reads the base once and keeps it. So a warm container
// downloads, unzips and parses a few KB where it used to take the whole cluster (tens of MB of
// text at 5,000 nodes). When the base was replaced after the changes were read, the new base is
// read alone (it is newer than they are); without a changes object (an older shim), the base is
// read alone too. A warm container keeps the last summary it read with its object's ETag and asks
// S3 only whether it changed (If-None-Match), so an unchanged summary costs one small request and
// no conversion; so does a base held that the changes do not name (another writer's, while it
// stands). A document's pods are parsed only when a read needs them, and a failure then is
// the same SummaryUnavailableError as one now.
// A read of the head alone (Nodes and NodeClaims) asks S3 for the object's metadata first: when
// the shim's head generation there is the one of the head the container holds
// (summary-metadata.ts), that head is used again, dated by the new object, and nothing is
// downloaded; the pods and times change every few seconds, the head far less often.
//
// Both objects are untrusted input (the shim's role writes them): their size is checked before it is
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
  /** A changes object older than this is passed over for the base alone. @default 60_000 */
  readonly changesStaleMs?: number;
}

/** What one container has read so far. */
export interface SummaryReadStats {
  readonly reads: number;
  /** Objects S3 answered with a body (a changes object or a base). */
  readonly downloads: number;
  /** Bases downloaded (whole documents). */
  readonly baseDownloads: number;
  readonly bytesDownloaded: number;
  /** HeadObject requests (head reads in a container that holds a head). */
  readonly headRequests: number;
  /** Head reads served by the head held, nothing downloaded. */
  readonly headsReused: number;
}

/**
 * A changes object older than this is passed over for the base alone: the shim rewrites it at least
 * every heartbeat (15 s), so an older one is no longer written (a shim of an older version runs).
 */
const CHANGES_STALE_MS = 60_000;

/** What S3 says of an object it sent: its ETag, when it stored it, the shim's head generation. */
interface Stored {
  readonly etag: string | undefined;
  readonly storedAtMs: number;
  readonly head: string | undefined;
}

/** One object as S3 gave it, unzipped. */
interface Fetched extends Stored {
  readonly text: Buffer;
}

export function makeS3SummarySource(options: S3SummarySourceOptions): SummarySource & {
  readHead(): Promise<ClusterSummaryHead | undefined>;
  stats(): SummaryReadStats;
} {
  const baseKey = summaryObjectKey(options.cluster);
  const changesKey = summaryChangesObjectKey(options.cluster);
  const at = (key: string) => `s3://${options.bucket}/${key}`;
  /** The summary last read, with the object it came from (the changes object, or a base alone). */
  let last:
    | {
        readonly key: string;
        readonly etag: string;
        readonly storedAtMs: number;
        readonly summary: ClusterSummary;
        readonly head: string | undefined;
      }
    | undefined;
  /** The last base read, parsed: the next changes naming it apply to it. */
  let base: { readonly etag: string; readonly parts: SummaryParts; readonly stored: Stored } | undefined;
  /** Whether this container has seen a changes object (then heads are judged by it). */
  let changesSeen = false;
  let reads = 0;
  let downloads = 0;
  let baseDownloads = 0;
  let bytesDownloaded = 0;
  let headRequests = 0;
  let headsReused = 0;
  let inFlight: Promise<ClusterSummary | undefined> | undefined;
  let headInFlight: Promise<ClusterSummaryHead | undefined> | undefined;
  // A changed summary converts only the objects that changed since the last one.
  const conversions = makeSummaryConversions();
  const unreadable = (key: string) => (error: unknown) =>
    error instanceof SummaryUnavailableError
      ? error
      : new SummaryUnavailableError(
          `${at(key)} is not a cluster summary: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );

  /** The object at `key` unzipped; 'unchanged' on a 304, undefined when there is none. */
  const fetch = async (key: string, ifNoneMatch?: string): Promise<Fetched | 'unchanged' | undefined> => {
    let body: Uint8Array;
    let etag: string | undefined;
    let storedAtMs: number | undefined;
    let head: string | undefined;
    try {
      const out = await options.s3.send(
        new GetObjectCommand({
          Bucket: options.bucket,
          Key: key,
          ...(ifNoneMatch === undefined ? {} : { IfNoneMatch: ifNoneMatch }),
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
          `${at(key)} is ${length ?? 'of unknown size'} bytes, over the ${options.limits.storedBytes} the stack's clusterSize allows`,
        );
      }
      body = (await out.Body?.transformToByteArray()) ?? new Uint8Array();
    } catch (error) {
      if (error instanceof SummaryTooLargeError) throw error;
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const name = (error as { name?: unknown }).name;
      if ((status === 304 || name === 'NotModified') && ifNoneMatch !== undefined) return 'unchanged';
      if (status === 404 || name === 'NoSuchKey') return undefined;
      // S3 answers 403 for a key that is not there to a role that may not list the bucket (the
      // Lambdas may only get the two objects): for the changes object that is its absence.
      if (key === changesKey && (status === 403 || name === 'AccessDenied')) return undefined;
      throw new SummaryUnavailableError(
        `${at(key)} could not be read: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    downloads += 1;
    bytesDownloaded += body.length;
    if (storedAtMs === undefined || Number.isNaN(storedAtMs)) {
      throw new SummaryUnavailableError(`${at(key)} came without a LastModified time`);
    }
    try {
      // Unzipped off the main thread: the invocation's other reads go on meanwhile. In chunks of
      // 4 MiB rather than zlib's 16 KiB, so a document of tens of MB comes back in a few callbacks
      // on the main thread instead of thousands.
      const text = await gunzipAsync(body, {
        maxOutputLength: options.limits.textBytes,
        chunkSize: UNZIP_CHUNK_BYTES,
      });
      return { text, etag, storedAtMs, head };
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new SummaryTooLargeError(
          `${at(key)} unzips to more than the ${options.limits.textBytes} bytes the stack's clusterSize allows`,
          { cause: error },
        );
      }
      throw unreadable(key)(error);
    }
  };

  /** The base document's parts, kept as the base for the changes that name its ETag. */
  const readBase = (fetched: Fetched): SummaryParts => {
    baseDownloads += 1;
    let parts: SummaryParts;
    try {
      parts = parseSummaryDocument(fetched.text, options.limits);
    } catch (error) {
      throw unreadable(baseKey)(error);
    }
    const { etag, storedAtMs, head } = fetched;
    base = etag === undefined ? undefined : { etag, parts, stored: { etag, storedAtMs, head } };
    return parts;
  };

  /** The summary of `parts`, dated by the object it came from, kept as the last one read. */
  const finish = (parts: SummaryParts, key: string, fetched: Stored): ClusterSummary => {
    let summary = withPodErrorsAs(summaryFromParts(parts, conversions), unreadable(key));
    summary = datedByStore(summary, fetched.storedAtMs, at(key));
    if (summary.cluster !== options.cluster) {
      throw new SummaryUnavailableError(
        `${at(key)} is the summary of cluster "${summary.cluster}", not "${options.cluster}"`,
      );
    }
    if (fetched.etag !== undefined) {
      last = { key, etag: fetched.etag, storedAtMs: fetched.storedAtMs, summary, head: fetched.head };
    }
    return summary;
  };

  /** The base alone: no changes object, or changes no longer written. */
  const readBaseAlone = async (): Promise<ClusterSummary | undefined> => {
    const got = await fetch(baseKey, last?.key === baseKey ? last.etag : undefined);
    if (got === 'unchanged') return last?.summary;
    if (got === undefined) return undefined;
    return finish(readBase(got), baseKey, got);
  };

  const readOnce = async (): Promise<ClusterSummary | undefined> => {
    reads += 1;
    const fetched = await fetch(changesKey, last?.key === changesKey ? last.etag : undefined);
    // Changes no longer written (a shim of an older version writes only the base) are passed over.
    const stale = (storedAtMs: number) =>
      Date.now() - storedAtMs > (options.changesStaleMs ?? CHANGES_STALE_MS);
    if (fetched === 'unchanged') {
      if (last?.key === changesKey && stale(last.storedAtMs)) return readBaseAlone();
      return last?.summary;
    }
    if (fetched === undefined || stale(fetched.storedAtMs)) return readBaseAlone();
    changesSeen = true;
    let changes: ReturnType<typeof parseSummaryChanges>;
    try {
      changes = parseSummaryChanges(parseSummaryJson(fetched.text.toString('utf8'), '(changes)'));
    } catch (error) {
      throw unreadable(changesKey)(error);
    }
    let parts = base?.etag === changes.base ? base.parts : undefined;
    if (parts === undefined) {
      // The base held is not the one the changes name. S3 holds a newer base, or still the one
      // held (another writer's, while it stands), which it need not send again.
      const held = base;
      const got = await fetch(baseKey, held?.etag);
      if (got === 'unchanged' && held !== undefined) {
        if (last?.key === baseKey && last.etag === held.etag) return last.summary;
        return finish(held.parts, baseKey, held.stored);
      }
      if (got === undefined || got === 'unchanged') {
        throw new SummaryUnavailableError(`${at(changesKey)} names a base that ${at(baseKey)} does not hold`);
      }
      parts = readBase(got);
      // Written after the changes read (a new base is written before the changes that name it).
      if (got.etag !== changes.base) return finish(parts, baseKey, got);
    }
    try {
      parts = applySummaryChanges(parts, changes, options.limits);
    } catch (error) {
      throw unreadable(changesKey)(error);
    }
    return finish(parts, changesKey, fetched);
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
    // Once changes were seen, only they tell whether a head is current (a base alone may be old).
    if (held?.head === undefined || (changesSeen && held.key !== changesKey)) return read();
    headRequests += 1;
    let out: HeadObjectCommandOutput;
    try {
      out = await options.s3.send(new HeadObjectCommand({ Bucket: options.bucket, Key: held.key }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const name = (error as { name?: unknown }).name;
      if (status === 404 || name === 'NotFound' || name === 'NoSuchKey') return read();
      throw new SummaryUnavailableError(
        `${at(held.key)} could not be read: ${error instanceof Error ? error.message : String(error)}`,
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
      throw new SummaryUnavailableError(`${at(held.key)} came without a LastModified time`);
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
      at(held.key),
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
    stats: () => ({ reads, downloads, baseDownloads, bytesDownloaded, headRequests, headsReused }),
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
