import { ApiException } from '@kubernetes/client-node';
import { FlotillaError } from '../../core/index.ts';

/** A Kubernetes API call failed (HTTP error, timeout or connection failure). */
export class ClusterApiError extends FlotillaError {
  readonly code: string = 'ClusterApiError';

  constructor(
    /** What was being done, e.g. `patch status of nodeClaim "default-abc12"`. */
    readonly operation: string,
    /** HTTP status, or undefined when no response arrived (timeout, connection refused). */
    readonly httpStatus: number | undefined,
    detail: string,
    options?: { readonly cause?: unknown },
  ) {
    super(
      `${operation} failed${httpStatus === undefined ? '' : ` with HTTP ${httpStatus}`}: ${detail}${advice(httpStatus)}`,
      options,
    );
  }
}

/** The object does not exist (HTTP 404). */
export class ClusterNotFoundError extends ClusterApiError {
  override readonly code: string = 'ClusterNotFound';
}

/** The object kept changing between read and write; the bounded retries ran out (HTTP 409). */
export class ClusterConflictError extends ClusterApiError {
  override readonly code: string = 'ClusterConflict';
}

/** The call did not finish within its timeout. */
export class ClusterTimeoutError extends ClusterApiError {
  override readonly code: string = 'ClusterTimeout';
}

function advice(status: number | undefined): string {
  switch (status) {
    case 401:
      return '; the credentials were rejected: check the kubeconfig or the EKS access entry of the Lambda role';
    case 403:
      return "; Flotilla's ClusterRole does not allow this: check infra/manifests.ts RBAC";
    case 429:
      return '; the API server is throttling: the call is safe to retry later';
    default:
      return '';
  }
}

/** HTTP status of an error thrown by @kubernetes/client-node, if it carries one. */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The API server's own message (`Status.message`) or the error's first line. */
export function detailOf(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    if (typeof body === 'string') {
      try {
        const parsed = JSON.parse(body) as { message?: unknown };
        if (typeof parsed.message === 'string') return parsed.message;
      } catch {
        return body.slice(0, 300);
      }
    }
    if (
      typeof body === 'object' &&
      body !== null &&
      typeof (body as { message?: unknown }).message === 'string'
    ) {
      return (body as { message: string }).message;
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
  return new ClusterApiError(operation, status, detail, { cause: error });
}

function isAbort(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return true;
  }
  return false;
}
