import { ValidationError } from '../core/index.ts';
import { type BoundPod, type ClusterNode, toNodeInfo } from '../ports/cluster.ts';
import type { ClusterSummary } from '../ports/summary.ts';
import { isRecord } from './fields.ts';
import { convertNodeClaims, toClusterNodeClaim } from './karpenter.ts';
import { groupPodsByNode, type PodsByNode, toClusterNode, withPods } from './node.ts';
import { makePodReader } from './pod-reader.ts';
import type { PodTemplate } from './pod-templates.ts';
import { SUMMARY_KINDS, SUMMARY_VERSION } from './summary-document.ts';

export { SUMMARY_VERSION, summaryBucketName, summaryObjectKey } from './summary-document.ts';

// --- what a Lambda reads ------------------------------------------------------------------------

/**
 * Reads a published document. Conversions run on first use and are kept, so a Lambda container
 * that reads the same document again converts nothing.
 * @throws ValidationError when the document is not a summary this version reads.
 */
export function readSummaryDocument(document: unknown): ClusterSummary {
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
    const reader = makePodReader();
    const keys = templates.map((t) => JSON.stringify(t));
    const bound: { spec: { nodeName: string }; row: readonly unknown[] }[] = [];
    for (const row of rows) {
      if (!Array.isArray(row)) continue;
      const nodeName = row[3];
      if (typeof nodeName === 'string' && nodeName !== '') bound.push({ spec: { nodeName }, row });
    }
    return groupPodsByNode(bound, ({ row }) => {
      const [t, name, uid, nodeName, creationTimestamp, phase, startTime, deletionTimestamp] = row;
      const index = typeof t === 'number' ? t : -1;
      const template = (templates[index] ?? {}) as PodTemplate;
      return reader.read({
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
    });
  });
  const nodeBase = once(() => {
    const items: ClusterNode[] = [];
    const problems: ValidationError[] = [];
    for (const raw of nodesRaw) {
      try {
        items.push(toClusterNode(raw as never, []));
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        problems.push(error);
      }
    }
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
  const nodeClaims = once(() => convertNodeClaims(claimsRaw, toClusterNodeClaim));
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
