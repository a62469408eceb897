import { randomUUID } from 'node:crypto';
import type { RawApi } from '../../shared/adapters/kube/http.ts';
import { PROBE_SELECTOR, revisionOf } from '../../shared/apis/revisions.ts';
import { SummaryBuilder, type SummaryKind } from '../../shared/apis/summary-document.ts';
import { headGeneration, summaryObjectMetadata } from '../../shared/apis/summary-metadata.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { makeSummaryPublisher, type StoreSummaryObject } from './summary-publish.ts';

// The shim's cluster summary: one list and then a watch per kind (pods that have not finished,
// Nodes, NodeClaims), applied event by event to a SummaryBuilder, and published a moment after
// something changed, and at least every heartbeat so readers can tell it is alive: mostly as the
// changes since the last whole document, which is written again now and then (summary-publish.ts). A watch that falls too far behind (410 Gone)
// lists again; every kind is also listed again now and then, and a relist that finds what the watch
// missed says so in the log.
//
// Up to when a kind is current is proven, never assumed: by the start of a list, or by a progress
// probe (a consistent list that selects nothing, which gives the API server's resourceVersion at
// the time it was sent) once the watch has delivered that resourceVersion (an event or a bookmark
// at or past it; the API server sends a bookmark shortly before each watch request ends).
// A line arriving proves nothing of the time it arrives: a watch that falls behind keeps sending
// lines, late, and its summary must look as old as what it has delivered.

/** Where each kind is listed and watched. */
const SOURCES: Readonly<Record<SummaryKind, { readonly path: string; readonly fieldSelector?: string }>> = {
  pods: { path: '/api/v1/pods', fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' },
  nodes: { path: '/api/v1/nodes' },
  nodeClaims: { path: '/apis/karpenter.sh/v1/nodeclaims' },
};

export interface SummaryKeeperOptions {
  readonly api: RawApi;
  readonly cluster: string;
  /**
   * Stores one published object, gzipped: the whole document (encodeSummaryDocument) or the changes
   * since it (summary-changes.ts), with its metadata (the head's generation and the document's
   * times, summary-metadata.ts); gives the ETag the store gave it.
   */
  readonly publish: StoreSummaryObject;
  readonly logger: Logger;
  /** Told about every pod event (the unschedulable tracker listens here), the initial list included. */
  readonly onPod?: (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: unknown) => void;
  /** Told the uids of every unfinished pod once a list of pods is complete. */
  readonly onPodsListed?: (uids: ReadonlySet<string>) => void;
  /** Told about every Node and NodeClaim event (the deletion tracker listens here), lists included. */
  readonly onObject?: (
    kind: 'nodes' | 'nodeClaims',
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: unknown,
  ) => void;
  /** Told the uids of every Node or NodeClaim once a list of that kind is complete. */
  readonly onObjectsListed?: (kind: 'nodes' | 'nodeClaims', uids: ReadonlySet<string>) => void;
  /** Least time between two documents while things change. @default 2000 */
  readonly minIntervalMs?: number;
  /** Most time between two documents when nothing changes. @default 15000 */
  readonly heartbeatMs?: number;
  /** Every kind is listed again after this long. @default 1_800_000 (30 min) */
  readonly relistEveryMs?: number;
  /**
   * How long one watch request stays open: the API server sends a bookmark shortly before it ends,
   * which is how a quiet kind's watch reaches the latest probe. @default 20
   */
  readonly watchTimeoutSeconds?: number;
  /** A watch from which nothing arrives for this long is dropped and resumed. @default 60000 */
  readonly idleMs?: number;
  /** How often each kind's progress is probed (a list of one object). @default 5000 */
  readonly probeEveryMs?: number;
}

export interface SummaryKeeper {
  /** True once every kind has been listed. */
  synced(): boolean;
  /** Documents published so far (bases and changes), how many were bases, and the size of the last one. */
  stats(): {
    readonly published: number;
    readonly bases: number;
    readonly lastBytes: number;
    readonly kept: ReturnType<SummaryBuilder['size']>;
  };
  stop(): Promise<void>;
}

/** A watch event line. */
interface WatchEvent {
  readonly type?: string;
  readonly object?: { readonly metadata?: { readonly resourceVersion?: string }; readonly code?: number };
}

/** The API server no longer has the events from our resourceVersion: the kind is listed again. */
class WatchExpired extends Error {}

/** A watch event or line may be this late (delivery): a proof of currency counts from this before it. */
const DELIVERY_MARGIN_MS = 1_000;

/** What the keeper knows of one kind's list and watch. */
interface KindState {
  listed: boolean;
  /** Up to when the kind is proven current (epoch ms, the shim's clock). */
  currentMs: number;
  /** The resourceVersion the watch has delivered up to (its last event or bookmark). */
  delivered: bigint | undefined;
  /** Progress probes the watch has not reached yet: the API server's revision when each was sent. */
  probes: { readonly revision: bigint; readonly atMs: number }[];
}

/** Probes kept per kind while the watch has not reached them; older ones go first. */
const MAX_PROBES = 64;

/** Backoff of attempt `n` (from 1): half fixed, half random, capped. */
function backoffMs(n: number, baseMs: number, capMs: number): number {
  const base = Math.min(capMs, baseMs * 2 ** (n - 1));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

export function startSummaryKeeper(options: SummaryKeeperOptions): SummaryKeeper {
  const { api, logger } = options;
  const builder = new SummaryBuilder(options.cluster);
  // Names this builder in every head generation it publishes: a restarted shim never repeats one.
  const bootId = randomUUID();
  const minIntervalMs = options.minIntervalMs ?? 2_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const relistEveryMs = options.relistEveryMs ?? 1_800_000;
  const idleMs = options.idleMs ?? 60_000;
  const abort = new AbortController();
  /**
   * Per kind: listed at least once, and up to when it is known current: the start of its last list,
   * the arrival of its last watch line, or the clean end of its last watch request (less a margin).
   */
  const fresh = (): KindState => ({ listed: false, currentMs: 0, delivered: undefined, probes: [] });
  const state: Record<SummaryKind, KindState> = { pods: fresh(), nodes: fresh(), nodeClaims: fresh() };
  const probeEveryMs = options.probeEveryMs ?? 5_000;
  let dirty = true;
  let publishedAtMs = 0;
  let published = 0;
  let bases = 0;
  let lastBytes = 0;
  const publish = makeSummaryPublisher(builder, options.publish);
  let publishFailures = 0;
  let nextPublishMs = 0;
  let publishing: Promise<void> | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        abort.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      abort.signal.addEventListener('abort', done, { once: true });
    });

  const proven = (kind: SummaryKind, atMs: number) => {
    state[kind].currentMs = Math.max(state[kind].currentMs, atMs - DELIVERY_MARGIN_MS);
  };

  /** The watch of `kind` delivered `resourceVersion`: the probes it reached prove it current then. */
  const delivered = (kind: SummaryKind, resourceVersion: string | undefined) => {
    const at = revisionOf(resourceVersion);
    if (at === undefined) return;
    const s = state[kind];
    if (s.delivered === undefined || at > s.delivered) s.delivered = at;
    const reached = s.probes.filter((p) => p.revision <= at);
    if (reached.length === 0) return;
    s.probes = s.probes.filter((p) => p.revision > at);
    proven(kind, Math.max(...reached.map((p) => p.atMs)));
  };

  /** Asks the API server for its revision now, for the watch of `kind` to reach. */
  async function probe(kind: SummaryKind): Promise<void> {
    const atMs = Date.now();
    const head = (await api.request({
      method: 'GET',
      path: SOURCES[kind].path,
      // A consistent list that matches nothing: the API server serves it from its watch cache once
      // the cache has caught up with etcd (it asks etcd for progress), so the watch's next bookmark
      // carries at least this revision even when nothing of the kind changes.
      query: { fieldSelector: PROBE_SELECTOR },
      signal: AbortSignal.any([abort.signal, AbortSignal.timeout(idleMs)]),
    })) as { metadata?: { resourceVersion?: string } };
    const at = revisionOf(head.metadata?.resourceVersion);
    if (at === undefined) return;
    const s = state[kind];
    s.probes.push({ revision: at, atMs });
    if (s.probes.length > MAX_PROBES) s.probes.shift();
    // Already delivered (the watch is ahead of the probe's answer).
    if (s.delivered !== undefined) delivered(kind, s.delivered.toString());
  }

  async function list(kind: SummaryKind): Promise<string> {
    const source = SOURCES[kind];
    const started = Date.now();
    const relist = builder.relist(kind);
    const uids = new Set<string>();
    const head = await api.list(
      {
        path: source.path,
        ...(source.fieldSelector === undefined ? {} : { query: { fieldSelector: source.fieldSelector } }),
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(300_000)]),
        idleTimeoutMs: idleMs,
      },
      (item) => {
        relist.add(item);
        if (kind === 'pods') options.onPod?.('ADDED', item);
        else options.onObject?.(kind, 'ADDED', item);
        const uid = (item as { metadata?: { uid?: unknown } }).metadata?.uid;
        if (typeof uid === 'string') uids.add(uid);
      },
    );
    const differences = relist.end();
    if (kind === 'pods') options.onPodsListed?.(uids);
    else options.onObjectsListed?.(kind, uids);
    const wasListed = state[kind].listed;
    state[kind].listed = true;
    // The list is the state as of its resourceVersion, taken as it started.
    proven(kind, started);
    dirty = true;
    const kept = builder.size();
    logger.info('summary listed', {
      kind,
      durationMs: Date.now() - started,
      pods: kept.pods,
      templates: kept.templates,
      nodes: kept.nodes,
      nodeClaims: kept.nodeClaims,
      ...(wasListed ? { missedByWatch: differences } : {}),
    });
    if (wasListed && differences > 0) {
      logger.warn('summary relist found what the watch missed', { kind, differences });
    }
    const resourceVersion = head.metadata?.resourceVersion;
    if (resourceVersion === undefined) throw new Error(`the list of ${kind} has no resourceVersion`);
    state[kind].delivered = undefined;
    state[kind].probes = state[kind].probes.filter((p) => p.atMs > started);
    delivered(kind, resourceVersion);
    return resourceVersion;
  }

  /**
   * Watches from `from`, request after request, until it is time to list again; a request that
   * fails is made again from the last resourceVersion after a backoff.
   * @throws WatchExpired on 410 Gone; the error of five failed requests in a row.
   */
  async function watch(kind: SummaryKind, from: string, listedAtMs: number): Promise<void> {
    const source = SOURCES[kind];
    let resourceVersion = from;
    let failures = 0;
    while (!abort.signal.aborted && Date.now() - listedAtMs < relistEveryMs) {
      try {
        await api.stream(
          {
            path: source.path,
            query: {
              watch: 'true',
              allowWatchBookmarks: 'true',
              resourceVersion,
              timeoutSeconds: String(options.watchTimeoutSeconds ?? 20),
              ...(source.fieldSelector === undefined ? {} : { fieldSelector: source.fieldSelector }),
            },
            signal: abort.signal,
            idleTimeoutMs: idleMs,
          },
          (line) => {
            const event = line as WatchEvent;
            if (event.type === 'ERROR') {
              if (event.object?.code === 410)
                throw new WatchExpired(`the watch of ${kind} expired (410 Gone)`);
              throw new Error(`the watch of ${kind} failed: ${JSON.stringify(event.object).slice(0, 300)}`);
            }
            const next = event.object?.metadata?.resourceVersion;
            if (next !== undefined) resourceVersion = next;
            // An event or a bookmark: the watch has delivered up to its resourceVersion.
            delivered(kind, next);
            if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
            if (builder.apply(kind, event.type, event.object)) dirty = true;
            if (kind === 'pods') options.onPod?.(event.type, event.object);
            else options.onObject?.(kind, event.type, event.object);
          },
        );
        if (abort.signal.aborted) return;
        failures = 0;
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof WatchExpired) throw error;
        failures += 1;
        if (failures >= 5) throw error;
        const retryInMs = backoffMs(failures, 500, 15_000);
        logger.warn('summary watch failed; resuming', { kind, error, attempt: failures, retryInMs });
        await sleep(retryInMs);
      }
    }
  }

  async function run(kind: SummaryKind): Promise<void> {
    let failures = 0;
    while (!abort.signal.aborted) {
      try {
        const listedAtMs = Date.now();
        const resourceVersion = await list(kind);
        failures = 0;
        await watch(kind, resourceVersion, listedAtMs);
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof WatchExpired) {
          logger.info('summary watch expired; listing again', { kind });
          continue;
        }
        failures += 1;
        const retryInMs = backoffMs(failures, 500, 30_000);
        logger.warn('summary watch failed; listing again', { kind, error, attempt: failures, retryInMs });
        await sleep(retryInMs);
      }
    }
  }

  async function publishNow(): Promise<void> {
    const nowMs = Date.now();
    const current = {
      pods: new Date(state.pods.currentMs).toISOString(),
      nodes: new Date(state.nodes.currentMs).toISOString(),
      nodeClaims: new Date(state.nodeClaims.currentMs).toISOString(),
    };
    dirty = false;
    const publishedAt = new Date(nowMs).toISOString();
    const head = headGeneration(bootId, builder.headGeneration());
    const done = await publish(publishedAt, current, summaryObjectMetadata(head, publishedAt, current));
    published += 1;
    if (done.rebased) bases += 1;
    lastBytes = done.bytes;
    publishedAtMs = nowMs;
  }

  const tick = setInterval(() => {
    if (publishing !== undefined || !Object.values(state).every((s) => s.listed)) return;
    const nowMs = Date.now();
    if (nowMs < nextPublishMs) return;
    const since = nowMs - publishedAtMs;
    if ((dirty && since >= minIntervalMs) || since >= heartbeatMs) {
      publishing = publishNow()
        .then(() => {
          publishFailures = 0;
        })
        .catch((error: unknown) => {
          dirty = true;
          publishFailures += 1;
          const retryInMs = backoffMs(publishFailures, 2_000, 60_000);
          nextPublishMs = Date.now() + retryInMs;
          logger.warn('summary not published; trying again', { error, attempt: publishFailures, retryInMs });
        })
        .finally(() => {
          publishing = undefined;
        });
    }
  }, 250);

  /** Probes every kind's progress, one after another, every probeEveryMs; a failed probe proves nothing. */
  async function probing(): Promise<void> {
    let failures = 0;
    let warnedAtMs = 0;
    while (!abort.signal.aborted) {
      await sleep(probeEveryMs);
      for (const kind of ['pods', 'nodes', 'nodeClaims'] as const) {
        if (abort.signal.aborted || !state[kind].listed) continue;
        try {
          await probe(kind);
          failures = 0;
        } catch (error) {
          if (abort.signal.aborted) return;
          failures += 1;
          if (Date.now() - warnedAtMs > 60_000) {
            warnedAtMs = Date.now();
            logger.warn('summary progress probe failed; its kind ages until one succeeds', {
              kind,
              error,
              failures,
            });
          }
        }
      }
    }
  }

  const runs = [...(['pods', 'nodes', 'nodeClaims'] as const).map((kind) => run(kind)), probing()];

  return {
    synced: () => Object.values(state).every((s) => s.listed),
    stats: () => ({ published, bases, lastBytes, kept: builder.size() }),
    async stop() {
      abort.abort();
      clearInterval(tick);
      await Promise.allSettled(runs);
      await publishing;
    },
  };
}
