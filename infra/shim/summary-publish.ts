import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { summaryChanges } from '../../shared/apis/summary-changes.ts';
import { summaryDocumentChunks } from '../../shared/apis/summary-chunks.ts';
import type {
  SummaryBuilder,
  SummaryDocument,
  SummaryKind,
  SummarySnapshot,
} from '../../shared/apis/summary-document.ts';

// How the shim publishes its summary: its whole document (the base) now and then, and at its fast
// cadence the changes since that base (summary-changes.ts), which name the base by the ETag the
// store gave it. A new base is written when the changes would be more than an eighth of the base's
// text (they count from the base, so they grow until then), when a pod without a uid changed (a
// reader finds pods by uid), when no base was written yet, when the
// store gave the last one no ETag or a write of one failed (the object may hold it or not), and every
// few minutes: another writer of the base (a second shim while a Deployment rolls) leaves changes
// that name a base no longer there, which readers can only read as the other base alone, and it
// ages. A new base is followed at once by changes that name it and change nothing, so readers move
// to it; until they are written, a reader that reads the old changes finds the base replaced and
// reads the new one alone.

/** Which of the two objects a body is. */
export type SummaryObject = 'base' | 'changes';

/** Stores one object; gives the ETag the store gave it (a base needs it for its changes). */
export type StoreSummaryObject = (
  object: SummaryObject,
  body: Buffer,
  metadata: Readonly<Record<string, string>>,
) => Promise<{ readonly etag?: string | undefined } | undefined>;

/** Changes up to this share of the base's text are published as changes; more, and a new base is. */
const REBASE_SHARE = 1 / 8;

/** Changes of up to this many bytes of text never bring a new base (a small cluster's base is small). */
const REBASE_FLOOR_BYTES = 64 * 1_024;

/** A base is written again at least this often. */
const REBASE_EVERY_MS = 5 * 60_000;

/** The gzip level of both objects. */
const GZIP_LEVEL = 4;

/**
 * The text's pieces gzipped as they come, so the whole text (over 50 MB at 5,000 nodes) is never
 * held at once: only the gzipped bytes, a few MB, are. Gives the bytes and how long the text was.
 */
async function gzipPieces(pieces: Iterable<string>): Promise<{ body: Buffer; textBytes: number }> {
  const zip = createGzip({ level: GZIP_LEVEL });
  const out: Buffer[] = [];
  let textBytes = 0;
  zip.on('data', (chunk: Buffer) => out.push(chunk));
  const ended = once(zip, 'end');
  // An error rejects `ended` too: it is awaited below, after the writes.
  ended.catch(() => undefined);
  for (const piece of pieces) {
    textBytes += Buffer.byteLength(piece);
    if (!zip.write(piece)) await Promise.race([once(zip, 'drain'), ended]);
  }
  zip.end();
  await ended;
  return { body: Buffer.concat(out), textBytes };
}

/** The document's text (encodeSummaryDocument) gzipped as it is published, piece by piece. */
export async function gzipSummary(document: SummaryDocument): Promise<Buffer> {
  return (await gzipPieces(summaryDocumentChunks(document))).body;
}

/** What one publish wrote. */
export interface Published {
  /** Whether a new base was written (then changes naming it too). */
  readonly rebased: boolean;
  /** Bytes stored, both objects together. */
  readonly bytes: number;
}

/** The base last written, and what the builder held when it was. */
interface Base {
  readonly etag: string;
  readonly snapshot: SummarySnapshot;
  readonly textBytes: number;
  readonly atMs: number;
}

/** Publishes `builder`'s summary as a base and its changes, through `store`. */
export function makeSummaryPublisher(
  builder: SummaryBuilder,
  store: StoreSummaryObject,
  options: { readonly rebaseEveryMs?: number; readonly now?: () => number } = {},
): (
  publishedAt: string,
  current: Readonly<Record<SummaryKind, string>>,
  metadata: Readonly<Record<string, string>>,
) => Promise<Published> {
  const rebaseEveryMs = options.rebaseEveryMs ?? REBASE_EVERY_MS;
  const clock = options.now ?? Date.now;
  let base: Base | undefined;
  const writeChanges = async (
    from: Base,
    now: SummarySnapshot,
    publishedAt: string,
    current: Readonly<Record<SummaryKind, string>>,
    metadata: Readonly<Record<string, string>>,
    force: boolean,
  ): Promise<number | undefined> => {
    const changes = summaryChanges(from.snapshot, now, {
      cluster: builder.cluster,
      base: from.etag,
      publishedAt,
      current,
    });
    if (changes === undefined) return undefined;
    const text = JSON.stringify(changes);
    const bytes = Buffer.byteLength(text);
    if (!force && bytes > Math.max(REBASE_FLOOR_BYTES, from.textBytes * REBASE_SHARE)) return undefined;
    const { body } = await gzipPieces([text]);
    await store('changes', body, metadata);
    return body.length;
  };
  return async (publishedAt, current, metadata) => {
    if (base !== undefined && clock() - base.atMs < rebaseEveryMs) {
      const bytes = await writeChanges(base, builder.snapshot(), publishedAt, current, metadata, false);
      if (bytes !== undefined) return { rebased: false, bytes };
    }
    // The document and its snapshot are taken together, before anything is awaited.
    const document = builder.document(publishedAt, current);
    const snapshot = builder.snapshot();
    const atMs = clock();
    const { body, textBytes } = await gzipPieces(summaryDocumentChunks(document));
    // Until the store answers, no base is known: a failed write may have replaced the last one.
    base = undefined;
    const etag = (await store('base', body, metadata))?.etag;
    if (etag === undefined) return { rebased: true, bytes: body.length };
    base = { etag, snapshot, textBytes, atMs };
    const changed = await writeChanges(base, snapshot, publishedAt, current, metadata, true);
    return { rebased: true, bytes: body.length + (changed ?? 0) };
  };
}
