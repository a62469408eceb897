// Deciding a launch: the CreateFleet request for a NodeClaim, planned once from its candidate
// offerings (one launch template per AMI, max pods and capacity reservation; one override per
// instance type and zone with a subnet), then recorded and sent as it is.
import {
  type _InstanceType,
  type CreateFleetRequest,
  type DefaultTargetCapacityType,
  DescribeSubnetsCommand,
  type EC2Client,
  type FleetLaunchTemplateConfigRequest,
  type FleetLaunchTemplateOverridesRequest,
  type Subnet,
} from '@aws-sdk/client-ec2';
import { Tag } from '../../apis/aws-tags.ts';
import type { CapacityType, Offering } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  type AmiFamily,
  type LaunchRecord,
  type LaunchRequest,
  NodeClassNotReadyError,
  nodeClassNotReady,
} from '../../ports/cloud.ts';
import type { UnavailableOfferings } from '../../ports/state.ts';
import { partitionsOf, placementGroupOf, requiredPartition } from '../class-instance-types.ts';
import {
  type Candidate,
  launchTags,
  noOfferingLeft,
  requestsEnclaves,
  selectCandidates,
} from '../launch-plan.ts';
import { call } from './errors.ts';
import { clientToken, encodeFleetRequest } from './fleet-record.ts';
import type { LaunchTemplateStore } from './launch-templates.ts';
import { type ClusterInfo, clusterIpFamily, renderUserData } from './user-data.ts';

/** What planning a CreateFleet request reads: subnets, backed-off offerings, launch templates. */
export interface FleetPlanOptions {
  readonly ec2: EC2Client;
  readonly cluster: ClusterInfo;
  readonly clock: Clock;
  readonly unavailable: UnavailableOfferings;
  readonly launchTemplates: LaunchTemplateStore;
  /** The NodeClass's AMI family, resolved from its alias or spec. */
  readonly familyOf: (request: LaunchRequest) => AmiFamily | undefined;
}

const toTags = (tags: Record<string, string>) => Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));

/**
 * Plans the CreateFleet request of a NodeClaim and records it (`LaunchRecord`), creating the
 * launch templates it names.
 * @throws NodeClassNotReadyError, InsufficientCapacityError when no offering is left to launch.
 */
export function makeFleetPlanner(
  options: FleetPlanOptions,
): (request: LaunchRequest) => Promise<LaunchRecord> {
  const { ec2, cluster, clock, unavailable, launchTemplates } = options;

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
    const notReady = nodeClassNotReady(nodeClass);
    if (notReady !== undefined) throw new NodeClassNotReadyError(nodeClass.name, notReady);
    const now = clock.now();
    const backedOff = new Set((await unavailable.list(now)).keys());
    const zoneIds = new Map(
      (nodeClass.status?.subnets ?? []).flatMap((s) => (s.zoneID ? [[s.zone, s.zoneID] as const] : [])),
    );
    const selection = selectCandidates(request, backedOff, zoneIds);
    if (selection === undefined || selection.candidates.length === 0) {
      throw noOfferingLeft(request);
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
        ...(requestsEnclaves(request) ? { enclaves: true } : {}),
        ...(reservationId === undefined
          ? {}
          : {
              capacityReservation: {
                id: reservationId,
                type: first.offering.reservationType ?? 'default',
                ...(first.offering.reservationInterruptible === true ? { interruptible: true } : {}),
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

    const fleetRequest: CreateFleetRequest = {
      Type: 'instant',
      ...fleetCapacityOptions(capacityType, candidates, priorities !== undefined),
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

  return plan;
}

/**
 * The capacity part of a CreateFleet request: spot and on-demand as such; a reserved launch (its
 * candidates all of one kind of reservation, see `selectCandidates`) as on-demand capacity that
 * uses its reservation first for an On-Demand Capacity Reservation, as the `capacity-block`
 * capacity type for capacity blocks, and for an interruptible reservation as `reserved-capacity`
 * of the `interruptible-capacity-reservation` kind, as Karpenter asks for each. `prioritized`: a
 * NodeOverlay priced the offerings, so the fleet follows the plan's order.
 */
export function fleetCapacityOptions(
  capacityType: CapacityType,
  candidates: readonly { readonly offerings: readonly Offering[] }[],
  prioritized: boolean,
): Pick<
  CreateFleetRequest,
  'TargetCapacitySpecification' | 'SpotOptions' | 'OnDemandOptions' | 'ReservedCapacityOptions'
> {
  const offerings = candidates.flatMap((c) => c.offerings);
  const reserved = capacityType === 'reserved' && offerings.length > 0;
  const capacityBlock = reserved && offerings.every((o) => o.reservationType === 'capacity-block');
  const interruptible =
    reserved && !capacityBlock && offerings.every((o) => o.reservationInterruptible === true);
  const target = (DefaultTargetCapacityType: DefaultTargetCapacityType) => ({
    TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType },
  });
  if (capacityType === 'spot') {
    return {
      ...target('spot'),
      SpotOptions: {
        AllocationStrategy: prioritized ? 'capacity-optimized-prioritized' : 'price-capacity-optimized',
      },
    };
  }
  if (capacityBlock)
    return { ...target('capacity-block'), OnDemandOptions: { AllocationStrategy: 'lowest-price' } };
  if (interruptible) {
    return {
      ...target('reserved-capacity'),
      ReservedCapacityOptions: { ReservationTypes: ['interruptible-capacity-reservation'] },
    };
  }
  return {
    ...target('on-demand'),
    OnDemandOptions: {
      AllocationStrategy: prioritized && capacityType !== 'reserved' ? 'prioritized' : 'lowest-price',
      ...(capacityType === 'reserved'
        ? { CapacityReservationOptions: { UsageStrategy: 'use-capacity-reservations-first' } }
        : {}),
    },
  };
}

/** The partition a launch targets: the one its NodeClaim pins, in a `partition` group only. */
export function placementGroupPartition(request: LaunchRequest): string | undefined {
  const partition = requiredPartition(request.requirements);
  return partition !== undefined && partitionsOf(placementGroupOf(request.nodeClass)).includes(partition)
    ? partition
    : undefined;
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
