import { type ClusterApiError, ClusterConflictError, toClusterError } from './errors.ts';

/** Runs at most `limit` tasks at once; the rest wait in order. */
export interface Limiter {
  run<T>(task: () => Promise<T>): Promise<T>;
}

export function makeLimiter(limit: number): Limiter {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`concurrency ${limit} must be a positive integer`);
  let active = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    active--;
    waiting.shift()?.();
  };
  return {
    async run(task) {
      if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
      active++;
      try {
        return await task();
      } finally {
        release();
      }
    },
  };
}

/** How API calls that the API server could not answer for now are retried. */
export interface KubeRetryOptions {
  /** Attempts in total, the first included. @default 5 */
  readonly maxAttempts?: number;
  /** Backoff base; the n-th retry waits a uniform random time below base·2^n. @default 200 */
  readonly baseDelayMs?: number;
  /** Cap of one wait (a Retry-After above it is capped too). @default 5000 */
  readonly maxDelayMs?: number;
  /**
   * Epoch milliseconds after which no retry starts (the invocation's deadline, less a margin);
   * undefined when there is none.
   */
  readonly deadlineMs?: () => number | undefined;
  /** Uniform random in [0, 1), for the jitter. @default Math.random */
  readonly random?: () => number;
  /** Waits; tests pass a fake. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Told about every retry (for the log). */
  readonly onRetry?: (retry: {
    readonly operation: string;
    readonly attempt: number;
    readonly delayMs: number;
    readonly httpStatus: number | undefined;
    readonly error: string;
  }) => void;
}

/** Per call: what a 429 means for this call. */
export interface CallOptions {
  /**
   * A 429 is the call's answer, not throttling (the Eviction API refuses with 429 while a
   * PodDisruptionBudget allows no disruption), so it is not retried. @default false
   */
  readonly tooManyRequestsIsAnswer?: boolean;
}

/** Bounds, timeout, retries and error translation for every API call the adapter makes. */
export interface Caller {
  /**
   * Runs `call` under the concurrency bound with a timeout (the signal it is given aborts the
   * attempt after the caller's timeout); 429 (after its Retry-After), 500, 502,
   * 503, 504, timeouts and dropped connections are retried with backoff and jitter within the
   * deadline; errors become ClusterApiError.
   */
  call<T>(operation: string, call: (signal: AbortSignal) => Promise<T>, options?: CallOptions): Promise<T>;
}

const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Whether a failed call may succeed if made again: the API server was busy or failing, or no answer came. */
export function isRetryableClusterError(error: ClusterApiError, options: CallOptions = {}): boolean {
  if (error.httpStatus === undefined) return true;
  if (error.httpStatus === 429) return !options.tooManyRequestsIsAnswer;
  return RETRIED_STATUSES.has(error.httpStatus);
}

export function makeCaller(limiter: Limiter, timeoutMs: number, retry: KubeRetryOptions = {}): Caller {
  const maxAttempts = Math.max(1, retry.maxAttempts ?? 5);
  const base = retry.baseDelayMs ?? 200;
  const cap = retry.maxDelayMs ?? 5_000;
  const random = retry.random ?? Math.random;
  const wait = retry.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const wrap = async <T>(
    operation: string,
    call: (signal: AbortSignal) => Promise<T>,
    callOptions: CallOptions = {},
  ): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let error: ClusterApiError;
      try {
        // The timeout starts when the call does, not while it waits for a slot.
        return await limiter.run(() => call(AbortSignal.timeout(timeoutMs)));
      } catch (caught) {
        error = toClusterError(operation, caught);
      }
      if (attempt >= maxAttempts || !isRetryableClusterError(error, callOptions)) throw error;
      const backoff = Math.floor(random() * Math.min(cap, base * 2 ** (attempt - 1)));
      const delayMs = Math.min(cap, Math.max(backoff, (error.retryAfterSeconds ?? 0) * 1000));
      const deadline = retry.deadlineMs?.();
      if (deadline !== undefined && Date.now() + delayMs >= deadline) throw error;
      retry.onRetry?.({
        operation,
        attempt,
        delayMs,
        httpStatus: error.httpStatus,
        error: error.message.slice(0, 200),
      });
      await wait(delayMs);
    }
  };
  return { call: wrap };
}

/**
 * Read-modify-write: runs `attempt` (which must re-read the object) again while it fails with a
 * conflict, at most `attempts` times in all.
 * @throws ClusterConflictError when every attempt conflicted.
 */
export async function retryOnConflict<T>(attempts: number, attempt: () => Promise<T>): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ClusterConflictError)) throw error;
      last = error;
    }
  }
  throw last;
}
