/**
 * What both Cloud adapters (EC2 and the simulator's in-memory cloud) decide the same way, with
 * no SDK: the tags that mark what Flotilla launched, the NodeClass settings of the capacity model,
 * and which offerings a NodeClaim launches on (capacity type and cheapest candidates).
 */
import { Tag } from '../apis/aws-tags.ts';
import type { InstanceType, Offering } from '../core/index.ts';
import {
  AL2023_DEFAULTS,
  type CapacityType,
  type EvictionThreshold,
  type KubeletConfiguration,
  Label,
  type Labels,
  type NodeClassSettings,
  parseQuantity,
  parseResourceList,
  Resource,
  reservationPreference,
} from '../core/index.ts';
import {
  type AmiStatus,
  type EC2NodeClass,
  InsufficientCapacityError,
  isBackedOff,
  type KubeletSpec,
  type LaunchRequest,
  type NodeSelectorRequirement,
  type OfferingKey,
} from '../ports/cloud.ts';
import { UNAVAILABLE_OFFERING_TTL_SECONDS } from '../ports/state.ts';

const GiB = 1024 ** 3;

/** Karpenter's maxInstanceTypes: the cheapest this many types go into one CreateFleet call. */
export const MAX_INSTANCE_TYPES = 60;

/** A candidate instance type of one launch, with its AMI and its usable offerings cheapest first. */
export interface Candidate {
  readonly type: InstanceType;
  readonly ami: AmiStatus;
  readonly offerings: readonly Offering[];
  readonly price: number;
}

/**
 * Every spot offering of a launch's instance types, in every zone: what a spot launch refused for
 * want of the EC2 Spot service-linked role backs off. Karpenter takes the whole spot capacity type
 * out for the back-off; the request's types are what the next attempt for these pods chooses from.
 */
export function spotOfferingKeys(request: Pick<LaunchRequest, 'instanceTypes'>): OfferingKey[] {
  return request.instanceTypes.flatMap((type) =>
    type.offerings
      .filter((o) => o.capacityType === 'spot')
      .map((o) => ({ instanceType: type.name, zone: o.zone, capacityType: 'spot' as const })),
  );
}

/** The offering labels a NodeClaim's requirements are checked against. */
function offeringLabels(offering: Offering, zoneIds: ReadonlyMap<string, string>): Record<string, string> {
  const zoneId = zoneIds.get(offering.zone);
  return {
    [Label.zone]: offering.zone,
    [Label.capacityType]: offering.capacityType,
    ...(zoneId === undefined ? {} : { [Label.zoneId]: zoneId }),
    ...(offering.reservationId === undefined
      ? {}
      : {
          [Label.capacityReservationId]: offering.reservationId,
          [Label.capacityReservationInterruptible]: String(offering.reservationInterruptible === true),
        }),
    ...(offering.partition === undefined ? {} : { [Label.placementGroupPartition]: offering.partition }),
  };
}

/**
 * The partition a NodeClaim's requirements pin (`karpenter.k8s.aws/placement-group-partition In
 * [p]` with one value): the launch targets it. Undefined when any partition will do (EC2 chooses).
 */
export function requiredPartition(requirements: readonly NodeSelectorRequirement[]): string | undefined {
  const r = requirements.find((x) => x.key === Label.placementGroupPartition && x.operator === 'In');
  return r?.values?.length === 1 ? r.values[0] : undefined;
}

/**
 * One offering per zone, capacity type and reservation: a `partition` placement group offers
 * each once per partition, and a launch either targets the partition its NodeClaim pins or
 * leaves the choice to EC2 (the offering then names no partition).
 */
function onePerPlace(offerings: readonly Offering[], pinned: string | undefined): Offering[] {
  const seen = new Map<string, Offering>();
  for (const o of offerings) {
    const key = `${o.zone}/${o.capacityType}/${o.reservationId ?? ''}`;
    if (seen.has(key)) continue;
    if (o.partition === undefined || o.partition === pinned) seen.set(key, o);
    else {
      const { partition: _chosenByEc2, ...any } = o;
      seen.set(key, any);
    }
  }
  return [...seen.values()];
}

/** Types with GPUs, accelerators or bare metal, which Karpenter avoids unless nothing else fits. */
function isExotic(type: InstanceType): boolean {
  return (
    type.labels[Label.instanceGpuCount] !== undefined ||
    type.labels[Label.instanceAcceleratorCount] !== undefined ||
    type.labels[Label.instanceSize]?.includes('metal') === true
  );
}

/** The kind of reservation an offering is in: its type and whether it is interruptible. */
function reservationKey(o: Offering): string {
  return `${o.reservationType ?? 'default'}/${o.reservationInterruptible === true}`;
}

/**
 * The one kind of reservation a reserved launch uses (one CreateFleet call buys one market): the
 * kind of the cheapest usable reserved offering, and of equal prices an On-Demand Capacity
 * Reservation before a capacity block before an interruptible reservation, as Karpenter chooses.
 */
function reservationKindOf(
  usable: readonly { readonly offerings: readonly Offering[] }[],
): string | undefined {
  let best: Offering | undefined;
  for (const { offerings } of usable) {
    for (const o of offerings) {
      if (o.capacityType !== 'reserved') continue;
      if (
        best === undefined ||
        o.priceUsdPerHour < best.priceUsdPerHour ||
        (o.priceUsdPerHour === best.priceUsdPerHour && reservationPreference(o) < reservationPreference(best))
      )
        best = o;
    }
  }
  return best === undefined ? undefined : reservationKey(best);
}

/**
 * Chooses the capacity type and the cheapest candidates: reserved if any reserved offering is
 * allowed and available (only the offerings of one kind of reservation, see `reservationKindOf`),
 * else spot, else on-demand; up to 60 types, cheapest first, exotic types only when nothing else
 * is left. Pure, for unit tests.
 */
export function selectCandidates(
  request: LaunchRequest,
  unavailable: ReadonlySet<string>,
  zoneIds: ReadonlyMap<string, string>,
): { capacityType: CapacityType; candidates: Candidate[] } | undefined {
  const status = request.nodeClass.status;
  const zones = new Set((status?.subnets ?? []).map((s) => s.zone));
  const offeringRequirements = request.requirements.filter(
    (r) =>
      r.key === Label.zone ||
      r.key === Label.capacityType ||
      r.key === Label.zoneId ||
      r.key === Label.capacityReservationId ||
      r.key === Label.capacityReservationInterruptible ||
      r.key === Label.placementGroupPartition,
  );
  const placementGroupId = status?.placementGroups?.[0]?.id;
  const pinned = requiredPartition(request.requirements);
  const usable: { type: InstanceType; ami: AmiStatus; offerings: Offering[] }[] = [];
  for (const type of request.instanceTypes) {
    const ami = (status?.amis ?? []).find((a) => labelsMatch(type.labels, a.requirements));
    if (ami === undefined) continue;
    const offerings = onePerPlace(
      type.offerings.filter(
        (o) =>
          o.available &&
          zones.has(o.zone) &&
          !isBackedOff(unavailable, {
            instanceType: type.name,
            zone: o.zone,
            capacityType: o.capacityType,
            ...(o.reservationId === undefined ? {} : { reservationId: o.reservationId }),
            ...(placementGroupId === undefined ? {} : { placementGroupId }),
            ...(o.partition === undefined ? {} : { partition: o.partition }),
          }) &&
          labelsMatch(offeringLabels(o, zoneIds), offeringRequirements),
      ),
      pinned,
    );
    if (offerings.length > 0) usable.push({ type, ami, offerings });
  }
  const has = (capacityType: CapacityType) =>
    usable.some((u) => u.offerings.some((o) => o.capacityType === capacityType));
  const capacityType: CapacityType | undefined = has('reserved')
    ? 'reserved'
    : has('spot')
      ? 'spot'
      : has('on-demand')
        ? 'on-demand'
        : undefined;
  if (capacityType === undefined) return undefined;
  const kind = capacityType === 'reserved' ? reservationKindOf(usable) : undefined;
  let candidates: Candidate[] = usable.flatMap(({ type, ami, offerings }) => {
    const chosen = offerings
      .filter((o) => o.capacityType === capacityType && (kind === undefined || reservationKey(o) === kind))
      .sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour || a.zone.localeCompare(b.zone));
    const first = chosen[0];
    return first === undefined ? [] : [{ type, ami, offerings: chosen, price: first.priceUsdPerHour }];
  });
  const ordinary = candidates.filter((c) => !isExotic(c.type));
  if (ordinary.length > 0) candidates = ordinary;
  candidates.sort((a, b) => a.price - b.price || a.type.name.localeCompare(b.type.name));
  return { capacityType, candidates: candidates.slice(0, MAX_INSTANCE_TYPES) };
}

/**
 * The NodeClaim requests `eks.amazonaws.com/nitro-sandbox` (a NodeOverlay gave its types the
 * resource): it launches with Nitro Enclaves enabled, as Karpenter v1.14 decides it.
 */
export function requestsEnclaves(request: Pick<LaunchRequest, 'requests'>): boolean {
  return (request.requests?.[Resource.nitroSandbox] ?? 0) > 0;
}

/** Why a launch has no offering left to try: every adapter's InsufficientCapacityError of it. */
export function noOfferingLeft(request: LaunchRequest): InsufficientCapacityError {
  const nodeClass = request.nodeClass;
  const zones = [...new Set((nodeClass.status?.subnets ?? []).map((s) => s.zone))].join(', ');
  return new InsufficientCapacityError(
    `nodeClaim "${request.nodeClaimName}": none of the ${request.instanceTypes.length} instance types has an available offering in the zones of ec2NodeClass "${nodeClass.name}" (${zones}) that the requirements allow; offerings may be backed off after insufficient capacity for ${UNAVAILABLE_OFFERING_TTL_SECONDS}s, or widen the NodePool requirements`,
    [],
  );
}

/** Tags on the fleet, instance and volumes (and, without the NodeClaim ones, the launch template). */
export function launchTags(request: LaunchRequest, clusterName: string): Record<string, string> {
  return {
    ...(request.nodeClass.spec.tags ?? {}),
    [Tag.cluster(clusterName)]: 'owned',
    [Tag.clusterName]: clusterName,
    // Empty for a standalone NodeClaim: the tag's presence is what the ownership filters and the
    // IAM conditions read.
    [Tag.nodePool]: request.nodePoolName ?? '',
    [Tag.nodeClass]: request.nodeClass.name,
    [Tag.nodeClaim]: request.nodeClaimName,
    // The class's own Name, if it sets one, stays (as Karpenter leaves it).
    [Tag.name]:
      request.nodeClass.spec.tags?.[Tag.name] ??
      (request.nodePoolName === undefined
        ? request.nodeClaimName
        : `${request.nodePoolName}/${request.nodeClaimName}`),
  };
}

/** True when `labels` satisfy `requirement` (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte). */
export function labelsMatch(labels: Labels, requirements: readonly NodeSelectorRequirement[]): boolean {
  return requirements.every((r) => {
    const value = labels[r.key];
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      case 'DoesNotExist':
        return value === undefined;
      case 'Gt':
      case 'Lt':
      case 'Gte':
      case 'Lte': {
        const n = Number(value);
        const bound = Number(values[0]);
        if (value === undefined || !Number.isFinite(n) || !Number.isFinite(bound)) return false;
        return r.operator === 'Gt'
          ? n > bound
          : r.operator === 'Lt'
            ? n < bound
            : r.operator === 'Gte'
              ? n >= bound
              : n <= bound;
      }
    }
    return false;
  });
}

function evictionMap(
  raw: Readonly<Record<string, string>> | undefined,
  object: string,
  field: string,
): Record<string, EvictionThreshold> | undefined {
  if (raw === undefined) return undefined;
  const out: Record<string, EvictionThreshold> = {};
  for (const [signal, value] of Object.entries(raw)) {
    out[signal] = value.trim().endsWith('%')
      ? { kind: 'percent', percent: Number.parseFloat(value) }
      : { kind: 'quantity', amount: parseQuantity(value, 'base', { object, field: `${field}.${signal}` }) };
  }
  return out;
}

/**
 * The NodeClass settings core's capacity model needs: kubelet reservations as integers, and the
 * volume that backs ephemeral storage (the root volume; Bottlerocket's data volume; the instance
 * store under `instanceStorePolicy: RAID0`).
 * @throws InvalidQuantityError naming the NodeClass field.
 */
export function nodeClassSettings(nodeClass: EC2NodeClass, family: string | undefined): NodeClassSettings {
  const object = `ec2NodeClass "${nodeClass.name}"`;
  const spec: KubeletSpec = nodeClass.spec.kubelet ?? {};
  const evictionHard = evictionMap(spec.evictionHard, object, 'spec.kubelet.evictionHard');
  const evictionSoft = evictionMap(spec.evictionSoft, object, 'spec.kubelet.evictionSoft');
  const kubelet: KubeletConfiguration = {
    ...(spec.maxPods === undefined ? {} : { maxPods: spec.maxPods }),
    ...(spec.podsPerCore === undefined ? {} : { podsPerCore: spec.podsPerCore }),
    ...(spec.kubeReserved === undefined
      ? {}
      : {
          kubeReserved: parseResourceList(spec.kubeReserved, { object, field: 'spec.kubelet.kubeReserved' }),
        }),
    ...(spec.systemReserved === undefined
      ? {}
      : {
          systemReserved: parseResourceList(spec.systemReserved, {
            object,
            field: 'spec.kubelet.systemReserved',
          }),
        }),
    ...(evictionHard === undefined
      ? {}
      : { evictionHard: { ...AL2023_DEFAULTS.evictionHard, ...evictionHard } }),
    ...(evictionSoft === undefined ? {} : { evictionSoft }),
  };
  const mappings = nodeClass.spec.blockDeviceMappings ?? [];
  // The device that holds ephemeral storage, and its default size, per family (Windows: C:).
  const windows = family?.startsWith('Windows') === true;
  const device = family === 'Bottlerocket' ? '/dev/xvdb' : windows ? '/dev/sda1' : '/dev/xvda';
  const root = mappings.find((m) => m.rootVolume) ?? mappings.find((m) => m.deviceName === device);
  const rootVolumeBytes = root?.ebs?.volumeSizeBytes ?? (windows && mappings.length === 0 ? 50 : 20) * GiB;
  return {
    kubelet,
    rootVolumeBytes,
    ...(nodeClass.spec.instanceStorePolicy === undefined
      ? {}
      : { instanceStorePolicy: nodeClass.spec.instanceStorePolicy }),
  };
}

/** `efa-only` interfaces of `spec.networkInterfaces` (each an EFA device the node advertises). */
export function efaOnlyInterfaces(nodeClass: EC2NodeClass): number {
  return (nodeClass.spec.networkInterfaces ?? []).filter((n) => n.interfaceType === 'efa-only').length;
}

/**
 * Whether an instance type can carry the class's launch settings: the `efa-only` interfaces of
 * `spec.networkInterfaces` need as many EFA interfaces, `cpuOptions.nestedVirtualization: enabled`
 * a processor that supports it, `enclaveOptions.enabled` a type EC2 reports supports Nitro
 * Enclaves (a type whose support is unknown is not offered), and `connectionTracking` a type on
 * the Nitro hypervisor (`karpenter.k8s.aws/instance-hypervisor: nitro`; bare metal has none).
 * `efaCount`, `nestedVirtualization`, `nitroEnclaves` and `labels` are the type's.
 */
export function supportsLaunchSettings(
  nodeClass: EC2NodeClass,
  type: {
    readonly efaCount: number;
    readonly nestedVirtualization?: boolean;
    readonly nitroEnclaves?: boolean;
    readonly labels?: Labels;
  },
): boolean {
  const efa = efaOnlyInterfaces(nodeClass);
  if (efa > 0 && type.efaCount < efa) return false;
  if (nodeClass.spec.cpuOptions?.nestedVirtualization === 'enabled' && type.nestedVirtualization !== true)
    return false;
  if (nodeClass.spec.enclaveOptions?.enabled === true && type.nitroEnclaves !== true) return false;
  if (nodeClass.spec.connectionTracking !== undefined && type.labels?.[Label.instanceHypervisor] !== 'nitro')
    return false;
  return true;
}
