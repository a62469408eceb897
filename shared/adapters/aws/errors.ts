import { CloudApiError } from '../../ports/cloud.ts';

/**
 * CreateFleet error codes that mean "no capacity for this offering right now"
 * (Karpenter's unfulfillableCapacityErrorCodes).
 */
export const CAPACITY_ERROR_CODES: ReadonlySet<string> = new Set([
  'InsufficientInstanceCapacity',
  'MaxSpotInstanceCountExceeded',
  'VcpuLimitExceeded',
  'UnfulfillableCapacity',
  'Unsupported',
  'InsufficientFreeAddressesInSubnet',
  'MaxFleetCountExceeded',
  'ReservationCapacityExceeded',
]);

/**
 * The CreateFleet error of a spot launch in an account without the EC2 Spot service-linked role
 * (`AWSServiceRoleForEC2Spot`) when the caller may not create it (`iam:CreateServiceLinkedRole`).
 */
export const SPOT_SERVICE_LINKED_ROLE_ERROR_CODE = 'AuthFailure.ServiceLinkedRoleCreationNotPermitted';

/** Error codes meaning the resource no longer exists. */
const NOT_FOUND_CODES: ReadonlySet<string> = new Set([
  'InvalidInstanceID.NotFound',
  'InvalidLaunchTemplateName.NotFoundException',
  'InvalidLaunchTemplateId.NotFound',
  'InvalidLaunchTemplateId.VersionNotFound',
  'ParameterNotFound',
]);

/** The AWS error code of an SDK error (its `name`), or `Unknown`. */
export function awsErrorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { Code?: unknown }).Code;
    return typeof code === 'string' ? code : error.name;
  }
  return 'Unknown';
}

export function isNotFound(error: unknown): boolean {
  return NOT_FOUND_CODES.has(awsErrorCode(error));
}

/** Codes AWS services use when they throttle a caller. */
const THROTTLING_CODES: ReadonlySet<string> = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'TransactionInProgressException',
  'RequestLimitExceededException',
  'BandwidthLimitExceeded',
  'SlowDown',
  'PriorRequestNotComplete',
  'EC2ThrottledException',
]);

/** Codes of AWS-side faults and of requests that never got an answer. */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'InternalError',
  'InternalFailure',
  'InternalServerError',
  'InternalServiceError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'Unavailable',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
]);

/**
 * Whether an SDK error means AWS failed for now rather than that the request was wrong: throttling,
 * a 5xx answer, a timeout or a connection that broke. The SDK's own retries are already spent when
 * such an error reaches an adapter; the next pass may succeed.
 */
export function isTransientAwsError(error: unknown): boolean {
  const code = awsErrorCode(error);
  if (THROTTLING_CODES.has(code) || TRANSIENT_CODES.has(code)) return true;
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  if (typeof status === 'number' && (status >= 500 || status === 429)) return true;
  const fault = (error as { $fault?: unknown } | null)?.$fault;
  const retryable = (error as { $retryable?: unknown } | null)?.$retryable;
  if (fault === 'server' || (typeof retryable === 'object' && retryable !== null)) return true;
  const systemCode = (error as { code?: unknown } | null)?.code;
  return typeof systemCode === 'string' && TRANSIENT_CODES.has(systemCode);
}

/** Wraps an SDK error in a CloudApiError that names the call and says what to do. */
export function toCloudApiError(operation: string, error: unknown, advice = ''): CloudApiError {
  const code = awsErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return new CloudApiError(operation, code, message, advice || adviceFor(code), {
    cause: error,
    retryable: isTransientAwsError(error),
  });
}

function adviceFor(code: string): string {
  if (code === 'UnauthorizedOperation' || code === 'AccessDenied' || code === 'AccessDeniedException') {
    return "Check the Lambda role's IAM policy against the permissions in the Flotilla docs";
  }
  if (THROTTLING_CODES.has(code) || code.includes('Throttl')) {
    return 'AWS throttled the call after all retries; it is retried on the next run';
  }
  return '';
}

/** Runs an SDK call, translating its failure into a CloudApiError. */
export async function call<T>(operation: string, run: () => Promise<T>, advice = ''): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toCloudApiError(operation, error, advice);
  }
}
