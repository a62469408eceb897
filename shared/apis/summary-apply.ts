import { ValidationError } from '../core/index.ts';
import type { SummaryLimits } from '../ports/summary.ts';
import {
  checkSummaryLimits,
  SUMMARY_OBJECT,
  type SummaryParts,
  summaryCurrentAtMs,
  summaryList,
  summaryTime,
} from './cluster-summary.ts';
import { isRecord } from './fields.ts';
import { SUMMARY_CHANGES_VERSION } from './summary-changes.ts';
import { keyOf, SUMMARY_KINDS, type SummaryKind } from './summary-document.ts';

// A changes object (summary-changes.ts) applied to the parts of the base document it names: the
// Nodes and NodeClaims merged at once, the pods when the summary's pods are first read. The base's
// parts are left as they were, so the next changes object applies to them again. The merged
// counts must be the ones the changes object states, or it is not read.

/** A changes object, its head checked; what it changes is checked as it is applied. */
export interface ParsedSummaryChanges {
  readonly cluster: string;
  /** The ETag of the base document it names. */
  readonly base: string;
  readonly publishedAtMs: number;
  readonly currentAtMs: number;
  readonly counts: Readonly<Record<SummaryKind, number>>;
  readonly document: Readonly<Record<string, unknown>>;
}

/** @throws ValidationError when `value` is not a changes object this version reads. */
export function parseSummaryChanges(value: unknown): ParsedSummaryChanges {
  if (!isRecord(value)) throw new ValidationError(SUMMARY_OBJECT, '(changes)', 'not a JSON object');
  if (value['version'] !== SUMMARY_CHANGES_VERSION) {
    throw new ValidationError(
      SUMMARY_OBJECT,
      'version',
      `${JSON.stringify(value['version'])} is not ${SUMMARY_CHANGES_VERSION}; the shim and the Lambdas are of different versions`,
    );
  }
  const base = value['base'];
  if (typeof base !== 'string' || base === '') {
    throw new ValidationError(SUMMARY_OBJECT, 'base', `${JSON.stringify(base)} names no base document`);
  }
  const counts = isRecord(value['counts']) ? value['counts'] : {};
  const counted = {} as Record<SummaryKind, number>;
  for (const kind of SUMMARY_KINDS) {
    const count = counts[kind];
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
      throw new ValidationError(SUMMARY_OBJECT, `counts.${kind}`, `${JSON.stringify(count)} is not a count`);
    }
    counted[kind] = count;
  }
  return {
    cluster: typeof value['cluster'] === 'string' ? value['cluster'] : '',
    base,
    publishedAtMs: summaryTime(value['publishedAt'], 'publishedAt'),
    currentAtMs: summaryCurrentAtMs(value),
    counts: counted,
    document: value,
  };
}

/**
 * The parts of `base` with `changes` applied.
 * @throws ValidationError when the changes are not lists of what they should hold, or the merged
 *   Nodes or NodeClaims are not as many as the changes count (the pods: at `pods()`).
 * @throws SummaryTooLargeError when the merged counts are over `limits`.
 */
export function applySummaryChanges(
  base: SummaryParts,
  changes: ParsedSummaryChanges,
  limits?: Pick<SummaryLimits, 'nodes' | 'nodeClaims' | 'pods'>,
): SummaryParts {
  checkSummaryLimits(changes.counts, limits);
  const { document, counts } = changes;
  const nodes = mergeObjects(base.nodes, changesOf(document, 'nodes'), 'nodes', counts.nodes);
  const nodeClaims = mergeObjects(
    base.nodeClaims,
    changesOf(document, 'nodeClaims'),
    'nodeClaims',
    counts.nodeClaims,
  );
  const podChanges = changesOf(document, 'pods');
  const changeTemplates = summaryList(podChanges, 'podTemplates', 'pods.podTemplates');
  const upserts = summaryList(podChanges, 'upserts', 'pods.upserts');
  const removals = keys(podChanges, 'pods.removals');
  let merged: { readonly templates: readonly unknown[]; readonly rows: readonly unknown[] } | undefined;
  return {
    cluster: changes.cluster,
    publishedAtMs: changes.publishedAtMs,
    currentAtMs: changes.currentAtMs,
    nodes,
    nodeClaims,
    podCount: counts.pods,
    pods: () => {
      if (merged !== undefined) return merged;
      const { templates, rows } = base.pods();
      const offset = templates.length;
      const upserted = new Map<string, readonly unknown[]>();
      for (const row of upserts) {
        const uid = Array.isArray(row) ? row[2] : undefined;
        if (!Array.isArray(row) || typeof uid !== 'string') {
          throw new ValidationError(SUMMARY_OBJECT, 'pods.upserts', 'a row without a uid');
        }
        // An index outside the changes' templates reads as no template, as in a whole document.
        const template = row[0];
        const index =
          Number.isSafeInteger(template) &&
          (template as number) >= 0 &&
          (template as number) < changeTemplates.length
            ? (template as number) + offset
            : -1;
        upserted.set(uid, [index, ...row.slice(1)]);
      }
      // A pod upserted keeps its place, as it keeps it in the shim's builder; new ones come last.
      const out = mergeInPlace(
        rows,
        (row) => {
          const uid = Array.isArray(row) ? row[2] : undefined;
          return typeof uid === 'string' ? uid : undefined;
        },
        removals,
        upserted,
        'pods',
        counts.pods,
      );
      merged = { templates: [...templates, ...changeTemplates], rows: out };
      return merged;
    },
  };
}

function changesOf(
  document: Readonly<Record<string, unknown>>,
  kind: SummaryKind,
): Readonly<Record<string, unknown>> {
  const value = document[kind];
  if (!isRecord(value)) throw new ValidationError(SUMMARY_OBJECT, kind, 'not a JSON object');
  return value;
}

function keys(from: Readonly<Record<string, unknown>>, field: string): ReadonlySet<string> {
  const list = summaryList(from, 'removals', field);
  if (!list.every((key) => typeof key === 'string')) {
    throw new ValidationError(SUMMARY_OBJECT, field, 'not a list of keys');
  }
  return new Set(list as readonly string[]);
}

/** The base's objects less those removed, those upserted in their place, then the new ones. */
function mergeObjects(
  base: readonly unknown[],
  changes: Readonly<Record<string, unknown>>,
  kind: 'nodes' | 'nodeClaims',
  count: number,
): readonly unknown[] {
  const removals = keys(changes, `${kind}.removals`);
  const upserted = new Map<string, unknown>();
  for (const object of summaryList(changes, 'upserts', `${kind}.upserts`))
    upserted.set(keyOf(object), object);
  return mergeInPlace(base, keyOf, removals, upserted, kind, count);
}

/**
 * `base` less the items removed, each upserted one in its place, then the new ones (`upserted` is
 * emptied of those placed); an item without a key is kept.
 * @throws ValidationError when the result is not `count` items long.
 */
function mergeInPlace<T>(
  base: readonly T[],
  keyOfItem: (item: T) => string | undefined,
  removals: ReadonlySet<string>,
  upserted: Map<string, T>,
  field: string,
  count: number,
): T[] {
  const out: T[] = [];
  for (const item of base) {
    const key = keyOfItem(item);
    if (key === undefined) {
      out.push(item);
      continue;
    }
    if (removals.has(key)) continue;
    out.push(upserted.get(key) ?? item);
    upserted.delete(key);
  }
  for (const item of upserted.values()) out.push(item);
  if (out.length !== count) {
    throw new ValidationError(
      SUMMARY_OBJECT,
      field,
      `${out.length} ${field} where the changes count ${count}`,
    );
  }
  return out;
}
