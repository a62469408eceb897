import { isRecord } from './fields.ts';
import { type PodInstance, type PodTemplate, splitPod } from './pod-templates.ts';
import { pruneNode, pruneNodeClaim } from './summary-prune.ts';

export { pruneNode, pruneNodeClaim } from './summary-prune.ts';

// The cluster summary: the pods, Nodes and NodeClaims the shim's watches see, kept between Lambda
// invocations so that none of them lists the whole cluster. The shim keeps a SummaryBuilder up to
// date from its watches and publishes its document, gzipped; a Lambda reads it in one call and
// converts it with the same converters as a direct read. The document is two JSON values on two
// lines (encodeSummaryDocument): first its head (version, cluster, times, the Nodes, the NodeClaims
// and how many of each kind there are), then its pods, which are most of it. A reader parses the
// pods only when it needs them, so a Lambda that reads only NodeClaims and Nodes without their pods
// never does. Pods are pruned to what Flotilla reads and stored template by template
// (pod-templates.ts): the pods of one workload share one template, and each pod is a handful of its
// own fields. It is a cache, never the truth: whatever deletes or terminates confirms against the
// API server first.

export const SUMMARY_VERSION = 'flotilla.cluster-summary/v2';

/** Where in its bucket a cluster's summary is published (gzipped, see encodeSummaryDocument). */
export function summaryObjectKey(cluster: string): string {
  return `clusters/${cluster}/summary.json.gz`;
}

/**
 * The summary bucket's name: fixed by account, region and cluster, so the shim's manifest can name
 * it before the stack is deployed (account and region may be CloudFormation tokens). The cluster
 * comes in as the first 12 hex digits of its name's SHA-256 (`clusterHash`), as a cluster name may
 * have characters or a length S3 refuses; with a 12-digit account and an AWS region the name is
 * lowercase and under S3's 63 characters.
 */
export function summaryBucketName(account: string, region: string, clusterHash: string): string {
  return `flotilla-${account}-${region}-${clusterHash}`;
}

/** The kinds the summary keeps. */
export type SummaryKind = 'pods' | 'nodes' | 'nodeClaims';

export const SUMMARY_KINDS: readonly SummaryKind[] = ['pods', 'nodes', 'nodeClaims'];

/**
 * A pod in the document: its template's index and its own fields. `resize` (PodInstance.resize)
 * comes last and only when the pod has one, so rows are as before for most pods, and a reader
 * that knows no resize reads the rest as before; a document without it reads as pods without one.
 */
export type PodRow =
  | readonly [
      template: number,
      name: unknown,
      uid: unknown,
      nodeName: unknown,
      creationTimestamp: unknown,
      phase: unknown,
      startTime: unknown,
      deletionTimestamp: unknown,
    ]
  | readonly [
      template: number,
      name: unknown,
      uid: unknown,
      nodeName: unknown,
      creationTimestamp: unknown,
      phase: unknown,
      startTime: unknown,
      deletionTimestamp: unknown,
      resize: unknown,
    ];

/** The first JSON value of a published document: all but the pods. */
export interface SummaryHead {
  readonly version: typeof SUMMARY_VERSION;
  readonly cluster: string;
  /** When the shim wrote it (RFC 3339). */
  readonly publishedAt: string;
  /** Per kind: up to when its watch is known to have been current (RFC 3339). */
  readonly current: Readonly<Record<SummaryKind, string>>;
  readonly nodes: readonly unknown[];
  readonly nodeClaims: readonly unknown[];
  /** How many objects of each kind the document holds (the pods counted without reading them). */
  readonly counts: Readonly<Record<SummaryKind, number>>;
}

/** The second JSON value of a published document: the pods, template by template. */
export interface SummaryPods {
  readonly podTemplates: readonly PodTemplate[];
  readonly pods: readonly PodRow[];
}

/** The published document (plain JSON, in two parts). */
export interface SummaryDocument {
  readonly head: SummaryHead;
  readonly pods: SummaryPods;
}

/**
 * The document's text, as published (gzipped): the head's JSON, one newline, the pods' JSON.
 * JSON.stringify writes a newline inside a string as `\n`, so the first newline of the text is
 * the one between the two.
 */
export function encodeSummaryDocument(document: SummaryDocument): string {
  return `${JSON.stringify(document.head)}\n${JSON.stringify(document.pods)}`;
}

// --- what the shim keeps ----------------------------------------------------------------------

/** The key of an object in its kind: the uid, else `namespace/name`. */
export function keyOf(raw: unknown): string {
  const meta = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : {};
  if (typeof meta['uid'] === 'string' && meta['uid'] !== '') return meta['uid'];
  return `${String(meta['namespace'] ?? '')}/${String(meta['name'] ?? '')}`;
}

export interface KeptPod {
  readonly key: string;
  readonly instance: PodInstance;
}

/** The pods of a summary, each template kept once with a count of the pods that use it. */
class PodStore {
  readonly pods = new Map<string, KeptPod>();
  readonly templates = new Map<
    string,
    { readonly key: string; readonly template: PodTemplate; refs: number }
  >();

  /** Keeps the pod; false when what is kept of it did not change. */
  put(key: string, raw: unknown): boolean {
    const { template, key: templateKey, instance } = splitPod(raw);
    // Readiness is not in the summary's rows: kept, it would only tell relists apart.
    const { ready: _ready, ...own } = instance;
    const split = { template, key: templateKey, instance: own };
    const previous = this.pods.get(key);
    if (previous?.key === split.key) {
      if (sameInstance(previous.instance, split.instance)) return false;
      this.pods.set(key, { key: previous.key, instance: split.instance });
      return true;
    }
    let kept = this.templates.get(split.key);
    if (kept === undefined) {
      kept = { key: split.key, template: split.template, refs: 0 };
      this.templates.set(split.key, kept);
    }
    kept.refs += 1;
    if (previous !== undefined) this.release(previous.key);
    // The kept pod holds the template's own key string, so each template's JSON is stored once.
    this.pods.set(key, { key: kept.key, instance: split.instance });
    return true;
  }

  /** Forgets the pod; false when it was not kept. */
  remove(key: string): boolean {
    const previous = this.pods.get(key);
    if (previous === undefined) return false;
    this.pods.delete(key);
    this.release(previous.key);
    return true;
  }

  fingerprint(key: string): string | undefined {
    const pod = this.pods.get(key);
    return pod === undefined ? undefined : `${pod.key}\u0000${JSON.stringify(pod.instance)}`;
  }

  private release(templateKey: string): void {
    const kept = this.templates.get(templateKey);
    if (kept === undefined) return;
    kept.refs -= 1;
    if (kept.refs <= 0) this.templates.delete(templateKey);
  }
}

/**
 * Nodes or NodeClaims of a summary, pruned. With `keepVersion` (Nodes), an object whose new
 * version differs from the kept one in its resourceVersion alone is kept as it was, old
 * resourceVersion and all: the kubelet's status reports move a Node's resourceVersion every few
 * minutes while what is kept of it (its heartbeat times pruned) stays the same. A reader's
 * conversions, keyed by uid and resourceVersion, stay right, as the content they name is the same.
 */
class ObjectStore {
  readonly objects = new Map<string, unknown>();

  constructor(
    private readonly prune: (raw: unknown) => unknown,
    private readonly keepVersion = false,
  ) {}

  /** Keeps the object, pruned; false when what is kept of it did not change. */
  put(key: string, raw: unknown): boolean {
    const pruned = this.prune(raw);
    const previous = this.objects.get(key);
    if (previous !== undefined && this.content(previous) === this.content(pruned)) return false;
    this.objects.set(key, pruned);
    return true;
  }

  remove(key: string): boolean {
    return this.objects.delete(key);
  }

  /** What of an object counts as a change: its JSON, less its resourceVersion with `keepVersion`. */
  fingerprint(key: string): string | undefined {
    const object = this.objects.get(key);
    return object === undefined ? undefined : this.content(object);
  }

  /** Takes `from`'s object for `key` in place of this store's (same content, older version). */
  keepFrom(from: ObjectStore, key: string): void {
    const object = from.objects.get(key);
    if (object !== undefined) this.objects.set(key, object);
  }

  private content(object: unknown): string {
    if (!this.keepVersion || !isRecord(object) || !isRecord(object['metadata'])) {
      return JSON.stringify(object);
    }
    const { resourceVersion: _version, ...metadata } = object['metadata'];
    return JSON.stringify({ ...object, metadata });
  }
}

type Store = PodStore | ObjectStore;

/** What a SummaryBuilder holds at one moment (its `snapshot()`). */
export interface SummarySnapshot {
  /** Pod key → its template's key and its own fields. */
  readonly pods: ReadonlyMap<string, KeptPod>;
  /** Template key → the template, for the templates the pods use. */
  readonly templates: ReadonlyMap<string, PodTemplate>;
  /** Key → the Node, pruned. */
  readonly nodes: ReadonlyMap<string, unknown>;
  /** Key → the NodeClaim, pruned. */
  readonly nodeClaims: ReadonlyMap<string, unknown>;
}

/** A relist of one kind in progress: objects are added to a store of their own until `end()`. */
export interface Relist {
  add(raw: unknown): void;
  /**
   * Puts the relisted objects in place of the kind's; returns how many differed from what the
   * watch had kept (added, removed or changed), which a watch that missed nothing leaves at 0.
   */
  end(): number;
}

/**
 * What the shim keeps of its watches, updated event by event, and the document it publishes. Pods
 * that have finished (Succeeded, Failed) are not kept.
 */
export class SummaryBuilder {
  private stores: Record<SummaryKind, Store> = {
    pods: new PodStore(),
    nodes: new ObjectStore(pruneNode, true),
    nodeClaims: new ObjectStore(pruneNodeClaim),
  };
  /** Changes to the Nodes and NodeClaims kept so far (headGeneration). */
  private headChanges = 0;

  constructor(readonly cluster: string) {}

  /**
   * A count that moves whenever what is kept of the Nodes or NodeClaims changes, and only then: a
   * reader that holds the head of a document of the same count (and the same builder) holds
   * this head, whatever pods or times changed since.
   */
  headGeneration(): number {
    return this.headChanges;
  }

  /**
   * Applies one watch event (ADDED, MODIFIED or DELETED) of `kind`; false when it changed nothing
   * that is kept (a pod's readiness, a Node's heartbeat).
   */
  apply(kind: SummaryKind, type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: unknown): boolean {
    const changed = applyTo(this.stores[kind], kind, type, raw);
    if (changed && kind !== 'pods') this.headChanges += 1;
    return changed;
  }

  /**
   * Starts a relist of `kind`: the objects of a fresh list are added one by one, and take the
   * place of what is kept only at `end()`, so a document published meanwhile is never partial.
   */
  relist(kind: SummaryKind): Relist {
    const next: Store =
      kind === 'pods'
        ? new PodStore()
        : kind === 'nodes'
          ? new ObjectStore(pruneNode, true)
          : new ObjectStore(pruneNodeClaim);
    return {
      add: (raw) => applyTo(next, kind, 'ADDED', raw),
      end: () => {
        const before = this.stores[kind];
        let differences = 0;
        for (const key of keysOf(next)) {
          if (next.fingerprint(key) !== before.fingerprint(key)) differences += 1;
          // The same content keeps the version it was kept with (ObjectStore's keepVersion).
          else if (next instanceof ObjectStore && before instanceof ObjectStore) next.keepFrom(before, key);
        }
        for (const key of keysOf(before)) if (next.fingerprint(key) === undefined) differences += 1;
        if (kind !== 'pods') {
          // Nothing differs: what is kept stays as it is, in its order, so the head is the same
          // document as before and keeps its generation.
          if (differences === 0) return 0;
          this.headChanges += 1;
        }
        this.stores = { ...this.stores, [kind]: next };
        return differences;
      },
    };
  }

  /** Replaces everything of `kind` with `raws` (a relist in one call); returns the differences. */
  replace(kind: SummaryKind, raws: readonly unknown[]): number {
    const relist = this.relist(kind);
    for (const raw of raws) relist.add(raw);
    return relist.end();
  }

  /** How much is kept. */
  size(): {
    readonly pods: number;
    readonly templates: number;
    readonly nodes: number;
    readonly nodeClaims: number;
  } {
    const pods = this.stores.pods as PodStore;
    return {
      pods: pods.pods.size,
      templates: pods.templates.size,
      nodes: (this.stores.nodes as ObjectStore).objects.size,
      nodeClaims: (this.stores.nodeClaims as ObjectStore).objects.size,
    };
  }

  /**
   * What is kept now, copied: later events change the builder, never the snapshot (the changes
   * since a published document are told from it, summary-changes.ts).
   */
  snapshot(): SummarySnapshot {
    const pods = this.stores.pods as PodStore;
    return {
      pods: new Map(pods.pods),
      templates: new Map([...pods.templates].map(([key, kept]) => [key, kept.template])),
      nodes: new Map((this.stores.nodes as ObjectStore).objects),
      nodeClaims: new Map((this.stores.nodeClaims as ObjectStore).objects),
    };
  }

  /** The document to publish (encodeSummaryDocument gives its text). */
  document(publishedAt: string, current: Readonly<Record<SummaryKind, string>>): SummaryDocument {
    const store = this.stores.pods as PodStore;
    const index = new Map<string, number>();
    const podTemplates: PodTemplate[] = [];
    for (const [key, { template }] of store.templates) {
      index.set(key, podTemplates.length);
      podTemplates.push(template);
    }
    const pods: PodRow[] = [];
    for (const { key, instance } of store.pods.values()) pods.push(podRow(index.get(key) ?? -1, instance));
    const nodes = [...(this.stores.nodes as ObjectStore).objects.values()];
    const nodeClaims = [...(this.stores.nodeClaims as ObjectStore).objects.values()];
    return {
      head: {
        version: SUMMARY_VERSION,
        cluster: this.cluster,
        publishedAt,
        current,
        nodes,
        nodeClaims,
        counts: { pods: pods.length, nodes: nodes.length, nodeClaims: nodeClaims.length },
      },
      pods: { podTemplates, pods },
    };
  }
}

/** A pod's row in a document: its template's index in the document, then its own fields. */
export function podRow(template: number, i: PodInstance): PodRow {
  const row = [
    template,
    i.name,
    i.uid,
    i.nodeName ?? null,
    i.creationTimestamp ?? null,
    i.phase ?? null,
    i.startTime ?? null,
    i.deletionTimestamp ?? null,
  ] as const;
  return i.resize === undefined ? row : [...row, i.resize];
}

function keysOf(store: Store): Iterable<string> {
  return store instanceof PodStore ? store.pods.keys() : store.objects.keys();
}

function applyTo(
  store: Store,
  kind: SummaryKind,
  type: 'ADDED' | 'MODIFIED' | 'DELETED',
  raw: unknown,
): boolean {
  const key = keyOf(raw);
  const finished =
    kind === 'pods' &&
    isRecord(raw) &&
    isRecord(raw['status']) &&
    (raw['status']['phase'] === 'Succeeded' || raw['status']['phase'] === 'Failed');
  return type === 'DELETED' || finished ? store.remove(key) : store.put(key, raw);
}

export function sameInstance(a: PodInstance, b: PodInstance): boolean {
  return (
    a.name === b.name &&
    a.uid === b.uid &&
    a.nodeName === b.nodeName &&
    a.phase === b.phase &&
    a.startTime === b.startTime &&
    a.creationTimestamp === b.creationTimestamp &&
    a.deletionTimestamp === b.deletionTimestamp &&
    JSON.stringify(a.resize) === JSON.stringify(b.resize)
  );
}
