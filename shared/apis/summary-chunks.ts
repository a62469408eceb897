import type { SummaryDocument } from './summary-document.ts';

// The published document's text in pieces of about a megabyte, for the shim to gzip as it goes:
// the whole text of a 5,000-node summary is over 50 MB, and holding it (and its bytes) at once
// while the previous one is still garbage doubles the shim's memory at every publish. The pieces
// joined are exactly encodeSummaryDocument's text: the same members in the same order, each list
// written item by item with JSON.stringify.

/** About how many characters a piece holds. */
export const SUMMARY_CHUNK_CHARS = 1 << 20;

/**
 * The document's text (encodeSummaryDocument) in pieces of about `chunkChars` characters; a piece
 * may be longer by one list item.
 */
export function* summaryDocumentChunks(
  document: SummaryDocument,
  chunkChars: number = SUMMARY_CHUNK_CHARS,
): Generator<string, void, undefined> {
  yield* recordChunks(document.head, new Set(['nodes', 'nodeClaims']), chunkChars);
  yield '\n';
  yield* recordChunks(document.pods, new Set(['podTemplates', 'pods']), chunkChars);
}

/**
 * A JSON object's text as JSON.stringify writes it, the members named in `lists` (when they are
 * lists) item by item: a member JSON.stringify leaves out (undefined) is left out, a list item it
 * writes as null (undefined) is null.
 */
function* recordChunks(
  record: object,
  lists: ReadonlySet<string>,
  chunkChars: number,
): Generator<string, void, undefined> {
  let text = '{';
  let first = true;
  for (const [key, value] of Object.entries(record)) {
    if (lists.has(key) && Array.isArray(value)) {
      text += `${first ? '' : ','}${JSON.stringify(key)}:[`;
      for (let i = 0; i < value.length; i++) {
        text += `${i === 0 ? '' : ','}${JSON.stringify(value[i]) ?? 'null'}`;
        if (text.length >= chunkChars) {
          yield text;
          text = '';
        }
      }
      text += ']';
    } else {
      const json = JSON.stringify(value) as string | undefined;
      if (json === undefined) continue;
      text += `${first ? '' : ','}${JSON.stringify(key)}:${json}`;
    }
    first = false;
  }
  yield `${text}}`;
}
