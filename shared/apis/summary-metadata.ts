import { SUMMARY_KINDS, type SummaryKind } from './summary-document.ts';

// What the shim stores beside each published summary, as the object's user metadata: the
// generation of its head (the Nodes and NodeClaims) and the document's own times. A reader that
// already holds the head of an earlier document of the same generation uses it again, dated anew,
// instead of downloading the whole object; the pods, the times and the publication change far more
// often than the head does. The metadata is as untrusted as the document: a false generation can
// only make a reader use again a head it had read before, which replaying an old document can do
// as well, and its times are judged against the store's as the document's are.

/** The metadata keys (S3 keeps user metadata keys in lower case). */
export const SUMMARY_METADATA_KEYS = {
  head: 'flotilla-head',
  publishedAt: 'flotilla-published-at',
  current: 'flotilla-current',
} as const;

/** A head generation: the publishing shim's boot id and its count of changes to the head. */
const GENERATION = /^[A-Za-z0-9-]{1,64}\.\d{1,15}$/;

/** What a reader takes from an object's metadata. */
export interface SummaryObjectMetadata {
  readonly head: string;
  /** When the document says it was published (epoch ms). */
  readonly publishedAtMs: number;
  /** Up to when the document says its slowest watch was current (epoch ms). */
  readonly currentAtMs: number;
}

/** The generation of a head: `bootId` names the builder, `changes` its headGeneration(). */
export function headGeneration(bootId: string, changes: number): string {
  return `${bootId}.${changes}`;
}

/** The metadata of a document published at `publishedAt` with its watches current as `current`. */
export function summaryObjectMetadata(
  head: string,
  publishedAt: string,
  current: Readonly<Record<SummaryKind, string>>,
): Record<string, string> {
  const slowest = Math.min(...SUMMARY_KINDS.map((kind) => Date.parse(current[kind])));
  return {
    [SUMMARY_METADATA_KEYS.head]: head,
    [SUMMARY_METADATA_KEYS.publishedAt]: publishedAt,
    [SUMMARY_METADATA_KEYS.current]: new Date(slowest).toISOString(),
  };
}

/**
 * The metadata read back from a stored object, or undefined when it has none that this version
 * reads (an older shim's object, or one written by hand): the reader then downloads the document.
 */
export function readSummaryObjectMetadata(
  metadata: Readonly<Record<string, string | undefined>> | undefined,
): SummaryObjectMetadata | undefined {
  const head = metadata?.[SUMMARY_METADATA_KEYS.head];
  const publishedAtMs = Date.parse(metadata?.[SUMMARY_METADATA_KEYS.publishedAt] ?? '');
  const currentAtMs = Date.parse(metadata?.[SUMMARY_METADATA_KEYS.current] ?? '');
  if (head === undefined || !GENERATION.test(head)) return undefined;
  if (Number.isNaN(publishedAtMs) || Number.isNaN(currentAtMs)) return undefined;
  return { head, publishedAtMs, currentAtMs };
}
