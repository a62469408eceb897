import type { Pod } from '../core/index.ts';
import { ValidationError } from '../core/index.ts';
import { type BoundPod, type ClusterNode, type ClusterNodeClaim, toNodeInfo } from '../ports/cluster.ts';
import type { ClusterSummary } from '../ports/summary.ts';
import { isRecord } from './fields.ts';
import { convertNodeClaims, toClusterNodeClaim } from './karpenter.ts';
import { groupPodsByNode, type PodsByNode, toClusterNode, withPods } from './node.ts';
import { makePodReader } from './pod-reader.ts';
import type { PodTemplate } from './pod-templates.ts';
import { SUMMARY_KINDS, SUMMARY_VERSION } from './summary-document.ts';
import { makeVersionedConversions, type VersionedConversions } from './versioned-conversions.ts';

export { SUMMARY_VERSION, summaryBucketName, summaryObjectKey } from './summary-document.ts';

// --- what a Lambda reads ------------------------------------------------------------------------

/**
 * What one reader of summaries (a warm Lambda container) keeps from one document to the next:
 * converted templates, pods, Nodes and NodeClaims, so that a new document converts only what
 * changed since the last one. Each conversion keeps only what its document holds.
 */
export interface SummaryConversions {
  /** Template key → the template converted as a pod. */
  templates: ReadonlyMap<string, Pod | ValidationError>;
  /** Pod uid → its row, its template's key and the pod. */
  pods: ReadonlyMap<string, { readonly row: readonly unknown[]; readonly key: string; readonly pod: Pod }>;
  readonly nodes: VersionedConversions<ClusterNode>;
  readonly nodeClaims: VersionedConversions<ClusterNodeClaim>;
}

export function makeSummaryConversions(): SummaryConversions {
  return {
    templates: new Map(),
    pods: new Map(),
    nodes: makeVersionedConversions((raw) => toClusterNode(raw as never, [])),
    nodeClaims: makeVersionedConversions(toClusterNodeClaim),
  };
}

/**
 * Same pod fields in two rows (rows hold strings, numbers and nulls); the first, the template's
 * place in its document, may differ (the template's key is compared instead).
 */
function sameRow(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 1; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Reads a published document. Conversions run on first use and are kept, so a Lambda container
 * that reads the same document again converts nothing; with `conversions`, a new document
 * converts only what changed since the last document read with them.
 * @throws ValidationError when the document is not a summary this version reads.
 */
export function readSummaryDocument(
  document: unknown,
  conversions: SummaryConversions = makeSummaryConversions(),
): ClusterSummary {
  const object = 'cluster summary';
  if (!isRecord(document)) throw new ValidationError(object, '(root)', 'not a JSON object');
  if (document['version'] !== SUMMARY_VERSION) {
    throw new ValidationError(
      object,
      'version',
      `${JSON.stringify(document['version'])} is not ${SUMMARY_VERSION}; the shim and the Lambdas are of different versions`,
    );
  }
  const list = (field: string): readonly unknown[] => {
    const value = document[field];
    if (!Array.isArray(value)) throw new ValidationError(object, field, 'not a list');
    return value;
  };
  const time = (value: unknown, field: string): number => {
    const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(ms)) throw new ValidationError(object, field, `${JSON.stringify(value)} is not a time`);
    return ms;
  };
  const current = isRecord(document['current']) ? document['current'] : {};
  const currentAtMs = Math.min(...SUMMARY_KINDS.map((k) => time(current[k], `current.${k}`)));
  const cluster = typeof document['cluster'] === 'string' ? document['cluster'] : '';
  const nodesRaw = list('nodes');
  const claimsRaw = list('nodeClaims');
  const templates = list('podTemplates');
  const rows = list('pods');

  const once = <T>(make: () => T): (() => T) => {
    let value: T | undefined;
    return () => {
      value ??= make();
      return value;
    };
  };
  const byNode = once((): PodsByNode => {
    const reader = makePodReader(conversions.templates);
    const keys = templates.map((t) => JSON.stringify(t));
    const bound: { spec: { nodeName: string }; row: readonly unknown[] }[] = [];
    for (const row of rows) {
      if (!Array.isArray(row)) continue;
      const nodeName = row[3];
      if (typeof nodeName === 'string' && nodeName !== '') bound.push({ spec: { nodeName }, row });
    }
    const previous = conversions.pods;
    const kept = new Map<
      string,
      { readonly row: readonly unknown[]; readonly key: string; readonly pod: Pod }
    >();
    const grouped = groupPodsByNode(bound, ({ row }) => {
      const [t, name, uid, nodeName, creationTimestamp, phase, startTime, deletionTimestamp] = row;
      const index = typeof t === 'number' ? t : -1;
      const key = keys[index] ?? '{}';
      const before = typeof uid === 'string' ? previous.get(uid) : undefined;
      if (before !== undefined && before.key === key && sameRow(before.row, row)) {
        kept.set(uid as string, before);
        return before.pod;
      }
      const template = (templates[index] ?? {}) as PodTemplate;
      const pod = reader.read({
        template,
        key: keys[index] ?? '{}',
        instance: {
          name,
          uid,
          nodeName,
          ...(creationTimestamp == null ? {} : { creationTimestamp }),
          ...(phase == null ? {} : { phase }),
          ...(startTime == null ? {} : { startTime }),
          ...(deletionTimestamp == null ? {} : { deletionTimestamp }),
        },
      });
      if (typeof uid === 'string') kept.set(uid, { row, key, pod });
      return pod;
    });
    conversions.pods = kept;
    conversions.templates = reader.converted();
    return grouped;
  });
  const nodeBase = once(() => {
    const items: ClusterNode[] = [];
    const problems: ValidationError[] = [];
    conversions.nodes.read((convert) => {
      for (const raw of nodesRaw) {
        try {
          items.push(convert(raw));
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          problems.push(error);
        }
      }
    });
    return { items, problems };
  });
  const nodes = once(() => {
    const pods = byNode();
    const base = nodeBase();
    return {
      items: base.items.map((n) => withPods(n, pods)),
      problems: [...pods.problems, ...base.problems],
    };
  });
  const nodeInfos = once(() => {
    const base = nodeBase();
    return { items: base.items.map(toNodeInfo), problems: base.problems };
  });
  const nodeClaims = once(() =>
    conversions.nodeClaims.read((convert) => convertNodeClaims(claimsRaw, convert)),
  );
  const boundPods = once(() => {
    const pods = byNode();
    const items: BoundPod[] = [];
    for (const [nodeName, list] of pods.pods) for (const pod of list) items.push({ pod, nodeName });
    return { items, problems: pods.problems };
  });
  return {
    cluster,
    publishedAtMs: time(document['publishedAt'], 'publishedAt'),
    currentAtMs,
    counts: { pods: rows.length, nodes: nodesRaw.length, nodeClaims: claimsRaw.length },
    nodes,
    nodeInfos,
    nodeClaims,
    boundPods,
  };
}
