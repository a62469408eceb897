// Launching a NodeClaim's instance: sending its recorded CreateFleet request exactly as recorded
// (at most one instance per record) and reading EC2's answer: the instance, or the offerings to
// back off and the error that says why nothing launched.
import { CreateFleetCommand, type CreateFleetError } from '@aws-sdk/client-ec2';
import { type CapacityType, Label } from '../../core/index.ts';
import {
  CloudApiError,
  type CloudInstance,
  InsufficientCapacityError,
  type LaunchOptions,
  type LaunchRecord,
  LaunchRejectedError,
  type LaunchRequest,
  type OfferingKey,
  SpotServiceLinkedRoleError,
} from '../../ports/cloud.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS } from '../../ports/state.ts';
import type { Logger } from '../../runtime/logger.ts';
import { launchOfferingKey } from '../class-instance-types.ts';
import { launchTags, MAX_INSTANCE_TYPES, selectCandidates, spotOfferingKeys } from '../launch-plan.ts';
import { CAPACITY_ERROR_CODES, call, SPOT_SERVICE_LINKED_ROLE_ERROR_CODE } from './errors.ts';
import { type FleetPlanOptions, makeFleetPlanner, placementGroupPartition } from './fleet-plan.ts';
import { capacityTypeOf, decodeFleetRequest, recordProblem } from './fleet-record.ts';
import type { InstanceOps } from './instances.ts';

export { launchTags, MAX_INSTANCE_TYPES, selectCandidates };

export interface LauncherOptions extends FleetPlanOptions {
  readonly logger: Logger;
  readonly instances: InstanceOps;
}

export interface Launcher {
  plan(request: LaunchRequest): Promise<LaunchRecord>;
  launch(request: LaunchRequest, record: LaunchRecord, options?: LaunchOptions): Promise<CloudInstance>;
}

/** Launches instances for NodeClaims with CreateFleet (type instant), as Karpenter does. */
export function makeLauncher(options: LauncherOptions): Launcher {
  const { ec2, clock, logger, unavailable, instances } = options;
  const plan = makeFleetPlanner(options);

  async function launch(
    request: LaunchRequest,
    record: LaunchRecord,
    options: LaunchOptions = {},
  ): Promise<CloudInstance> {
    const fleetRequest = decodeFleetRequest(request.nodeClaimName, record.request);
    const problem = recordProblem(request, fleetRequest);
    if (problem !== undefined) {
      throw new LaunchRejectedError(
        'MalformedLaunchRecord',
        `nodeClaim "${request.nodeClaimName}": its recorded launch request is not one Flotilla plans (${problem}); it is not sent`,
      );
    }
    // On a replay, an instance already tagged with the claim is the answer (the record was sent
    // before). A first send skips the lookup: a DescribeInstances on the way to every launch.
    const existing =
      options.firstSend === true ? undefined : await instances.findByNodeClaim(request.nodeClaimName);
    if (existing !== undefined && (existing.state === 'pending' || existing.state === 'running')) {
      logger.info('launch skipped: instance exists', {
        nodeClaim: request.nodeClaimName,
        instanceId: existing.instanceId,
      });
      return existing;
    }
    const now = clock.now();
    const capacityType = capacityTypeOf(fleetRequest);
    // Sent exactly as recorded: same request, same ClientToken, so EC2 launches at most once.
    const response = await call('ec2:CreateFleet', () =>
      ec2.send(new CreateFleetCommand(fleetRequest)),
    ).catch((error: unknown) => {
      throw refusedOrUnknown(request.nodeClaimName, error);
    });

    const zoneOfSubnet = new Map(
      (fleetRequest.LaunchTemplateConfigs ?? []).flatMap((c) =>
        (c.Overrides ?? []).map((o) => [o.SubnetId ?? '', o.AvailabilityZone ?? ''] as const),
      ),
    );
    const typeCount = new Set(
      (fleetRequest.LaunchTemplateConfigs ?? []).flatMap((c) =>
        (c.Overrides ?? []).map((o) => o.InstanceType),
      ),
    ).size;
    const errors = response.Errors ?? [];
    const iced = errors
      .filter((e) => CAPACITY_ERROR_CODES.has(e.ErrorCode ?? ''))
      .flatMap((e) => toOfferingKeys(e, capacityType, zoneOfSubnet, request))
      .map((key) => launchOfferingKey(key, request.nodeClass, placementGroupPartition(request)));
    if (iced.length > 0)
      await unavailable.mark(
        iced,
        'CreateFleet insufficient capacity',
        now,
        UNAVAILABLE_OFFERING_TTL_SECONDS,
      );

    // Without the spot service-linked role no spot offering launches: all of the request's are
    // backed off, so the next attempt takes on-demand where the NodePool allows it.
    const roleMissing = errors.some((e) => e.ErrorCode === SPOT_SERVICE_LINKED_ROLE_ERROR_CODE);
    // In a placement group, group-wide keys: they cover every partition.
    const spot = roleMissing
      ? spotOfferingKeys(request).map((key) => launchOfferingKey(key, request.nodeClass, undefined))
      : [];
    if (spot.length > 0)
      await unavailable.mark(
        spot,
        SPOT_SERVICE_LINKED_ROLE_ERROR_CODE,
        now,
        UNAVAILABLE_OFFERING_TTL_SECONDS,
      );

    // The launch decision (and its line) is the provisioning use case's: this returns or throws.
    const instanceId = response.Instances?.flatMap((i) => i.InstanceIds ?? [])[0];
    if (instanceId !== undefined) {
      const launched = await instances.get(instanceId);
      if (launched !== undefined) return launched;
      const zone = response.Instances?.[0]?.LaunchTemplateAndOverrides?.Overrides?.AvailabilityZone ?? '';
      return {
        instanceId,
        providerId: `aws:///${zone}/${instanceId}`,
        instanceType: response.Instances?.[0]?.InstanceType ?? '',
        zone,
        capacityType,
        state: 'pending',
        nodeClaimName: request.nodeClaimName,
        ...(request.nodePoolName === undefined ? {} : { nodePoolName: request.nodePoolName }),
        nodeClassName: request.nodeClass.name,
        tags: Object.fromEntries(
          (fleetRequest.TagSpecifications?.find((t) => t.ResourceType === 'instance')?.Tags ?? []).map(
            (t) => [t.Key ?? '', t.Value ?? ''],
          ),
        ),
      };
    }
    if (roleMissing) {
      throw new SpotServiceLinkedRoleError(
        `nodeClaim "${request.nodeClaimName}": EC2 refused the spot launch with ${SPOT_SERVICE_LINKED_ROLE_ERROR_CODE}: the account has no EC2 Spot service-linked role and Flotilla may not create it; spot offerings are backed off for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s. Create it once (aws iam create-service-linked-role --aws-service-name spot.amazonaws.com)`,
        [...iced, ...spot],
      );
    }
    const others = errors.filter((e) => !CAPACITY_ERROR_CODES.has(e.ErrorCode ?? ''));
    if (errors.length > 0 && others.length === 0) {
      throw new InsufficientCapacityError(
        `nodeClaim "${request.nodeClaimName}": EC2 had no ${capacityType} capacity for any of ${typeCount} instance types (${errors
          .map((e) => e.ErrorCode)
          .filter((c, i, all) => all.indexOf(c) === i)
          .join(
            ', ',
          )}); those offerings are backed off for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s and the next attempt picks others`,
        iced,
      );
    }
    const first = others[0];
    throw new LaunchRejectedError(
      first?.ErrorCode ?? 'NoInstanceLaunched',
      `ec2:CreateFleet launched nothing for nodeClaim "${request.nodeClaimName}": ${first?.ErrorCode ?? 'NoInstanceLaunched'}: ${first?.ErrorMessage ?? 'CreateFleet returned neither an instance nor an error'}. Fix the cause named (launch template, subnet, IAM or quota); its pods are planned again`,
    );
  }

  return { plan, launch };
}

/**
 * A CreateFleet call that threw: EC2 refusing the request itself (a 4xx client fault: a launch
 * template gone, a parameter or permission it rejects) launched nothing, which is final for that
 * record (LaunchRejectedError), so the NodeClaim goes and its pods are planned again with a fresh
 * launch template. Anything else (throttling, a 5xx, a timeout, a token used before with other
 * parameters) leaves it unknown whether an instance exists, so the CloudApiError stands and the
 * record is sent again.
 */
function refusedOrUnknown(nodeClaimName: string, error: unknown): unknown {
  if (!(error instanceof CloudApiError) || error.retryable) return error;
  const cause = error.cause as { $fault?: unknown; $metadata?: { httpStatusCode?: unknown } } | undefined;
  const status = cause?.$metadata?.httpStatusCode;
  const clientFault =
    cause?.$fault === 'client' &&
    typeof status === 'number' &&
    status >= 400 &&
    status < 500 &&
    status !== 429;
  if (!clientFault || error.awsCode === 'IdempotentParameterMismatch') return error;
  return new LaunchRejectedError(
    error.awsCode,
    `ec2:CreateFleet refused the launch of nodeClaim "${nodeClaimName}": ${error.awsCode}: ${error.awsMessage}; its pods are planned again`,
    { cause: error },
  );
}

function toOfferingKeys(
  error: CreateFleetError,
  capacityType: CapacityType,
  zoneOfSubnet: ReadonlyMap<string, string>,
  request: Pick<LaunchRequest, 'instanceTypes' | 'requirements'>,
): OfferingKey[] {
  const override = error.LaunchTemplateAndOverrides?.Overrides;
  const instanceType = override?.InstanceType;
  const zone = override?.AvailabilityZone ?? zoneOfSubnet.get(override?.SubnetId ?? '');
  if (instanceType === undefined || zone === undefined) return [];
  // A launch into a reservation is an on-demand one to EC2 (its errors say so): its capacity
  // errors are the reservation's.
  const lifecycle =
    capacityType === 'reserved'
      ? 'reserved'
      : error.Lifecycle === 'spot'
        ? 'spot'
        : error.Lifecycle === 'on-demand'
          ? 'on-demand'
          : capacityType;
  if (lifecycle !== 'reserved') return [{ instanceType, zone, capacityType: lifecycle }];
  return reservationsLaunched(request, instanceType, zone).map((reservationId) => ({
    instanceType,
    zone,
    capacityType: lifecycle,
    reservationId,
  }));
}

/**
 * The capacity reservations a reserved launch of the type in the zone went to: its reserved
 * offerings there that the requirements allow (a planned NodeClaim is pinned to one). A reserved
 * launch error backs off these reservations only.
 */
function reservationsLaunched(
  request: Pick<LaunchRequest, 'instanceTypes' | 'requirements'>,
  instanceType: string,
  zone: string,
): string[] {
  const pinned = request.requirements.find(
    (r) => r.key === Label.capacityReservationId && r.operator === 'In',
  )?.values;
  const ids = (request.instanceTypes.find((t) => t.name === instanceType)?.offerings ?? []).flatMap((o) =>
    o.capacityType === 'reserved' &&
    o.zone === zone &&
    o.reservationId !== undefined &&
    (pinned === undefined || pinned.includes(o.reservationId))
      ? [o.reservationId]
      : [],
  );
  return [...new Set(ids)].sort();
}
