import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { RawApi } from '../../shared/adapters/kube/http.ts';
import { SummaryBuilder, type SummaryKind } from '../../shared/apis/summary-document.ts';
import type { Logger } from '../../shared/runtime/logger.ts';

// The shim's cluster summary: one list and then a watch per kind (pods that have not finished,
// Nodes, NodeClaims), applied event by event to a SummaryBuilder, and the document published (one
// gzipped JSON object) a moment after something changed, and at least every heartbeat so readers
// can tell it is alive. A watch that falls too far behind (410 Gone) lists again; every kind is also
// listed again now and then, and a relist that finds what the watch missed says so in the log.

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
  /** Stores one published document (gzipped JSON). */
  readonly publish: (body: Buffer) => Promise<void>;
  readonly logger: Logger;
  /** Told about every pod event (the unschedulable tracker listens here), the initial list included. */
  readonly onPod?: (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: unknown) => void;
  /** Least time between two documents while things change. @default 2000 */
  readonly minIntervalMs?: number;
  /** Most time between two documents when nothing changes. @default 15000 */
  readonly heartbeatMs?: number;
  /** Every kind is listed again after this long. @default 1_800_000 (30 min) */
  readonly relistEveryMs?: number;
  /** How long one watch request stays open. @default 240 */
  readonly watchTimeoutSeconds?: number;
  /** A watch with no event or bookmark for this long is not taken as current. @default 90000 */
  readonly quietMs?: number;
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

export function startSummaryKeeper(options: SummaryKeeperOptions): SummaryKeeper {
  const { api, logger } = options;
  const builder = new SummaryBuilder(options.cluster);
  const minIntervalMs = options.minIntervalMs ?? 2_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const relistEveryMs = options.relistEveryMs ?? 1_800_000;
  const quietMs = options.quietMs ?? 90_000;
  const abort = new AbortController();
  /** Per kind: listed at least once, watch open, and the last proof of being current. */
  const state = Object.fromEntries(
    (['pods', 'nodes', 'nodeClaims'] as const).map((k) => [k, { listed: false, open: false, activityMs: 0 }]),
  ) as Record<SummaryKind, { listed: boolean; open: boolean; activityMs: number }>;
  let dirty = true;
  let publishedAtMs = 0;
  let published = 0;
  let lastBytes = 0;
  let publishing: Promise<void> | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      abort.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  async function list(kind: SummaryKind): Promise<string> {
    const source = SOURCES[kind];
    const started = Date.now();
    const relist = builder.relist(kind);
    const head = await api.list(
      {
        path: source.path,
        ...(source.fieldSelector === undefined ? {} : { query: { fieldSelector: source.fieldSelector } }),
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(300_000)]),
      },
      (item) => {
        relist.add(item);
        if (kind === 'pods') options.onPod?.('ADDED', item);
      },
    );
    const differences = relist.end();
    const wasListed = state[kind].listed;
    state[kind].listed = true;
    state[kind].activityMs = Date.now();
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

  /** Watches from `from` until the watch must be relisted (410, or time for a relist). */
  async function watch(kind: SummaryKind, from: string, listedAtMs: number): Promise<void> {
    const source = SOURCES[kind];
    let resourceVersion = from;
    while (!abort.signal.aborted && Date.now() - listedAtMs < relistEveryMs) {
      let gone = false;
      state[kind].open = true;
      state[kind].activityMs = Date.now();
      try {
        await api.stream(
          {
            path: source.path,
            query: {
              watch: 'true',
              allowWatchBookmarks: 'true',
              resourceVersion,
              timeoutSeconds: String(options.watchTimeoutSeconds ?? 240),
              ...(source.fieldSelector === undefined ? {} : { fieldSelector: source.fieldSelector }),
            },
            signal: abort.signal,
          },
          (line) => {
            const event = line as WatchEvent;
            state[kind].activityMs = Date.now();
            if (event.type === 'ERROR') {
              // 410 Gone: the API server no longer has events from our resourceVersion.
              gone = true;
              throw new Error(`watch of ${kind} ended: ${JSON.stringify(event.object).slice(0, 300)}`);
            }
            const next = event.object?.metadata?.resourceVersion;
            if (next !== undefined) resourceVersion = next;
            if (event.type === 'BOOKMARK') return;
            if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
            builder.apply(kind, event.type, event.object);
            if (kind === 'pods') options.onPod?.(event.type, event.object);
            dirty = true;
          },
        );
      } catch (error) {
        state[kind].open = false;
        if (gone || abort.signal.aborted) return;
        throw error;
      }
      state[kind].open = false;
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
        failures += 1;
        const base = Math.min(30_000, 500 * 2 ** (failures - 1));
        const retryInMs = Math.round(base / 2 + Math.random() * (base / 2));
        logger.warn('summary watch failed; listing again', { kind, error, attempt: failures, retryInMs });
        await sleep(retryInMs);
      }
    }
  }

  /** When `kind` is known current: now while its watch is open and not quiet, else its last proof. */
  const currentAt = (kind: SummaryKind, nowMs: number): number => {
    const s = state[kind];
    return s.open && nowMs - s.activityMs < quietMs ? nowMs : s.activityMs;
  };

  async function publishNow(): Promise<void> {
    const nowMs = Date.now();
    const current = {
      pods: new Date(currentAt('pods', nowMs)).toISOString(),
      nodes: new Date(currentAt('nodes', nowMs)).toISOString(),
      nodeClaims: new Date(currentAt('nodeClaims', nowMs)).toISOString(),
    };
    dirty = false;
    const body = await gzipAsync(JSON.stringify(builder.document(new Date(nowMs).toISOString(), current)), {
      level: 4,
    });
    await options.publish(body);
    published += 1;
    lastBytes = body.length;
    publishedAtMs = nowMs;
  }

  const tick = setInterval(() => {
    if (publishing !== undefined || !Object.values(state).every((s) => s.listed)) return;
    const since = Date.now() - publishedAtMs;
    if ((dirty && since >= minIntervalMs) || since >= heartbeatMs) {
      publishing = publishNow()
        .catch((error: unknown) => {
          dirty = true;
          logger.warn('summary not published; trying again', { error });
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
