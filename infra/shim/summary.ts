import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { RawApi } from '../../shared/adapters/kube/http.ts';
import {
  encodeSummaryDocument,
  SummaryBuilder,
  type SummaryKind,
} from '../../shared/apis/summary-document.ts';
import type { Logger } from '../../shared/runtime/logger.ts';

// The shim's cluster summary: one list and then a watch per kind (pods that have not finished,
// Nodes, NodeClaims), applied event by event to a SummaryBuilder, and the document published (its
// head and its pods, two lines of JSON, gzipped) a moment after something changed, and at least
// every heartbeat so readers can tell it is alive. A watch that falls too far behind (410 Gone)
// lists again; every kind is also listed again now and then, and a relist that finds what the watch
// missed says so in the log.

const gzipAsync = promisify(gzip);

/** Where each kind is listed and watched. */
const SOURCES: Readonly<Record<SummaryKind, { readonly path: string; readonly fieldSelector?: string }>> = {
  pods: { path: '/api/v1/pods', fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' },
  nodes: { path: '/api/v1/nodes' },
  nodeClaims: { path: '/apis/karpenter.sh/v1/nodeclaims' },
};

export interface SummaryKeeperOptions {
  readonly api: RawApi;
  readonly cluster: string;
  /** Stores one published document (gzipped, see encodeSummaryDocument). */
  readonly publish: (body: Buffer) => Promise<void>;
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
   * How long one watch request stays open: each one the API server ends on time proves the watch
   * current up to then. @default 30
   */
  readonly watchTimeoutSeconds?: number;
  /** A watch from which nothing arrives for this long is dropped and resumed. @default 60000 */
  readonly idleMs?: number;
}

export interface SummaryKeeper {
  /** True once every kind has been listed. */
  synced(): boolean;
  /** Documents published so far, and the size of the last one. */
  stats(): {
    readonly published: number;
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

/** Backoff of attempt `n` (from 1): half fixed, half random, capped. */
function backoffMs(n: number, baseMs: number, capMs: number): number {
  const base = Math.min(capMs, baseMs * 2 ** (n - 1));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

export function startSummaryKeeper(options: SummaryKeeperOptions): SummaryKeeper {
  const { api, logger } = options;
  const builder = new SummaryBuilder(options.cluster);
  const minIntervalMs = options.minIntervalMs ?? 2_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const relistEveryMs = options.relistEveryMs ?? 1_800_000;
  const idleMs = options.idleMs ?? 60_000;
  const abort = new AbortController();
  /**
   * Per kind: listed at least once, and up to when it is known current: the start of its last list,
   * the arrival of its last watch line, or the clean end of its last watch request (less a margin).
   */
  const state = Object.fromEntries(
    (['pods', 'nodes', 'nodeClaims'] as const).map((k) => [k, { listed: false, currentMs: 0 }]),
  ) as Record<SummaryKind, { listed: boolean; currentMs: number }>;
  let dirty = true;
  let publishedAtMs = 0;
  let published = 0;
  let lastBytes = 0;
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
              timeoutSeconds: String(options.watchTimeoutSeconds ?? 30),
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
            proven(kind, Date.now());
            if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
            if (builder.apply(kind, event.type, event.object)) dirty = true;
            if (kind === 'pods') options.onPod?.(event.type, event.object);
            else options.onObject?.(kind, event.type, event.object);
          },
        );
        if (abort.signal.aborted) return;
        // The API server ended the request on time: nothing was left to send up to now.
        proven(kind, Date.now());
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
    const document = builder.document(new Date(nowMs).toISOString(), current);
    const body = await gzipAsync(encodeSummaryDocument(document), { level: 4 });
    await options.publish(body);
    published += 1;
    lastBytes = body.length;
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

  const runs = (['pods', 'nodes', 'nodeClaims'] as const).map((kind) => run(kind));

  return {
    synced: () => Object.values(state).every((s) => s.listed),
    stats: () => ({ published, lastBytes, kept: builder.size() }),
    async stop() {
      abort.abort();
      clearInterval(tick);
      await Promise.allSettled(runs);
      await publishing;
    },
  };
}
