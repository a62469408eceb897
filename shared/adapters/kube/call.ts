import {
  type ConfigurationOptions,
  Observable,
  type ObservableMiddleware,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { ClusterConflictError, toClusterError } from './errors.ts';

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

/** Per-request options that abort the HTTP request after `timeoutMs`. */
export function timeoutOptions(timeoutMs: number): ConfigurationOptions<ObservableMiddleware> {
  return {
    middleware: [
      {
        pre: (request) => {
          request.setSignal(AbortSignal.timeout(timeoutMs));
          return new Observable(Promise.resolve(request));
        },
        post: (response) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/** Timeout plus the merge-patch content type. */
export function mergePatchOptions(timeoutMs: number): ConfigurationOptions<ObservableMiddleware> {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch, timeoutOptions(timeoutMs));
}

/** Bounds, timeout and error translation for every API call the adapter makes. */
export interface Caller {
  /** Runs `call` under the concurrency bound with a timeout; errors become ClusterApiError. */
  call<T>(
    operation: string,
    call: (options: ConfigurationOptions<ObservableMiddleware>) => Promise<T>,
  ): Promise<T>;
  /** Same, with the merge-patch content type. */
  patch<T>(
    operation: string,
    call: (options: ConfigurationOptions<ObservableMiddleware>) => Promise<T>,
  ): Promise<T>;
}

export function makeCaller(limiter: Limiter, timeoutMs: number): Caller {
  const wrap = async <T>(
    operation: string,
    options: ConfigurationOptions<ObservableMiddleware>,
    call: (options: ConfigurationOptions<ObservableMiddleware>) => Promise<T>,
  ): Promise<T> => {
    try {
      return await limiter.run(() => call(options));
    } catch (error) {
      throw toClusterError(operation, error);
    }
  };
  return {
    call: (operation, call) => wrap(operation, timeoutOptions(timeoutMs), call),
    patch: (operation, call) => wrap(operation, mergePatchOptions(timeoutMs), call),
  };
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
