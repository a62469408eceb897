import type { Pod } from '../core/index.ts';
import { ValidationError } from '../core/index.ts';
import { type BoundPod, type ClusterNode, type ClusterNodeClaim, toNodeInfo } from '../ports/cluster.ts';
import { type ClusterSummary, type SummaryLimits, SummaryTooLargeError } from '../ports/summary.ts';
import { isRecord } from './fields.ts';
import { groupPodsByNode, type PodsByNode, toClusterNode, withPods } from './node.ts';
import { convertNodeClaims, toClusterNodeClaim } from './nodeclaim.ts';
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

/** Each template's key (its JSON), made once per parsed template: a base's serve every read of it. */
const templateKeys = new WeakMap<object, string>();

function templateKey(template: unknown): string {
  if (typeof template !== 'object' || template === null) return JSON.stringify(template);
  let key = templateKeys.get(template);
  if (key === undefined) {
    key = JSON.stringify(template);
    templateKeys.set(template, key);
  }
  return key;
}

/**
 * Same pod fields in two rows (rows hold strings, numbers and nulls, and a pod's resize, compared
 * as JSON); the first, the template's place in its document, may differ (the template's key is
 * compared instead).
 */
function sameRow(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 1; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (typeof x !== 'object' || x === null || JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

/**
 * The head's text, and how to get the pods' text (undefined when the text has no newline). The
 * bytes are kept until the pods are read, then let go.
 */
function splitSummary(text: string | Uint8Array): { head: string; pods: (() => string) | undefined } {
  return typeof text === 'string' ? splitText(text) : splitBytes(text);
}

function splitText(text: string): { head: string; pods: (() => string) | undefined } {
  const at = text.indexOf('\n');
  if (at === -1) return { head: text, pods: undefined };
  let pods: string | undefined = text.slice(at + 1);
  return {
    head: text.slice(0, at),
    pods: () => {
      const read = pods ?? '';
      pods = undefined;
      return read;
    },
  };
}

function splitBytes(bytes: Uint8Array): { head: string; pods: (() => string) | undefined } {
  const decoder = new TextDecoder();
  const at = bytes.indexOf(0x0a);
  if (at === -1) return { head: decoder.decode(bytes), pods: undefined };
  let pods: Uint8Array | undefined = bytes.subarray(at + 1);
  return {
    head: decoder.decode(bytes.subarray(0, at)),
    pods: () => {
      const read = decoder.decode(pods);
      pods = undefined;
      return read;
    },
  };
}

/** `make`'s value, made on the first call and kept; or its error, thrown again at every call. */
function once<T>(make: () => T): () => T {
  let made: { readonly value: T } | { readonly error: unknown } | undefined;
  return () => {
    if (made === undefined) {
      try {
        made = { value: make() };
      } catch (error) {
        made = { error };
      }
    }
    if ('error' in made) throw made.error;
    return made.value;
  };
}

/**
 * A document read as far as its parts: the head parsed, the pods parsed at the first call of
 * `pods()` (and kept). What changes apply to (summary-apply.ts) and what summaryFromParts reads.
 */
export interface SummaryParts {
  readonly cluster: string;
  readonly publishedAtMs: number;
  /** Up to when the slowest watch was current. */
  readonly currentAtMs: number;
  readonly nodes: readonly unknown[];
  readonly nodeClaims: readonly unknown[];
  /** How many pods `pods()` holds. */
  readonly podCount: number;
  /**
   * The pods' templates and rows, parsed at the first call and kept.
   * @throws ValidationError, at every call, when they are not JSON, not lists, or not `podCount`.
   */
  readonly pods: () => { readonly templates: readonly unknown[]; readonly rows: readonly unknown[] };
}

/** What a summary says of itself, as a ValidationError. */
export const SUMMARY_OBJECT = 'cluster summary';

/** The JSON value of `json`, or a ValidationError naming `field`. */
export function parseSummaryJson(json: string, field: string): unknown {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new ValidationError(
      SUMMARY_OBJECT,
      field,
      `not JSON (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
}

/** `from[field]` when it is a list, else a ValidationError naming `path` (by default `field`). */
export function summaryList(
  from: Readonly<Record<string, unknown>>,
  field: string,
  path: string = field,
): readonly unknown[] {
  const value = from[field];
  if (!Array.isArray(value)) throw new ValidationError(SUMMARY_OBJECT, path, 'not a list');
  return value;
}

/** The epoch ms of an RFC 3339 time, else a ValidationError naming `field`. */
export function summaryTime(value: unknown, field: string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ValidationError(SUMMARY_OBJECT, field, `${JSON.stringify(value)} is not a time`);
  }
  return ms;
}

/** Up to when the slowest of a document's watches was current (its `current` field). */
export function summaryCurrentAtMs(document: Readonly<Record<string, unknown>>): number {
  const current = isRecord(document['current']) ? document['current'] : {};
  return Math.min(...SUMMARY_KINDS.map((k) => summaryTime(current[k], `current.${k}`)));
}

/** @throws SummaryTooLargeError when `counts` are over `limits`. */
export function checkSummaryLimits(
  counts: { readonly nodes: number; readonly nodeClaims: number; readonly pods: number },
  limits: Pick<SummaryLimits, 'nodes' | 'nodeClaims' | 'pods'> | undefined,
): void {
  if (limits === undefined) return;
  const over = (
    [
      ['Nodes', counts.nodes, limits.nodes],
      ['NodeClaims', counts.nodeClaims, limits.nodeClaims],
      ['pods', counts.pods, limits.pods],
    ] as const
  ).filter(([, count, most]) => count > most);
  if (over.length > 0) {
    throw new SummaryTooLargeError(
      `the cluster summary holds ${over.map(([kind, count, most]) => `${count} ${kind} (at most ${most})`).join(', ')}: more than the stack's clusterSize allows; raise clusterSize if the cluster really is this large`,
    );
  }
}

/**
 * Reads a published document from its text (encodeSummaryDocument), as a string or as the UTF-8
 * bytes unzipped. The head (Nodes and NodeClaims) is parsed at once, the pods at the first call of
 * `nodes()` or `boundPods()`: `nodeInfos()` and `nodeClaims()` never parse them. Conversions run on
 * first use and are kept, so a Lambda container that reads the same document again converts
 * nothing; with `conversions`, a new document converts only what changed since the last document
 * read with them (its pods, since the last document whose pods were read).
 * @throws ValidationError when the text is not a summary this version reads: a head that is not
 *   JSON, of another version or without its fields, or no pods after it. `nodes()` and
 *   `boundPods()` throw ValidationError, at every call, when the pods are not JSON, not lists, or
 *   not as many as the head counts.
 * @throws SummaryTooLargeError when it holds more Nodes, NodeClaims or pods than `limits` allow.
 */
export function readSummaryDocument(
  text: string | Uint8Array,
  conversions: SummaryConversions = makeSummaryConversions(),
  limits?: Pick<SummaryLimits, 'nodes' | 'nodeClaims' | 'pods'>,
): ClusterSummary {
  return summaryFromParts(parseSummaryDocument(text, limits), conversions);
}

/** A document's parts (readSummaryDocument, which says what it throws). */
export function parseSummaryDocument(
  text: string | Uint8Array,
  limits?: Pick<SummaryLimits, 'nodes' | 'nodeClaims' | 'pods'>,
): SummaryParts {
  const split = splitSummary(text);
  const document = parseSummaryJson(split.head, '(head)');
  if (!isRecord(document)) throw new ValidationError(SUMMARY_OBJECT, '(root)', 'not a JSON object');
  if (document['version'] !== SUMMARY_VERSION) {
    throw new ValidationError(
      SUMMARY_OBJECT,
      'version',
      `${JSON.stringify(document['version'])} is not ${SUMMARY_VERSION}; the shim and the Lambdas are of different versions`,
    );
  }
  const podsText = split.pods;
  if (podsText === undefined) {
    throw new ValidationError(SUMMARY_OBJECT, 'pods', 'missing: the document ends after its head');
  }
  const currentAtMs = summaryCurrentAtMs(document);
  const cluster = typeof document['cluster'] === 'string' ? document['cluster'] : '';
  const nodes = summaryList(document, 'nodes');
  const nodeClaims = summaryList(document, 'nodeClaims');
  const podCount = isRecord(document['counts']) ? document['counts']['pods'] : undefined;
  if (typeof podCount !== 'number' || !Number.isSafeInteger(podCount) || podCount < 0) {
    throw new ValidationError(SUMMARY_OBJECT, 'counts.pods', `${JSON.stringify(podCount)} is not a count`);
  }
  checkSummaryLimits({ nodes: nodes.length, nodeClaims: nodeClaims.length, pods: podCount }, limits);
  return {
    cluster,
    publishedAtMs: summaryTime(document['publishedAt'], 'publishedAt'),
    currentAtMs,
    nodes,
    nodeClaims,
    podCount,
    pods: once(() => {
      const part = parseSummaryJson(podsText(), 'pods');
      if (!isRecord(part)) throw new ValidationError(SUMMARY_OBJECT, 'pods', 'not a JSON object');
      const templates = summaryList(part, 'podTemplates');
      const rows = summaryList(part, 'pods');
      if (rows.length !== podCount) {
        throw new ValidationError(
          SUMMARY_OBJECT,
          'pods',
          `${rows.length} pods where the head counts ${podCount}`,
        );
      }
      return { templates, rows };
    }),
  };
}

/** The summary of a document's parts, converted on first use with `conversions` (readSummaryDocument). */
export function summaryFromParts(
  parts: SummaryParts,
  conversions: SummaryConversions = makeSummaryConversions(),
): ClusterSummary {
  const { cluster, publishedAtMs, currentAtMs, podCount } = parts;
  const nodesRaw = parts.nodes;
  const claimsRaw = parts.nodeClaims;
  const podPart = parts.pods;
  const byNode = once((): PodsByNode => {
    const { templates, rows } = podPart();
    const reader = makePodReader(conversions.templates);
    const keys = templates.map(templateKey);
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
      const [t, name, uid, nodeName, creationTimestamp, phase, startTime, deletionTimestamp, resize] = row;
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
          ...(resize == null ? {} : { resize }),
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
    publishedAtMs,
    currentAtMs,
    counts: { pods: podCount, nodes: nodesRaw.length, nodeClaims: claimsRaw.length },
    nodes,
    nodeInfos,
    nodeClaims,
    boundPods,
  };
}
