import type { CapacityType } from '../../core/index.ts';
import { nodeClassFamily } from '../../ports/ami-family.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  type Cloud,
  type CloudInstance,
  type EC2NodeClass,
  InsufficientCapacityError,
  type LaunchOptions,
  type LaunchRecord,
  type LaunchRequest,
  NodeClassNotReadyError,
  nodeClassNotReady,
  type OfferingKey,
  SpotServiceLinkedRoleError,
  type SubnetStatus,
} from '../../ports/cloud.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS, type UnavailableOfferings } from '../../ports/state.ts';
import {
  launchOfferingKey,
  partitionsOf,
  placementGroupOf,
  requiredPartition,
} from '../class-instance-types.ts';
import { launchTags, noOfferingLeft, selectCandidates, spotOfferingKeys } from '../launch-plan.ts';
import { renderUserData } from '../user-data.ts';
import type { InstanceRecord, InstanceTable } from './instances.ts';

// Launches in the memory cloud as the AWS adapter makes them with CreateFleet: a plan recorded
// before it is sent (cheapest allowed offering first, reserved before spot before on-demand, the
// user data rendered as it would be), and a send that answers a repeated token as EC2 answers a
// repeated ClientToken, backing off offerings without capacity.

/** The first of the class's subnets in the zone, as the launch would place the instance. */
function subnetOf(subnets: readonly SubnetStatus[], zone: string): { subnetId?: string } {
  const subnet = subnets.find((s) => s.zone === zone);
  return subnet === undefined ? {} : { subnetId: subnet.id };
}

/** The launch a record asks for (the memory twin's form of a CreateFleet request). */
interface MemoryLaunch {
  readonly token: string;
  readonly capacityType: CapacityType;
  readonly tries: readonly {
    readonly instanceType: string;
    readonly zone: string;
    readonly imageId: string;
    readonly subnetId?: string;
    readonly reservationId?: string;
    readonly reservationType?: 'default' | 'capacity-block';
    readonly reservationInterruptible?: boolean;
  }[];
  readonly securityGroupIds: readonly string[];
  readonly placementGroup?: { readonly name: string; readonly id: string };
  /** The partitions of a `partition` group, and the one the NodeClaim pins (else EC2 chooses). */
  readonly partitions?: readonly string[];
  readonly partition?: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** One CreateFleet call the memory cloud answered: when it was sent, and for which NodeClaim. */
export interface FleetCall {
  readonly sentAtMs: number;
  readonly answeredAtMs: number;
  readonly nodeClaimName: string;
}

/** What a memory cloud's launches read and change. */
export interface FleetLaunchOptions {
  readonly clock: Clock;
  readonly clusterName: string;
  readonly noSpotRole: boolean;
  readonly unavailable: UnavailableOfferings;
  readonly instances: InstanceTable;
  readonly noCapacity: (key: OfferingKey, nowMs: number) => boolean;
  /** What a CreateFleet call waits before EC2 answers. @default none */
  readonly delay?: () => Promise<void>;
}

/** `planLaunch` and `launch` of a memory cloud. */
export function makeFleetLaunch(
  fleet: FleetLaunchOptions,
): Pick<Cloud, 'planLaunch' | 'launch'> & { fleetCalls(): readonly FleetCall[] } {
  const { clock, clusterName, noSpotRole, unavailable, noCapacity } = fleet;
  const { records, nextId, toInstance, liveByNodeClaim, reservationRoom, leastUsedPartition } =
    fleet.instances;

  /** What each token's launch came to, as EC2 remembers a ClientToken. */
  const outcomes = new Map<string, { instanceId: string } | { iced: readonly OfferingKey[] }>();
  let plans = 0;
  const calls: FleetCall[] = [];

  async function planLaunch(request: LaunchRequest): Promise<LaunchRecord> {
    const nodeClass: EC2NodeClass = request.nodeClass;
    const notReady = nodeClassNotReady(nodeClass);
    if (notReady !== undefined) throw new NodeClassNotReadyError(nodeClass.name, notReady);
    const now = clock.now();
    const backedOff = new Set((await unavailable.list(now)).keys());
    const subnets = request.nodeClass.status?.subnets ?? [];
    const zoneIds = new Map(subnets.flatMap((s) => (s.zoneID ? [[s.zone, s.zoneID] as const] : [])));
    const selection = selectCandidates(request, backedOff, zoneIds);
    if (selection === undefined || selection.candidates.length === 0) {
      throw noOfferingLeft(request);
    }
    const { capacityType, candidates } = selection;
    // EC2's lowest-price allocation: offerings cheapest first.
    const tries = candidates
      .flatMap((c) => c.offerings.map((offering) => ({ candidate: c, offering })))
      .sort(
        (a, b) =>
          a.offering.priceUsdPerHour - b.offering.priceUsdPerHour ||
          a.candidate.type.name.localeCompare(b.candidate.type.name) ||
          a.offering.zone.localeCompare(b.offering.zone),
      )
      .map(({ candidate, offering }) => ({
        instanceType: candidate.type.name,
        zone: offering.zone,
        imageId: candidate.ami.id,
        ...subnetOf(subnets, offering.zone),
        ...(offering.reservationId === undefined
          ? {}
          : {
              reservationId: offering.reservationId,
              reservationType: offering.reservationType ?? 'default',
              ...(offering.reservationInterruptible === true ? { reservationInterruptible: true } : {}),
            }),
      }));
    // The user data the AWS adapter would send: a class whose user data does not render for its
    // family fails here as it fails there.
    const family = nodeClassFamily(nodeClass.spec);
    renderUserData({
      family: family ?? 'Custom',
      cluster: { name: clusterName, endpoint: `https://${clusterName}.cluster.invalid`, caBundle: '' },
      nodeClassName: nodeClass.name,
      labels: request.labels,
      taints: request.taints,
      startupTaints: request.startupTaints,
      ...(nodeClass.spec.kubelet === undefined ? {} : { kubelet: nodeClass.spec.kubelet }),
      maxPods: candidates[0]?.type.capacity['pods'] ?? 110,
      ...(nodeClass.spec.userData === undefined ? {} : { customUserData: nodeClass.spec.userData }),
      ...(nodeClass.spec.instanceStorePolicy === undefined
        ? {}
        : { instanceStorePolicy: nodeClass.spec.instanceStorePolicy }),
    });
    plans += 1;
    const group = placementGroupOf(nodeClass);
    const partitions = partitionsOf(group);
    const pinned = requiredPartition(request.requirements);
    const launch: MemoryLaunch = {
      token: `${request.nodeClaimName}-${plans}`,
      capacityType,
      tries,
      securityGroupIds: (nodeClass.status?.securityGroups ?? []).map((g) => g.id),
      ...(group === undefined ? {} : { placementGroup: { name: group.name, id: group.id } }),
      ...(partitions.length === 0 ? {} : { partitions }),
      ...(pinned !== undefined && partitions.includes(pinned) ? { partition: pinned } : {}),
      tags: launchTags(request, clusterName),
    };
    return { decidedAtMs: now.getTime(), request: JSON.stringify(launch) };
  }

  async function launch(
    request: LaunchRequest,
    recorded: LaunchRecord,
    options: LaunchOptions = {},
  ): Promise<CloudInstance> {
    const plan = JSON.parse(recorded.request) as MemoryLaunch;
    // As the AWS adapter: a first send looks for no instance tagged with the claim.
    const existing = options.firstSend === true ? undefined : liveByNodeClaim(request.nodeClaimName);
    if (existing !== undefined) return toInstance(existing);
    // The call is on the wire: EC2 decides when it answers.
    const sentAtMs = clock.now().getTime();
    await fleet.delay?.();
    calls.push({ sentAtMs, answeredAtMs: clock.now().getTime(), nodeClaimName: request.nodeClaimName });
    const now = clock.now();
    const nowMs = now.getTime();
    const iceError = (iced: readonly OfferingKey[]) =>
      new InsufficientCapacityError(
        `nodeClaim "${request.nodeClaimName}": EC2 had no ${plan.capacityType} capacity for any of ${new Set(plan.tries.map((t) => t.instanceType)).size} instance types (InsufficientInstanceCapacity); those offerings are backed off for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s and the next attempt picks others`,
        iced,
      );
    // The same token gets the same answer, as EC2 answers a repeated ClientToken.
    const before = outcomes.get(plan.token);
    if (before !== undefined) {
      if ('iced' in before) throw iceError(before.iced);
      const record = records.get(before.instanceId);
      if (record !== undefined) return toInstance(record);
    }
    if (plan.capacityType === 'spot' && noSpotRole) {
      const spot = spotOfferingKeys(request).map((key) =>
        launchOfferingKey(key, request.nodeClass, undefined),
      );
      await unavailable.mark(
        spot,
        'AuthFailure.ServiceLinkedRoleCreationNotPermitted',
        now,
        UNAVAILABLE_OFFERING_TTL_SECONDS,
      );
      throw new SpotServiceLinkedRoleError(
        `nodeClaim "${request.nodeClaimName}": EC2 refused the spot launch with AuthFailure.ServiceLinkedRoleCreationNotPermitted; spot offerings are backed off for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s`,
        spot,
      );
    }
    // Every offering without capacity is reported (and backed off) until one launches. Offerings
    // never tried are not backed off, whereas the AWS adapter backs off whatever CreateFleet reports.
    const iced: OfferingKey[] = [];
    for (const t of plan.tries) {
      const key: OfferingKey = {
        instanceType: t.instanceType,
        zone: t.zone,
        capacityType: plan.capacityType,
        ...(t.reservationId === undefined ? {} : { reservationId: t.reservationId }),
        ...(plan.placementGroup === undefined ? {} : { placementGroupId: plan.placementGroup.id }),
        ...(plan.partition === undefined ? {} : { partition: plan.partition }),
      };
      // A reservation takes no more instances than it holds (EC2's ReservationCapacityExceeded).
      const full = t.reservationId !== undefined && (reservationRoom(t.reservationId) ?? 1) <= 0;
      if (full || noCapacity(key, nowMs)) {
        iced.push(key);
        continue;
      }
      if (iced.length > 0) {
        await unavailable.mark(iced, 'insufficient capacity', now, UNAVAILABLE_OFFERING_TTL_SECONDS);
      }
      const { instanceId, privateDnsName } = nextId();
      const record: InstanceRecord = {
        instanceId,
        instanceType: t.instanceType,
        zone: t.zone,
        capacityType: plan.capacityType,
        ...(t.reservationId === undefined
          ? {}
          : {
              reservationId: t.reservationId,
              reservationType: t.reservationType ?? 'default',
              ...(t.reservationInterruptible === true ? { reservationInterruptible: true } : {}),
            }),
        imageId: t.imageId,
        ...(t.subnetId === undefined ? {} : { subnetId: t.subnetId }),
        securityGroupIds: plan.securityGroupIds,
        ...(plan.placementGroup === undefined ? {} : { placementGroup: plan.placementGroup }),
        ...(plan.partitions === undefined
          ? {}
          : { partition: plan.partition ?? leastUsedPartition(plan.placementGroup?.id, plan.partitions) }),
        launchTimeMs: nowMs,
        privateDnsName,
        tags: plan.tags,
      };
      records.set(instanceId, record);
      outcomes.set(plan.token, { instanceId });
      return toInstance(record);
    }
    await unavailable.mark(iced, 'insufficient capacity', now, UNAVAILABLE_OFFERING_TTL_SECONDS);
    outcomes.set(plan.token, { iced });
    throw iceError(iced);
  }

  return { planLaunch, launch, fleetCalls: () => calls };
}
