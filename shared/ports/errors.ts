import { FlotillaError } from '../core/index.ts';
import type { OfferingKey } from './offering.ts';

// The errors the ports promise, so use cases can tell them apart without knowing an adapter: each
// adapter translates what its SDK raises into these. Guards (`isNotFound`, `ignoreNotFound`, …)
// say what a use case may treat as an answer rather than a failure.

// ---------------------------------------------------------------------------------------------
// Cluster (Kubernetes)

/** A Kubernetes API call failed (HTTP error, timeout or connection failure). */
export class ClusterApiError extends FlotillaError {
  readonly code: string = 'ClusterApiError';

  constructor(
    /** What was being done, e.g. `patch status of nodeClaim "default-abc12"`. */
    readonly operation: string,
    /** HTTP status, or undefined when no response arrived (timeout, connection refused). */
    readonly httpStatus: number | undefined,
    detail: string,
    options?: {
      readonly cause?: unknown;
      /** The response's Retry-After, in seconds (a throttled or unavailable API server sets it). */
      readonly retryAfterSeconds?: number;
    },
  ) {
    super(
      `${operation} failed${httpStatus === undefined ? '' : ` with HTTP ${httpStatus}`}: ${detail}${advice(httpStatus)}`,
      options,
    );
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  readonly retryAfterSeconds: number | undefined;
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

/** True when the object the call named does not exist (HTTP 404). */
export function isNotFound(error: unknown): error is ClusterNotFoundError {
  return error instanceof ClusterNotFoundError;
}

/** `undefined` for an object that does not exist; any other failure is thrown on. */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** True when the object kept changing between a read and a write (HTTP 409 after the retries). */
export function isConflict(error: unknown): error is ClusterConflictError {
  return error instanceof ClusterConflictError;
}

// ---------------------------------------------------------------------------------------------
// Cloud (EC2)

/**
 * EC2 had no capacity for any of the offerings tried. The offerings are already backed off; the
 * NodeClaim should be deleted so the next provisioning round picks something else.
 */
export class InsufficientCapacityError extends FlotillaError {
  readonly code: string = 'InsufficientCapacity';

  constructor(
    message: string,
    readonly offerings: readonly OfferingKey[],
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A spot launch failed because the account has no EC2 Spot service-linked role
 * (`AWSServiceRoleForEC2Spot`) and the caller may not create it (CreateFleet's
 * `AuthFailure.ServiceLinkedRoleCreationNotPermitted`). Nothing was launched. Handled as
 * insufficient capacity, as Karpenter handles it: `offerings` holds the request's spot offerings,
 * now backed off, so the next attempt launches on-demand where the NodePool allows it.
 */
export class SpotServiceLinkedRoleError extends InsufficientCapacityError {
  override readonly code: string = 'SpotServiceLinkedRoleCreationNotPermitted';
}

/** The NodeClass's status is not Ready; nothing is launched. */
export class NodeClassNotReadyError extends FlotillaError {
  readonly code = 'NodeClassNotReady';

  constructor(
    readonly nodeClass: string,
    reasons: string,
  ) {
    super(
      `ec2NodeClass "${nodeClass}" is not ready, so nothing was launched: ${reasons}. Fix the EC2NodeClass (kubectl describe ec2nodeclass ${nodeClass}).`,
    );
  }
}

/** An AWS call failed with an error that is not insufficient capacity. */
export class CloudApiError extends FlotillaError {
  readonly code = 'CloudApiError';

  constructor(
    readonly operation: string,
    readonly awsCode: string,
    readonly awsMessage: string,
    advice: string,
    options?: {
      readonly cause?: unknown;
      /**
       * AWS failed, not the request: throttling, a 5xx, a timeout or a dropped connection that
       * outlasted the client's own retries. The same call may well succeed on the next pass, so a
       * caller keeps what it knew before rather than acting on the failure. @default false
       */
      readonly retryable?: boolean;
    },
  ) {
    super(`${operation} failed with ${awsCode}: ${awsMessage}${advice === '' ? '' : `. ${advice}`}`, options);
    this.retryable = options?.retryable ?? false;
  }

  readonly retryable: boolean;
}

/**
 * The cloud answered a launch and launched nothing (an error other than insufficient capacity, e.g.
 * a launch template or subnet it cannot use). Final for that launch record: no instance exists for
 * it, so the NodeClaim can go without an instance lookup.
 */
export class LaunchRejectedError extends FlotillaError {
  readonly code = 'LaunchRejected';

  constructor(
    readonly awsCode: string,
    message: string,
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True for a CloudApiError that says AWS failed for now (see `CloudApiError.retryable`). */
export function isRetryableCloudError(error: unknown): error is CloudApiError {
  return error instanceof CloudApiError && error.retryable;
}

/** Refused to touch an instance that this cluster did not launch. */
export class InstanceNotOwnedError extends FlotillaError {
  readonly code = 'InstanceNotOwned';

  constructor(
    readonly instanceId: string,
    clusterName: string,
  ) {
    super(
      `instance ${instanceId} is not tagged kubernetes.io/cluster/${clusterName}=owned with a karpenter.sh/nodepool tag, so Flotilla did not launch it and will not terminate it; terminate it yourself if it is yours to remove`,
    );
  }
}

/** The offering cache is empty or unreadable: the catalog refresh has not run yet or failed. */
export class CatalogUnavailableError extends FlotillaError {
  readonly code = 'CatalogUnavailable';
}

// ---------------------------------------------------------------------------------------------
// Work queues

/** A message could not be sent to one of the stack's work queues. */
export class QueueSendError extends FlotillaError {
  readonly code = 'QueueSendError';
}
