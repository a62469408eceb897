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

/** Wraps an SDK error in a CloudApiError that names the call and says what to do. */
export function toCloudApiError(operation: string, error: unknown, advice = ''): CloudApiError {
  const code = awsErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return new CloudApiError(operation, code, message, advice || adviceFor(code), { cause: error });
}

function adviceFor(code: string): string {
  if (code === 'UnauthorizedOperation' || code === 'AccessDenied' || code === 'AccessDeniedException') {
    return "Check the Lambda role's IAM policy against the permissions in the Flotilla docs";
  }
  if (code === 'RequestLimitExceeded' || code.includes('Throttl')) {
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
