import { type CapacityType, type InstanceType, Requirements } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import { type Cloud, type CloudInstance, InstanceNotOwnedError, isBackedOff } from '../../ports/cloud.ts';
import { cloudDrift } from '../../ports/cloud-drift.ts';
import type { InstanceHealthProblem, InstanceHealthReader } from '../../ports/instance-status.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS, type UnavailableOfferings } from '../../ports/state.ts';
import {
  type ProviderSettings,
  placementGroupOf,
  placementOfferings,
  reservedOfferings,
} from '../class-instance-types.ts';
import { launchTags, MAX_INSTANCE_TYPES } from '../launch-plan.ts';
import { type CapacityWindow, makeCapacityWindows } from './capacity-windows.ts';
import { type MemoryCatalog, makeCatalogResolver } from './catalog.ts';
import { type FleetCall, makeFleetLaunch } from './fleet-launch.ts';

export type { FleetCall } from './fleet-launch.ts';

import { type InstanceRecord, MemoryTag, makeInstanceTable } from './instances.ts';
import { makeMemoryUnavailableOfferings } from './unavailable-offerings.ts';

export type { CapacityWindow } from './capacity-windows.ts';
export { MemoryTag } from './instances.ts';
export { MAX_INSTANCE_TYPES };

// The Cloud port in memory, for the simulator, with the knobs a scenario turns. Its instances are
// in instances.ts, launching in fleet-launch.ts and the windows of insufficient capacity in
// capacity-windows.ts; this module holds the instance types a class may use (the catalog's, with
// back-offs and what reservations still hold) and the port's instance calls.

export interface MemoryCloudOptions {
  /** Virtual time: launch times, boot delay, ICE back-offs and capacity windows read it. */
  readonly clock: Clock;
  /** Instances are tagged as owned by this cluster, as the AWS adapter tags them. */
  readonly clusterName: string;
  readonly catalog: MemoryCatalog;
  /**
   * Seeds instance ids (0–65535), so two simulations can share one report without clashing.
   * @default 0
   */
  readonly seed?: number;
  /** Virtual milliseconds from launch until an instance is `running`. @default 0 */
  readonly bootDelayMs?: number;
  readonly capacityWindows?: readonly CapacityWindow[];
  /** Where ICE back-offs live. @default a fresh in-memory table */
  readonly unavailableOfferings?: UnavailableOfferings;
  /**
   * The account lacks the EC2 Spot service-linked role and Flotilla may not create it: every spot
   * launch fails (AuthFailure.ServiceLinkedRoleCreationNotPermitted) and backs off the request's
   * spot offerings, as the AWS adapter does. @default false
   */
  readonly noSpotServiceLinkedRole?: boolean;
  /**
   * Instances each capacity reservation holds, by id: a reservation offers what it holds less
   * the live instances launched into it, and a launch into a full one fails. A reservation not
   * listed holds none. @default none
   */
  readonly capacityReservations?: Readonly<Record<string, number>>;
  /**
   * Karpenter's AWS settings and ReservedCapacity gate, as the stack gives the Lambdas: the VM
   * memory overhead and reserved ENIs shape every type; with the gate off no reserved offering is
   * made. @default Karpenter's defaults
   */
  readonly provider?: ProviderSettings;
  /**
   * What a CreateFleet call waits before EC2 answers (the simulator's virtual timers); the launch
   * is decided when the answer comes. @default none: EC2 answers at once
   */
  readonly createFleetDelay?: () => Promise<void>;
}

/** An instance launched outside Flotilla (or by another cluster). */
export interface ForeignInstanceInput {
  readonly instanceType: string;
  readonly zone: string;
  /** @default 'on-demand' */
  readonly capacityType?: CapacityType;
  /** @default no tags */
  readonly tags?: Readonly<Record<string, string>>;
  /** When it was launched: an instance launched a boot delay or more ago is running. @default now */
  readonly launchTime?: Date;
  readonly imageId?: string;
  readonly subnetId?: string;
  readonly securityGroupIds?: readonly string[];
}

/** The Cloud port in memory for the simulator, with the knobs a scenario turns. */
export interface MemoryCloud extends Cloud {
  readonly unavailableOfferings: UnavailableOfferings;
  /** Opens a window of insufficient capacity; the returned function removes it again. */
  addCapacityWindow(window: CapacityWindow): () => void;
  /** The windows configured now (open, closed or not yet open). */
  capacityWindows(): readonly CapacityWindow[];
  /** Puts an instance Flotilla did not launch into the account; `delete` refuses it. */
  addForeignInstance(input: ForeignInstanceInput): CloudInstance;
  /** EC2 takes an instance away (a spot reclaim): it is terminated at once. Returns it as it was. */
  reclaim(instanceId: string): CloudInstance | undefined;
  /** Every instance ever launched or added, terminated ones included, in launch order. */
  history(): readonly CloudInstance[];
  /** Every CreateFleet call sent (replays of a recorded launch included), in the order answered. */
  fleetCalls(): readonly FleetCall[];
  /**
   * EC2 reports an instance's failed status checks or scheduled events (empty: healthy again), as
   * DescribeInstanceStatus would from then on.
   */
  setInstanceHealth(instanceId: string, problems: readonly InstanceHealthProblem[]): void;
  /** EC2's instance status poll over the running instances, as the AWS adapter reads it. */
  readonly instanceHealth: InstanceHealthReader;
}

/**
 * The Cloud port in memory, for the simulator. It launches as the AWS adapter does (cheapest
 * allowed offering, reserved before spot before on-demand, ICE back-offs for 3 minutes of
 * virtual time) against a catalog and configurable windows of insufficient capacity. Instances
 * are `pending` for `bootDelayMs` of virtual time, then `running`. Deterministic: ids come from a
 * seeded counter and time only from the clock.
 */
export function makeMemoryCloud(options: MemoryCloudOptions): MemoryCloud {
  const { clock, clusterName } = options;
  const bootDelayMs = options.bootDelayMs ?? 0;
  const seed = options.seed ?? 0;
  const noSpotRole = options.noSpotServiceLinkedRole === true;
  const unavailable = options.unavailableOfferings ?? makeMemoryUnavailableOfferings();
  const catalogFor = makeCatalogResolver(options.catalog, options.provider);
  const capacity = makeCapacityWindows(options.capacityWindows ?? []);
  const instances = makeInstanceTable({
    clock,
    clusterName,
    seed,
    bootDelayMs,
    capacityReservations: options.capacityReservations,
  });
  const { records, nextId, toInstance, isOwned, live, liveByNodeClaim, reservationRoom } = instances;
  const { planLaunch, launch, fleetCalls } = makeFleetLaunch({
    clock,
    clusterName,
    noSpotRole,
    unavailable,
    instances,
    noCapacity: capacity.noCapacity,
    ...(options.createFleetDelay === undefined ? {} : { delay: options.createFleetDelay }),
  });

  const health = new Map<string, readonly InstanceHealthProblem[]>();
  const typeCache = new Map<string, { readonly key: string; readonly types: readonly InstanceType[] }>();
  return {
    setInstanceHealth(instanceId, problems) {
      if (problems.length === 0) health.delete(instanceId);
      else health.set(instanceId, [...problems]);
    },
    // DescribeInstanceStatus reports running instances only.
    instanceHealth: async () =>
      [...health].flatMap(([instanceId, problems]) => {
        const record = records.get(instanceId);
        return record !== undefined && toInstance(record).state === 'running'
          ? [{ instanceId, problems }]
          : [];
      }),
    unavailableOfferings: unavailable,

    async instanceTypes(nodeClass) {
      const status = nodeClass.status;
      const zones = new Set((status?.subnets ?? []).map((s) => s.zone));
      // Each image's requirements, parsed once for every type of the catalog.
      const amis = (status?.amis ?? []).map((ami) =>
        Requirements.parse(ami.requirements, { object: 'memory cloud', field: 'amis' }),
      );
      const backedOff = new Set((await unavailable.list(clock.now())).keys());
      const groupId = placementGroupOf(nodeClass)?.id;
      const reservationCapacity = new Map(
        (status?.capacityReservations ?? []).map((r) => [r.id, reservationRoom(r.id) ?? 0] as const),
      );
      // The same class, back-offs and reservations give the same types: built once for them (every
      // provisioner run and disruption pass asks).
      const key = JSON.stringify([nodeClass, [...backedOff].sort(), [...reservationCapacity]]);
      const cached = typeCache.get(nodeClass.name);
      if (cached?.key === key) return cached.types;
      const out: InstanceType[] = [];
      for (const type of catalogFor(nodeClass)) {
        if (!amis.some((ami) => ami.matchesLabels(type.labels))) continue;
        const offerings = type.offerings
          .filter((o) => zones.has(o.zone))
          .map((o) => ({
            ...o,
            available:
              o.available &&
              !isBackedOff(backedOff, {
                instanceType: type.name,
                zone: o.zone,
                capacityType: o.capacityType,
                ...(o.reservationId === undefined ? {} : { reservationId: o.reservationId }),
                ...(groupId === undefined ? {} : { placementGroupId: groupId }),
                ...(o.partition === undefined ? {} : { partition: o.partition }),
              }),
          }));
        // Reserved offerings as the AWS adapter makes them, holding what each reservation has left.
        const reserved = reservedOfferings(
          type,
          {
            nodeClass,
            unavailable: backedOff,
            reservationCapacity,
            ...(options.provider === undefined ? {} : { provider: options.provider }),
          },
          zones,
        );
        offerings.push(...placementOfferings(type.name, reserved, nodeClass, backedOff));
        if (offerings.length > 0) out.push({ ...type, offerings });
      }
      typeCache.set(nodeClass.name, { key, types: out });
      return out;
    },

    planLaunch,
    launch,
    fleetCalls,
    create: async (request) => launch(request, await planLaunch(request)),
    async findByNodeClaim(nodeClaimName) {
      const record = liveByNodeClaim(nodeClaimName);
      return record === undefined ? undefined : toInstance(record);
    },

    async delete(instanceId) {
      const record = live(instanceId);
      if (record === undefined) return;
      if (!isOwned(record)) throw new InstanceNotOwnedError(instanceId, clusterName);
      record.terminatedAtMs = clock.now().getTime();
    },

    async nameInstance(instanceId, nodeName) {
      const record = live(instanceId);
      if (record !== undefined) record.tags = { ...record.tags, [MemoryTag.name]: nodeName };
    },

    async get(instanceId) {
      const record = live(instanceId);
      return record === undefined ? undefined : toInstance(record);
    },

    async isDrifted(instanceId, nodeClass) {
      const record = live(instanceId);
      return record === undefined ? undefined : cloudDrift(toInstance(record), nodeClass);
    },

    async list() {
      return [...records.values()]
        .filter((r) => live(r.instanceId) !== undefined && isOwned(r))
        .map(toInstance);
    },

    markUnavailable: (offerings, reason) =>
      unavailable.mark(offerings, reason, clock.now(), UNAVAILABLE_OFFERING_TTL_SECONDS),

    addCapacityWindow: capacity.add,

    capacityWindows: capacity.list,

    addForeignInstance(input) {
      const { instanceId, privateDnsName } = nextId();
      const record: InstanceRecord = {
        instanceId,
        instanceType: input.instanceType,
        zone: input.zone,
        capacityType: input.capacityType ?? 'on-demand',
        ...(input.imageId === undefined ? {} : { imageId: input.imageId }),
        ...(input.subnetId === undefined ? {} : { subnetId: input.subnetId }),
        ...(input.securityGroupIds === undefined ? {} : { securityGroupIds: input.securityGroupIds }),
        launchTimeMs: (input.launchTime ?? clock.now()).getTime(),
        privateDnsName,
        tags: { ...(input.tags ?? {}) },
      };
      records.set(instanceId, record);
      return toInstance(record);
    },

    reclaim(instanceId) {
      const record = live(instanceId);
      if (record === undefined) return undefined;
      const before = toInstance(record);
      record.terminatedAtMs = clock.now().getTime();
      return before;
    },

    history: () => [...records.values()].map(toInstance),
  };
}

export { launchTags };
