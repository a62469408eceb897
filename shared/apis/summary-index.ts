import { ValidationError } from '../core/index.ts';
import type { SummaryIndex } from '../ports/summary.ts';
import { isRecord } from './fields.ts';
import { SUMMARY_KINDS, type SummaryDocument, type SummaryKind } from './summary-document.ts';

// The summary's index: a few counts the shim publishes beside each document, in the stored
// object's metadata (S3 user metadata, `x-amz-meta-flotilla-index`), so that a Lambda can learn
// whether the cluster has anything for it beyond what it reads from the API server without
// downloading the document: a HEAD of the object. The provisioner's run with nothing pending asks
// only this: is any Node going away (its pods need a place), and does any NodeClaim wait for its
// launch?
//
// Like the document, it is untrusted input (written with the shim's role). It may only send a
// reader to the document or to the API server, or let a run with nothing pending end early; its
// age is the store's (LastModified), as the document's is. Metadata holds at most 2 KB, so the
// index is counts and times only, never names.

/** The S3 user-metadata key the index is stored under (sent as `x-amz-meta-flotilla-index`). */
export const SUMMARY_INDEX_METADATA = 'flotilla-index';

/** The index's format; a reader refuses another. */
export const SUMMARY_INDEX_VERSION = 'flotilla.summary-index/v1';

/** The index as published: plain JSON, ASCII only (S3 metadata values are US-ASCII). */
export interface SummaryIndexDocument {
  readonly version: typeof SUMMARY_INDEX_VERSION;
  readonly cluster: string;
  readonly publishedAt: string;
  readonly current: Readonly<Record<SummaryKind, string>>;
  readonly counts: Readonly<Record<SummaryKind, number>>;
  /**
   * Nodes going away: with a deletionTimestamp, or whose NodeClaim (by providerID, else by its
   * status.nodeName) has one (as the provisioner's isDeletingNode reads them).
   */
  readonly leavingNodes: number;
  /** NodeClaims with a deletionTimestamp. */
  readonly deletingNodeClaims: number;
  /** NodeClaims not being deleted, without a providerID and not Launched: they wait for a launch. */
  readonly unlaunchedNodeClaims: number;
}

const part = (raw: unknown, key: string) => (isRecord(raw) && isRecord(raw[key]) ? raw[key] : undefined);
const deleting = (raw: unknown) => part(raw, 'metadata')?.['deletionTimestamp'] != null;
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** How many of the Nodes are going away (see SummaryIndexDocument.leavingNodes). */
function leaving(nodes: readonly unknown[], claims: readonly unknown[]): number {
  const providers = new Set<string>();
  const names = new Set<string>();
  for (const claim of claims.filter(deleting)) {
    const status = part(claim, 'status');
    const provider = text(status?.['providerID']);
    const node = text(status?.['nodeName']);
    if (provider !== undefined) providers.add(provider);
    if (node !== undefined) names.add(node);
  }
  return nodes.filter((node) => {
    if (deleting(node)) return true;
    const provider = text(part(node, 'spec')?.['providerID']);
    const name = text(part(node, 'metadata')?.['name']);
    return (provider !== undefined && providers.has(provider)) || (name !== undefined && names.has(name));
  }).length;
}

/** Whether a NodeClaim as stored waits for its launch (as the provisioner's isUnlaunched reads it converted). */
function unlaunched(raw: unknown): boolean {
  if (deleting(raw)) return false;
  const status = part(raw, 'status');
  if (text(status?.['providerID']) !== undefined) return false;
  const conditions = Array.isArray(status?.['conditions']) ? status['conditions'] : [];
  return !conditions.some((c) => isRecord(c) && c['type'] === 'Launched' && c['status'] === 'True');
}

/** The index of a document, as the shim publishes it beside the document. */
export function summaryIndexOf(document: SummaryDocument): SummaryIndexDocument {
  const { head } = document;
  return {
    version: SUMMARY_INDEX_VERSION,
    cluster: head.cluster,
    publishedAt: head.publishedAt,
    current: head.current,
    counts: head.counts,
    leavingNodes: leaving(head.nodes, head.nodeClaims),
    deletingNodeClaims: head.nodeClaims.filter(deleting).length,
    unlaunchedNodeClaims: head.nodeClaims.filter(unlaunched).length,
  };
}

/**
 * The index's metadata value. A cluster name outside printable ASCII is escaped (`\uXXXX`), so the
 * value stays what S3 accepts.
 */
export function encodeSummaryIndex(index: SummaryIndexDocument): string {
  return JSON.stringify(index).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Longest metadata value read: S3 allows 2 KB of user metadata in all. */
const MAX_INDEX_LENGTH = 2_048;

/**
 * Reads an index from its metadata value.
 * @throws ValidationError when it is not an index this version reads: too long, not JSON, another
 *   version, a time that is not one, or a count that is not a whole number at least 0.
 */
export function readSummaryIndex(value: string): SummaryIndex {
  const object = 'cluster summary index';
  if (value.length > MAX_INDEX_LENGTH) {
    throw new ValidationError(object, '(root)', `${value.length} characters, more than ${MAX_INDEX_LENGTH}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new ValidationError(object, '(root)', 'not JSON', { cause: error });
  }
  if (!isRecord(parsed)) throw new ValidationError(object, '(root)', 'not a JSON object');
  if (parsed['version'] !== SUMMARY_INDEX_VERSION) {
    throw new ValidationError(
      object,
      'version',
      `${JSON.stringify(parsed['version'])} is not ${SUMMARY_INDEX_VERSION}; the shim and the Lambdas are of different versions`,
    );
  }
  const time = (raw: unknown, field: string): number => {
    const ms = typeof raw === 'string' ? Date.parse(raw) : Number.NaN;
    if (Number.isNaN(ms)) throw new ValidationError(object, field, `${JSON.stringify(raw)} is not a time`);
    return ms;
  };
  const count = (raw: unknown, field: string): number => {
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) {
      throw new ValidationError(object, field, `${JSON.stringify(raw)} is not a count`);
    }
    return raw;
  };
  if (typeof parsed['cluster'] !== 'string') {
    throw new ValidationError(object, 'cluster', `${JSON.stringify(parsed['cluster'])} is not a name`);
  }
  const current = isRecord(parsed['current']) ? parsed['current'] : {};
  const counts = isRecord(parsed['counts']) ? parsed['counts'] : {};
  return {
    cluster: parsed['cluster'],
    publishedAtMs: time(parsed['publishedAt'], 'publishedAt'),
    currentAtMs: Math.min(...SUMMARY_KINDS.map((k) => time(current[k], `current.${k}`))),
    counts: {
      pods: count(counts['pods'], 'counts.pods'),
      nodes: count(counts['nodes'], 'counts.nodes'),
      nodeClaims: count(counts['nodeClaims'], 'counts.nodeClaims'),
    },
    leavingNodes: count(parsed['leavingNodes'], 'leavingNodes'),
    deletingNodeClaims: count(parsed['deletingNodeClaims'], 'deletingNodeClaims'),
    unlaunchedNodeClaims: count(parsed['unlaunchedNodeClaims'], 'unlaunchedNodeClaims'),
  };
}
