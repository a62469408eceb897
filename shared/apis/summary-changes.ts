import type { PodTemplate } from './pod-templates.ts';
import {
  type PodRow,
  podRow,
  type SummaryKind,
  type SummarySnapshot,
  sameInstance,
} from './summary-document.ts';

// The changes since a published summary document. The shim publishes its whole document (the
// base, at summaryObjectKey) now and then, and, at its fast cadence, a small object beside it
// (summaryChangesObjectKey) that names the base by its ETag and holds every object upserted or
// removed since that base, with the templates the upserted pods use. The changes are counted from
// the base, not from the last changes object: a reader that holds the base needs only the latest
// changes object, whichever ones it missed. A reader that does not hold the base reads it once.
// Both objects are as untrusted as the document always was: the reader checks the merged counts,
// sizes and times as it checks a whole document's.

export const SUMMARY_CHANGES_VERSION = 'flotilla.cluster-summary-changes/v1';

/** Where in its bucket a cluster's summary changes are published (gzipped JSON, one value). */
export function summaryChangesObjectKey(cluster: string): string {
  return `clusters/${cluster}/summary-changes.json.gz`;
}

/** Nodes or NodeClaims upserted (pruned, whole) and removed (by key, as the builder keys them). */
export interface ObjectChanges {
  readonly upserts: readonly unknown[];
  readonly removals: readonly string[];
}

/** Pods upserted (rows whose template indices count in `podTemplates`) and removed (by uid). */
export interface PodChanges {
  readonly podTemplates: readonly PodTemplate[];
  readonly upserts: readonly PodRow[];
  readonly removals: readonly string[];
}

/** The published changes object. */
export interface SummaryChanges {
  readonly version: typeof SUMMARY_CHANGES_VERSION;
  readonly cluster: string;
  /** The ETag of the base document (at summaryObjectKey) these changes are counted from. */
  readonly base: string;
  /** When the shim wrote it (RFC 3339). */
  readonly publishedAt: string;
  /** Per kind: up to when its watch is known to have been current (RFC 3339). */
  readonly current: Readonly<Record<SummaryKind, string>>;
  /** How many objects of each kind the base holds with these changes applied. */
  readonly counts: Readonly<Record<SummaryKind, number>>;
  readonly nodes: ObjectChanges;
  readonly nodeClaims: ObjectChanges;
  readonly pods: PodChanges;
}

/** What names a changes object besides its content. */
export interface SummaryChangesAbout {
  readonly cluster: string;
  readonly base: string;
  readonly publishedAt: string;
  readonly current: Readonly<Record<SummaryKind, string>>;
}

/**
 * The changes from `base` (the snapshot taken with the base document) to `now`. An object kept as
 * the same value is unchanged (the builder replaces what changes); a pod relisted as a new value
 * with the same template and fields is unchanged too. Undefined when a pod that changed has no uid
 * (a reader finds a pod's row by its uid): the caller then writes a new base.
 */
export function summaryChanges(
  base: SummarySnapshot,
  now: SummarySnapshot,
  about: SummaryChangesAbout,
): SummaryChanges | undefined {
  const podTemplates: PodTemplate[] = [];
  const templateIndex = new Map<string, number>();
  const upserts: PodRow[] = [];
  for (const [key, pod] of now.pods) {
    const was = base.pods.get(key);
    if (was === pod || (was?.key === pod.key && sameInstance(was.instance, pod.instance))) continue;
    if (!hasUid(pod.instance.uid)) return undefined;
    let index = templateIndex.get(pod.key);
    if (index === undefined) {
      index = podTemplates.length;
      templateIndex.set(pod.key, index);
      podTemplates.push(now.templates.get(pod.key) ?? {});
    }
    upserts.push(podRow(index, pod.instance));
  }
  const removals: string[] = [];
  for (const [key, pod] of base.pods) {
    if (now.pods.has(key)) continue;
    if (!hasUid(pod.instance.uid)) return undefined;
    removals.push(pod.instance.uid);
  }
  return {
    version: SUMMARY_CHANGES_VERSION,
    cluster: about.cluster,
    base: about.base,
    publishedAt: about.publishedAt,
    current: about.current,
    counts: { pods: now.pods.size, nodes: now.nodes.size, nodeClaims: now.nodeClaims.size },
    nodes: objectChanges(base.nodes, now.nodes),
    nodeClaims: objectChanges(base.nodeClaims, now.nodeClaims),
    pods: { podTemplates, upserts, removals },
  };
}

function objectChanges(base: ReadonlyMap<string, unknown>, now: ReadonlyMap<string, unknown>): ObjectChanges {
  const upserts: unknown[] = [];
  for (const [key, object] of now) if (base.get(key) !== object) upserts.push(object);
  const removals: string[] = [];
  for (const key of base.keys()) if (!now.has(key)) removals.push(key);
  return { upserts, removals };
}

function hasUid(uid: unknown): uid is string {
  return typeof uid === 'string' && uid !== '';
}
