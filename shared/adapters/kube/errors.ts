import {
  ClusterApiError,
  ClusterConflictError,
  ClusterNotFoundError,
  ClusterTimeoutError,
} from '../../ports/errors.ts';
import { KubeHttpError } from './http.ts';

// Translation of what the API client (http.ts) raises into the Cluster port's errors.

export { ClusterApiError, ClusterConflictError, ClusterNotFoundError, ClusterTimeoutError };

/** HTTP status of an error the API client threw, if it carries one. */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof KubeHttpError) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** An HTTP answer of the API server. */
function isHttpAnswer(error: unknown): error is KubeHttpError {
  return error instanceof KubeHttpError;
}

/** The API server's own message (`Status.message`) or the error's first line. */
export function detailOf(error: unknown): string {
  if (isHttpAnswer(error)) {
    try {
      const parsed = JSON.parse(error.body) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      if (error.body !== '') return error.body.slice(0, 300);
    }
  }
  if (error instanceof Error) return error.message.split('\n')[0] ?? error.name;
  return String(error);
}

/** Translates a client error into the typed errors above. */
export function toClusterError(operation: string, error: unknown): ClusterApiError {
  if (error instanceof ClusterApiError) return error;
  const status = httpStatusOf(error);
  const detail = detailOf(error);
  if (status === 404) return new ClusterNotFoundError(operation, status, detail, { cause: error });
  if (status === 409) return new ClusterConflictError(operation, status, detail, { cause: error });
  if (isAbort(error)) {
    return new ClusterTimeoutError(operation, undefined, `no answer in time (${detail})`, { cause: error });
  }
  const retryAfter = retryAfterOf(error);
  return new ClusterApiError(operation, status, detail, {
    cause: error,
    ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
  });
}

/** Seconds of a response's Retry-After header (the delay-seconds form the API server sends). */
function retryAfterOf(error: unknown): number | undefined {
  if (!isHttpAnswer(error)) return undefined;
  const value = error.headers['retry-after'];
  const seconds = value === undefined ? Number.NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

function isAbort(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return true;
  }
  return false;
}

/** The API server refused to create something in a namespace that is being deleted. */
export function isNamespaceTerminating(error: unknown): boolean {
  return (
    error instanceof ClusterApiError &&
    error.httpStatus === 403 &&
    /being terminated|NamespaceTerminating/.test(error.message)
  );
}

/** The API server refused to create something in a namespace that no longer exists (404 naming it). */
export function isNamespaceGone(error: unknown, namespace: string): boolean {
  return (
    error instanceof ClusterNotFoundError && error.message.includes(`namespaces "${namespace}" not found`)
  );
}
