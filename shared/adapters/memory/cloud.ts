import { Tag } from '../../apis/aws-tags.ts';
import {
  type CapacityType,
  type InstanceType,
  type Labels,
  NodeClassConditionType,
  Requirements,
} from '../../core/index.ts';
import { nodeClassFamily } from '../../ports/ami-family.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  type Cloud,
  type CloudInstance,
  type EC2NodeClass,
  InstanceNotOwnedError,
  type InstanceState,
  InsufficientCapacityError,
  isBackedOff,
  isNodeClassReady,
  type LaunchOptions,
  type LaunchRecord,
  type LaunchRequest,
  NodeClassNotReadyError,
  type NodeSelectorRequirement,
  type OfferingKey,
  SpotServiceLinkedRoleError,
  type SubnetStatus,
} from '../../ports/cloud.ts';
import { cloudDrift } from '../../ports/cloud-drift.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS, type UnavailableOfferings } from '../../ports/state.ts';
import {
  launchOfferingKey,
  partitionsOf,
  placementGroupOf,
  placementOfferings,
  requiredPartition,
  reservedOfferings,
} from '../class-instance-types.ts';
import { launchTags, MAX_INSTANCE_TYPES, selectCandidates, spotOfferingKeys } from '../launch-plan.ts';
import { renderUserData } from '../user-data.ts';
import { type MemoryCatalog, makeCatalogResolver } from './catalog.ts';
import { makeMemoryUnavailableOfferings } from './unavailable-offerings.ts';

export { MAX_INSTANCE_TYPES };

/** The tags the memory cloud launches with: the same as the AWS adapter's. */
export const MemoryTag = Tag;

/**
 * A window of insufficient capacity: while it is open, EC2 has no capacity for the offerings it
 * matches. An absent field matches everything.
 */
export interface CapacityWindow {
  /** Instance type name; `*` matches any run of characters (`m5.*`, `*.metal`). */
  readonly instanceType?: string;
  readonly zone?: string;
  readonly capacityType?: CapacityType;
  /** Only launches into this capacity reservation (ReservationCapacityExceeded). @default any */
  readonly reservationId?: string;
  /** Opens at this instant (inclusive). @default always open */
  readonly from?: Date;
  /** Closes at this instant (exclusive). @default never closes */
  readonly until?: Date;
}

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
}

/** The first of the class's subnets in the zone, as the launch would place the instance. */
function subnetOf(subnets: readonly SubnetStatus[], zone: string): { subnetId?: string } {
  const subnet = subnets.find((s) => s.zone === zone);
  return subnet === undefined ? {} : { subnetId: subnet.id };
}

interface InstanceRecord {
  readonly instanceId: string;
  /** The partition of a `partition` placement group it runs in. */
  readonly partition?: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  readonly reservationId?: string;
  readonly reservationType?: 'default' | 'capacity-block';
  readonly imageId?: string;
  readonly subnetId?: string;
  readonly securityGroupIds?: readonly string[];
  readonly placementGroup?: { readonly name: string; readonly id: string };
  readonly launchTimeMs: number;
  readonly privateDnsName: string;
  readonly tags: Readonly<Record<string, string>>;
  terminatedAtMs?: number;
}

/** `*` as a wildcard, everything else literal. */
function globMatches(pattern: string | undefined, value: string): boolean {
  if (pattern === undefined) return true;
  if (!pattern.includes('*')) return pattern === value;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(value);
}

function matches(requirements: readonly NodeSelectorRequirement[], labels: Labels, field: string): boolean {
  return Requirements.parse(requirements, { object: 'memory cloud', field }).matchesLabels(labels);
}

const hex = (value: number, width: number) => value.toString(16).padStart(width, '0').slice(-width);

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
  const catalogFor = makeCatalogResolver(options.catalog);
  const windows: CapacityWindow[] = [...(options.capacityWindows ?? [])];
  const records = new Map<string, InstanceRecord>();
  let counter = 0;

  function nextId(): { instanceId: string; privateDnsName: string } {
    counter += 1;
    return {
      instanceId: `i-0${hex(seed, 4)}${hex(counter, 12)}`,
      privateDnsName: `ip-10-${(seed % 256).toString()}-${Math.floor(counter / 256) % 256}-${counter % 256}.ec2.internal`,
    };
  }

  function stateOf(record: InstanceRecord, nowMs: number): InstanceState {
    if (record.terminatedAtMs !== undefined && record.terminatedAtMs <= nowMs) return 'terminated';
    return nowMs < record.launchTimeMs + bootDelayMs ? 'pending' : 'running';
  }

  function toInstance(record: InstanceRecord): CloudInstance {
    const tags = record.tags;
    return {
      instanceId: record.instanceId,
      providerId: `aws:///${record.zone}/${record.instanceId}`,
      instanceType: record.instanceType,
      zone: record.zone,
      capacityType: record.capacityType,
      ...(record.reservationId === undefined
        ? {}
        : {
            capacityReservationId: record.reservationId,
            capacityReservationType: record.reservationType ?? 'default',
          }),
      state: stateOf(record, clock.now().getTime()),
      ...(record.imageId === undefined ? {} : { imageId: record.imageId }),
      ...(record.subnetId === undefined ? {} : { subnetId: record.subnetId }),
      ...(record.securityGroupIds === undefined ? {} : { securityGroupIds: record.securityGroupIds }),
      ...(record.placementGroup === undefined
        ? {}
        : {
            placementGroup: {
              ...record.placementGroup,
              ...(record.partition === undefined ? {} : { partition: record.partition }),
            },
          }),
      launchTime: new Date(record.launchTimeMs),
      privateDnsName: record.privateDnsName,
      ...(tags[MemoryTag.nodeClaim] === undefined ? {} : { nodeClaimName: tags[MemoryTag.nodeClaim] }),
      ...(tags[MemoryTag.nodePool] === undefined ? {} : { nodePoolName: tags[MemoryTag.nodePool] }),
      ...(tags[MemoryTag.nodeClass] === undefined ? {} : { nodeClassName: tags[MemoryTag.nodeClass] }),
      tags: { ...tags },
    };
  }

  const isOwned = (record: InstanceRecord) =>
    record.tags[MemoryTag.cluster(clusterName)] === 'owned' && record.tags[MemoryTag.nodePool] !== undefined;

  function noCapacity(key: OfferingKey, nowMs: number): boolean {
    return windows.some(
      (w) =>
        (w.from === undefined || w.from.getTime() <= nowMs) &&
        (w.until === undefined || nowMs < w.until.getTime()) &&
        globMatches(w.instanceType, key.instanceType) &&
        (w.zone === undefined || w.zone === key.zone) &&
        (w.capacityType === undefined || w.capacityType === key.capacityType) &&
        (w.reservationId === undefined || w.reservationId === key.reservationId),
    );
  }

  function liveByNodeClaim(nodeClaimName: string): InstanceRecord | undefined {
    const nowMs = clock.now().getTime();
    for (const record of records.values()) {
      if (
        record.tags[MemoryTag.nodeClaim] === nodeClaimName &&
        record.tags[MemoryTag.clusterName] === clusterName &&
        stateOf(record, nowMs) !== 'terminated'
      ) {
        return record;
      }
    }
    return undefined;
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
    }[];
    readonly securityGroupIds: readonly string[];
    readonly placementGroup?: { readonly name: string; readonly id: string };
    /** The partitions of a `partition` group, and the one the NodeClaim pins (else EC2 chooses). */
    readonly partitions?: readonly string[];
    readonly partition?: string;
    readonly tags: Readonly<Record<string, string>>;
  }
  /** What each token's launch came to, as EC2 remembers a ClientToken. */
  const outcomes = new Map<string, { instanceId: string } | { iced: readonly OfferingKey[] }>();
  let plans = 0;

  async function planLaunch(request: LaunchRequest): Promise<LaunchRecord> {
    const nodeClass: EC2NodeClass = request.nodeClass;
    if (!isNodeClassReady(nodeClass.status)) {
      const ready = nodeClass.status?.conditions.find((c) => c.type === NodeClassConditionType.ready);
      throw new NodeClassNotReadyError(nodeClass.name, ready?.message || 'it has no resolved status yet');
    }
    const now = clock.now();
    const backedOff = new Set((await unavailable.list(now)).keys());
    const subnets = request.nodeClass.status?.subnets ?? [];
    const zoneIds = new Map(subnets.flatMap((s) => (s.zoneID ? [[s.zone, s.zoneID] as const] : [])));
    const selection = selectCandidates(request, backedOff, zoneIds);
    if (selection === undefined || selection.candidates.length === 0) {
      const zones = [...new Set((nodeClass.status?.subnets ?? []).map((s) => s.zone))].join(', ');
      throw new InsufficientCapacityError(
        `nodeClaim "${request.nodeClaimName}": none of the ${request.instanceTypes.length} instance types has an available offering in the zones of ec2NodeClass "${nodeClass.name}" (${zones}) that the requirements allow; offerings may be backed off after insufficient capacity for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s, or widen the NodePool requirements`,
        [],
      );
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
          : { reservationId: t.reservationId, reservationType: t.reservationType ?? 'default' }),
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

  /**
   * Instances a capacity reservation can still take: what it holds less its live instances;
   * undefined for a reservation the cloud was not told about (an offering given as it is).
   */
  function reservationRoom(reservationId: string): number | undefined {
    const held = options.capacityReservations?.[reservationId];
    if (held === undefined) return undefined;
    const nowMs = clock.now().getTime();
    let used = 0;
    for (const r of records.values())
      if (r.reservationId === reservationId && stateOf(r, nowMs) !== 'terminated') used += 1;
    return Math.max(0, held - used);
  }

  /** Where EC2 puts an instance when it chooses the partition: the one with the fewest, lowest first. */
  function leastUsedPartition(groupId: string | undefined, partitions: readonly string[]): string {
    const nowMs = clock.now().getTime();
    const count = new Map(partitions.map((p) => [p, 0]));
    for (const r of records.values()) {
      if (r.placementGroup?.id !== groupId || r.partition === undefined) continue;
      if (stateOf(r, nowMs) === 'terminated') continue;
      count.set(r.partition, (count.get(r.partition) ?? 0) + 1);
    }
    return [...count.entries()].sort((a, b) => a[1] - b[1] || Number(a[0]) - Number(b[0]))[0]?.[0] ?? '1';
  }

  function live(instanceId: string): InstanceRecord | undefined {
    const record = records.get(instanceId);
    return record === undefined || stateOf(record, clock.now().getTime()) === 'terminated'
      ? undefined
      : record;
  }

  return {
    unavailableOfferings: unavailable,

    async instanceTypes(nodeClass) {
      const status = nodeClass.status;
      const zones = new Set((status?.subnets ?? []).map((s) => s.zone));
      const amis = status?.amis ?? [];
      const backedOff = new Set((await unavailable.list(clock.now())).keys());
      const groupId = placementGroupOf(nodeClass)?.id;
      const reservationCapacity = new Map(
        (status?.capacityReservations ?? []).map((r) => [r.id, reservationRoom(r.id) ?? 0] as const),
      );
      const out: InstanceType[] = [];
      for (const type of catalogFor(nodeClass)) {
        if (!amis.some((ami) => matches(ami.requirements, type.labels, 'amis'))) continue;
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
          { nodeClass, unavailable: backedOff, reservationCapacity },
          zones,
        );
        offerings.push(...placementOfferings(type.name, reserved, nodeClass, backedOff));
        if (offerings.length > 0) out.push({ ...type, offerings });
      }
      return out;
    },

    planLaunch,
    launch,
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

    addCapacityWindow(window) {
      windows.push(window);
      return () => {
        const index = windows.indexOf(window);
        if (index >= 0) windows.splice(index, 1);
      };
    },

    capacityWindows: () => [...windows],

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
