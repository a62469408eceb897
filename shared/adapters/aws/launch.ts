import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  type _InstanceType,
  CreateFleetCommand,
  type CreateFleetError,
  type CreateFleetRequest,
  DescribeSubnetsCommand,
  type EC2Client,
  type FleetLaunchTemplateConfigRequest,
  type FleetLaunchTemplateOverridesRequest,
  type Subnet,
} from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import { type CapacityType, Label, NodeClassConditionType, type Offering } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  type AmiFamily,
  CloudApiError,
  type CloudInstance,
  InsufficientCapacityError,
  isNodeClassReady,
  type LaunchOptions,
  type LaunchRecord,
  LaunchRejectedError,
  type LaunchRequest,
  NodeClassNotReadyError,
  type OfferingKey,
  SpotServiceLinkedRoleError,
} from '../../ports/cloud.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS, type UnavailableOfferings } from '../../ports/state.ts';
import type { Logger } from '../../runtime/logger.ts';
import {
  launchOfferingKey,
  partitionsOf,
  placementGroupOf,
  requiredPartition,
} from '../class-instance-types.ts';
import {
  type Candidate,
  launchTags,
  MAX_INSTANCE_TYPES,
  selectCandidates,
  spotOfferingKeys,
} from '../launch-plan.ts';
import { CAPACITY_ERROR_CODES, call, SPOT_SERVICE_LINKED_ROLE_ERROR_CODE } from './errors.ts';
import type { InstanceOps } from './instances.ts';
import type { LaunchTemplateStore } from './launch-templates.ts';
import { type ClusterInfo, clusterIpFamily, renderUserData } from './user-data.ts';

export { launchTags, MAX_INSTANCE_TYPES, selectCandidates };

export interface LauncherOptions {
  readonly ec2: EC2Client;
  readonly cluster: ClusterInfo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly unavailable: UnavailableOfferings;
  readonly launchTemplates: LaunchTemplateStore;
  readonly instances: InstanceOps;
  /** The NodeClass's AMI family, resolved from its alias or spec. */
  readonly familyOf: (request: LaunchRequest) => AmiFamily | undefined;
}

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

const toTags = (tags: Record<string, string>) => Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));

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
function capacityTypeOf(request: CreateFleetRequest): CapacityType {
  const target = request.TargetCapacitySpecification?.DefaultTargetCapacityType;
  if (target === 'spot') return 'spot';
  if (target === 'capacity-block') return 'reserved';
  return request.OnDemandOptions?.CapacityReservationOptions === undefined ? 'on-demand' : 'reserved';
}

export interface Launcher {
  plan(request: LaunchRequest): Promise<LaunchRecord>;
  launch(request: LaunchRequest, record: LaunchRecord, options?: LaunchOptions): Promise<CloudInstance>;
}

/** Launches instances for NodeClaims with CreateFleet (type instant), as Karpenter does. */
export function makeLauncher(options: LauncherOptions): Launcher {
  const { ec2, cluster, clock, logger, unavailable, launchTemplates, instances } = options;

  async function subnetsByZone(ids: readonly string[]): Promise<Map<string, Subnet>> {
    const result = await call('ec2:DescribeSubnets', () =>
      ec2.send(new DescribeSubnetsCommand({ SubnetIds: [...ids] })),
    );
    const best = new Map<string, Subnet>();
    for (const subnet of result.Subnets ?? []) {
      const zone = subnet.AvailabilityZone ?? '';
      const current = best.get(zone);
      if (
        current === undefined ||
        (subnet.AvailableIpAddressCount ?? 0) > (current.AvailableIpAddressCount ?? 0)
      ) {
        best.set(zone, subnet);
      }
    }
    return best;
  }

  async function plan(request: LaunchRequest): Promise<LaunchRecord> {
    const nodeClass = request.nodeClass;
    if (!isNodeClassReady(nodeClass.status)) {
      const ready = nodeClass.status?.conditions.find((c) => c.type === NodeClassConditionType.ready);
      throw new NodeClassNotReadyError(nodeClass.name, ready?.message || 'it has no resolved status yet');
    }
    const now = clock.now();
    const backedOff = new Set((await unavailable.list(now)).keys());
    const zoneIds = new Map(
      (nodeClass.status?.subnets ?? []).flatMap((s) => (s.zoneID ? [[s.zone, s.zoneID] as const] : [])),
    );
    const selection = selectCandidates(request, backedOff, zoneIds);
    if (selection === undefined || selection.candidates.length === 0) {
      throw new InsufficientCapacityError(
        `nodeClaim "${request.nodeClaimName}": none of the ${request.instanceTypes.length} instance types has an available offering in the zones of ec2NodeClass "${nodeClass.name}" (${[...new Set((nodeClass.status?.subnets ?? []).map((s) => s.zone))].join(', ')}) that the requirements allow; offerings may be backed off after insufficient capacity for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s, or widen the NodePool requirements`,
        [],
      );
    }
    const { capacityType, candidates } = selection;
    // A price a NodeOverlay set is not EC2's: the fleet then follows the plan's order (priorities)
    // instead of choosing by EC2's own prices, as Karpenter launches overlaid offerings.
    const priorities = overlayPriorities(candidates);
    const subnets = await subnetsByZone((nodeClass.status?.subnets ?? []).map((s) => s.id));
    const family = options.familyOf(request);
    const partition = placementGroupPartition(request);
    const tags = launchTags(request, cluster.name);
    const { [Tag.nodeClaim]: _claim, [Tag.name]: _name, ...templateTags } = tags;

    // One launch template per (AMI, max pods, capacity reservation): the user data carries
    // maxPods, and a reserved launch targets its reservation through the template.
    const groups = new Map<string, { candidate: Candidate; offering: Offering }[]>();
    for (const candidate of candidates) {
      for (const offering of candidate.offerings) {
        const key = `${candidate.ami.id}/${candidate.type.capacity['pods'] ?? 110}/${offering.reservationId ?? ''}`;
        groups.set(key, [...(groups.get(key) ?? []), { candidate, offering }]);
      }
    }
    const configs: { config: FleetLaunchTemplateConfigRequest; price: number }[] = [];
    for (const group of groups.values()) {
      const first = group[0];
      if (first === undefined) continue;
      const userData = renderUserData({
        family: family ?? 'Custom',
        cluster,
        nodeClassName: nodeClass.name,
        labels: request.labels,
        taints: request.taints,
        startupTaints: request.startupTaints,
        ...(nodeClass.spec.kubelet === undefined ? {} : { kubelet: nodeClass.spec.kubelet }),
        maxPods: first.candidate.type.capacity['pods'] ?? 110,
        ...(nodeClass.spec.userData === undefined ? {} : { customUserData: nodeClass.spec.userData }),
        ...(nodeClass.spec.instanceStorePolicy === undefined
          ? {}
          : { instanceStorePolicy: nodeClass.spec.instanceStorePolicy }),
      });
      const reservationId = first.offering.reservationId;
      const template = await launchTemplates.ensure({
        nodeClass,
        family,
        ipFamily: clusterIpFamily(cluster, nodeClass.spec.kubelet),
        ...(partition === undefined ? {} : { partition }),
        imageId: first.candidate.ami.id,
        userData,
        tags: templateTags,
        ...(reservationId === undefined
          ? {}
          : {
              capacityReservation: {
                id: reservationId,
                type: first.offering.reservationType ?? 'default',
              },
            }),
      });
      const overrides: FleetLaunchTemplateOverridesRequest[] = [];
      for (const { candidate, offering } of group) {
        const subnet = subnets.get(offering.zone);
        if (subnet?.SubnetId === undefined) continue;
        const priority = priorities?.get(offering);
        overrides.push({
          InstanceType: candidate.type.name as _InstanceType,
          SubnetId: subnet.SubnetId,
          AvailabilityZone: offering.zone,
          ...(priority === undefined ? {} : { Priority: priority }),
        });
      }
      if (overrides.length === 0) continue;
      configs.push({
        config: {
          LaunchTemplateSpecification: { LaunchTemplateId: template.id, Version: '$Latest' },
          Overrides: overrides,
        },
        price: first.candidate.price,
      });
    }
    // EC2 chooses by price itself; the order also makes the cheapest override first for moto.
    configs.sort((a, b) => a.price - b.price);

    // Capacity blocks are bought as their own capacity type; an ODCR is on-demand capacity.
    const capacityBlock =
      capacityType === 'reserved' &&
      candidates.every((c) => c.offerings.every((o) => o.reservationType === 'capacity-block'));
    const fleetRequest: CreateFleetRequest = {
      Type: 'instant',
      TargetCapacitySpecification: {
        TotalTargetCapacity: 1,
        DefaultTargetCapacityType:
          capacityType === 'spot' ? 'spot' : capacityBlock ? 'capacity-block' : 'on-demand',
      },
      ...(capacityType === 'spot'
        ? {
            SpotOptions: {
              AllocationStrategy:
                priorities === undefined ? 'price-capacity-optimized' : 'capacity-optimized-prioritized',
            },
          }
        : {
            OnDemandOptions: {
              AllocationStrategy:
                priorities === undefined || capacityType === 'reserved' ? 'lowest-price' : 'prioritized',
              ...(capacityType === 'reserved' && !capacityBlock
                ? { CapacityReservationOptions: { UsageStrategy: 'use-capacity-reservations-first' } }
                : {}),
            },
          }),
      LaunchTemplateConfigs: configs.map((c) => c.config),
      ...(nodeClass.spec.context === undefined ? {} : { Context: nodeClass.spec.context }),
      TagSpecifications: [
        { ResourceType: 'instance', Tags: toTags(tags) },
        { ResourceType: 'volume', Tags: toTags(tags) },
        { ResourceType: 'fleet', Tags: toTags(tags) },
      ],
    };
    fleetRequest.ClientToken = clientToken(request.nodeClaimName, fleetRequest);
    return { decidedAtMs: now.getTime(), request: encodeFleetRequest(fleetRequest) };
  }

  async function launch(
    request: LaunchRequest,
    record: LaunchRecord,
    options: LaunchOptions = {},
  ): Promise<CloudInstance> {
    const fleetRequest = decodeFleetRequest(request.nodeClaimName, record.request);
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
        nodePoolName: request.nodePoolName,
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

/** The partition a launch targets: the one its NodeClaim pins, in a `partition` group only. */
function placementGroupPartition(request: LaunchRequest): string | undefined {
  const partition = requiredPartition(request.requirements);
  return partition !== undefined && partitionsOf(placementGroupOf(request.nodeClass)).includes(partition)
    ? partition
    : undefined;
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

/**
 * Each offering's priority (0 first) in price order, when a NodeOverlay priced any of them;
 * undefined otherwise (EC2 then chooses by its own prices).
 */
export function overlayPriorities(
  candidates: readonly { readonly offerings: readonly Offering[] }[],
): ReadonlyMap<Offering, number> | undefined {
  const offerings = candidates.flatMap((c) => c.offerings);
  if (!offerings.some((o) => o.priceOverlaid === true)) return undefined;
  const ordered = [...offerings].sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour);
  return new Map(ordered.map((o, i) => [o, i]));
}
