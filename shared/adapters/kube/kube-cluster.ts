import type { Clock } from '../../ports/clock.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type KubeRetryOptions, makeCaller, makeLimiter } from './call.ts';
import type { KubeContext } from './context.ts';
import { makeKubeCustomWrites } from './custom-writes.ts';
import { makeRecordEvent } from './events.ts';
import type { RawApi } from './http.ts';
import { makeKubeNodeDrain } from './node-drain.ts';
import { makeKubeReads } from './reads.ts';

/** Options of {@link makeKubeCluster}. */
export interface KubeClusterOptions {
  /**
   * The API server, as the identity to act as: `makeKubeHttp(makeKubeAccess(…))` in the Lambdas,
   * `makeRawApi(kubeConfig)` (raw.ts) on a @kubernetes/client-node KubeConfig elsewhere.
   */
  readonly connection: RawApi;
  readonly logger: Logger;
  /** @default the system clock */
  readonly clock?: Clock;
  /** API calls in flight at once, across all methods. @default 8 */
  readonly maxConcurrentCalls?: number;
  /** Each API call is aborted after this long. @default 10000 */
  readonly callTimeoutMs?: number;
  /** Attempts of a read-modify-write that keeps hitting 409 Conflict. @default 5 */
  readonly conflictAttempts?: number;
  /**
   * Retries of calls the API server could not answer for now (429, 5xx, timeouts); every retry is
   * logged. @default 5 attempts, 200 ms base, 5 s cap, no deadline
   */
  readonly retry?: Omit<KubeRetryOptions, 'onRetry'>;
  /** Page size of the paginated list calls (the pods of one node). @default 500 */
  readonly pageSize?: number;
  /** A whole list (read in one streamed response) is aborted after this long. @default 60000 */
  readonly listTimeoutMs?: number;
  /**
   * A list from which no byte arrives for this long is aborted (and retried); the first byte of a
   * large list may take a while from an API server that reads it from etcd. @default 30000
   */
  readonly listIdleTimeoutMs?: number;
  /**
   * A warm container catches up with the NodeClaims (nodeclaim-catch-up.ts) only when its last read
   * held at least this many; fewer are listed, which is quicker than waiting for a watch's
   * bookmark (about a second). @default 1000
   */
  readonly nodeClaimCatchUpFrom?: number;
  /** A repeated event within this window is dropped; later ones bump its count. @default 300 */
  readonly eventDedupeSeconds?: number;
  /** `source.component` / `reportingComponent` of events. @default 'flotilla' */
  readonly component?: string;
  /** `reportingInstance` of events (e.g. the Lambda function name). @default component */
  readonly instance?: string;
  /**
   * Test seam: runs between the read and the write of every read-modify-write, so a test can
   * change the object there and cause a real 409 Conflict.
   */
  readonly beforeWrite?: (kind: string, name: string) => Promise<void>;
}

/** The Cluster port over the Kubernetes API. */
export function makeKubeCluster(options: KubeClusterOptions): Cluster {
  const logger = options.logger;
  const component = options.component ?? 'flotilla';
  const ctx: KubeContext = {
    api: makeCaller(makeLimiter(options.maxConcurrentCalls ?? 8), options.callTimeoutMs ?? 10_000, {
      ...options.retry,
      onRetry: (retry) => logger.warn('kube call retried', { ...retry }),
    }),
    logger,
    clock: options.clock ?? { now: () => new Date() },
    conflictAttempts: options.conflictAttempts ?? 5,
    pageSize: options.pageSize ?? 500,
    raw: options.connection,
    listTimeoutMs: options.listTimeoutMs ?? 60_000,
    callTimeoutMs: options.callTimeoutMs ?? 10_000,
    listIdleTimeoutMs: options.listIdleTimeoutMs ?? 30_000,
    nodeClaimCatchUpFrom: options.nodeClaimCatchUpFrom ?? 1_000,
    beforeWrite: options.beforeWrite ?? (async () => {}),
  };
  return {
    ...makeKubeReads(ctx),
    ...makeKubeCustomWrites(ctx),
    ...makeKubeNodeDrain(ctx),
    recordEvent: makeRecordEvent(ctx, {
      dedupeSeconds: options.eventDedupeSeconds ?? 300,
      component,
      instance: options.instance ?? component,
    }),
  };
}
