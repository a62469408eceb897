// The recorded form of a launch: the CreateFleet request decided once for a NodeClaim, its
// idempotency token, its encoding on the NodeClaim, and the capacity type it asks for.
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { CreateFleetRequest } from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import type { CapacityType } from '../../core/index.ts';
import { LaunchRejectedError, type LaunchRequest } from '../../ports/cloud.ts';

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

const OVERRIDE_KEYS: ReadonlySet<string> = new Set([
  'InstanceType',
  'SubnetId',
  'AvailabilityZone',
  'Priority',
]);

/**
 * Why a recorded request is not one this adapter plans for `request`, or undefined when it is. A
 * record sits in a NodeClaim annotation, which whoever can write the NodeClaim (a user, for a
 * standalone one) can write too: it is sent only if it is an instant fleet of one instance, over
 * launch templates by id at `$Latest` (the launch policy allows only this cluster's), with
 * overrides of nothing but the request's instance types in the class's subnets (no image or other
 * setting), tagged for this NodeClaim, in the class's fleet context.
 */
export function recordProblem(request: LaunchRequest, fleet: CreateFleetRequest): string | undefined {
  if (fleet.Type !== 'instant') return `fleet type ${String(fleet.Type)}, not instant`;
  if (fleet.TargetCapacitySpecification?.TotalTargetCapacity !== 1) return 'a target capacity other than 1';
  if ((fleet.Context ?? undefined) !== request.nodeClass.spec.context) return 'another fleet context';
  const types = new Set(request.instanceTypes.map((t) => t.name));
  const subnets = new Set((request.nodeClass.status?.subnets ?? []).map((s) => s.id));
  for (const config of fleet.LaunchTemplateConfigs ?? []) {
    const spec = config.LaunchTemplateSpecification;
    if (
      spec?.LaunchTemplateId === undefined ||
      spec.LaunchTemplateName !== undefined ||
      spec.Version !== '$Latest'
    ) {
      return 'a launch template not named by id at $Latest';
    }
    for (const override of config.Overrides ?? []) {
      const extra = Object.keys(override).find((k) => !OVERRIDE_KEYS.has(k));
      if (extra !== undefined) return `an override of ${extra}`;
      if (!types.has(String(override.InstanceType)))
        return `instance type ${String(override.InstanceType)}, not a candidate`;
      if (!subnets.has(String(override.SubnetId)))
        return `subnet ${String(override.SubnetId)}, not the class's`;
    }
  }
  const instanceTags = fleet.TagSpecifications?.find((t) => t.ResourceType === 'instance')?.Tags ?? [];
  if (!instanceTags.some((t) => t.Key === Tag.nodeClaim && t.Value === request.nodeClaimName)) {
    return 'instances not tagged for this NodeClaim';
  }
  return undefined;
}
