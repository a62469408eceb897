// The recorded form of a launch: the CreateFleet request decided once for a NodeClaim, its
// idempotency token, its encoding on the NodeClaim, and the capacity type it asks for.
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { CreateFleetRequest } from '@aws-sdk/client-ec2';
import type { CapacityType } from '../../core/index.ts';
import { LaunchRejectedError } from '../../ports/cloud.ts';

/**
 * The CreateFleet ClientToken: the NodeClaim name plus a digest of the request. The request is
 * decided once and recorded on the NodeClaim, so a resumed launch sends the same request with the
 * same token and EC2 answers with the instance it launched the first time. At most 64 ASCII
 * characters.
 */
export function clientToken(nodeClaimName: string, request: CreateFleetRequest): string {
  const digest = createHash('sha256')
    .update(JSON.stringify({ ...request, ClientToken: undefined }))
    .digest('hex')
    .slice(0, 12);
  return `${nodeClaimName.slice(0, 51)}-${digest}`;
}

/** The recorded form of a CreateFleet request: gzipped JSON in base64 (a few KB at most). */
export function encodeFleetRequest(request: CreateFleetRequest): string {
  return gzipSync(Buffer.from(JSON.stringify(request))).toString('base64');
}

/** @throws LaunchRejectedError when the record is not a CreateFleet request this adapter wrote. */
export function decodeFleetRequest(nodeClaimName: string, encoded: string): CreateFleetRequest {
  try {
    const parsed: unknown = JSON.parse(gunzipSync(Buffer.from(encoded, 'base64')).toString('utf8'));
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as CreateFleetRequest).ClientToken === 'string' &&
      Array.isArray((parsed as CreateFleetRequest).LaunchTemplateConfigs)
    ) {
      return parsed as CreateFleetRequest;
    }
  } catch (error) {
    throw new LaunchRejectedError(
      'MalformedLaunchRecord',
      `nodeClaim "${nodeClaimName}": its recorded launch request cannot be read (${error instanceof Error ? error.message : String(error)}); it was never sent as recorded`,
      { cause: error },
    );
  }
  throw new LaunchRejectedError(
    'MalformedLaunchRecord',
    `nodeClaim "${nodeClaimName}": its recorded launch request is not a CreateFleet request`,
  );
}

/** The capacity type a recorded CreateFleet request asks for. */
export function capacityTypeOf(request: CreateFleetRequest): CapacityType {
  const target = request.TargetCapacitySpecification?.DefaultTargetCapacityType;
  if (target === 'spot') return 'spot';
  if (target === 'capacity-block') return 'reserved';
  return request.OnDemandOptions?.CapacityReservationOptions === undefined ? 'on-demand' : 'reserved';
}
