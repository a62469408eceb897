/**
 * How an EC2NodeClass shapes the instance types it can launch, decided the same way by the EC2
 * adapter and the simulator's in-memory cloud: the AMI family (Windows), the AMIs' requirements,
 * the launch settings (EFA interfaces, nested virtualization, the instance-store policy), the
 * kubelet settings, capacity reservations, and the placement group (its id label, and one
 * offering per partition of a `partition` group). No SDK.
 */
import {
  type CapacityType,
  computeCapacityAndOverhead,
  type InstanceType,
  Label,
  type Labels,
  type NodeClassSettings,
  type Offering,
  RESERVED_PRICE_DIVISOR,
  Resource,
  type ResourceList,
} from '../core/index.ts';
import { windowsBuild } from '../ports/ami-family.ts';
import {
  type AmiFamily,
  type EC2NodeClass,
  isBackedOff,
  type OfferingKey,
  type PlacementGroupStatus,
} from '../ports/cloud.ts';
import {
  efaOnlyInterfaces,
  labelsMatch,
  nodeClassSettings,
  requiredPartition,
  supportsLaunchSettings,
} from './launch-plan.ts';

export { requiredPartition };

/** Pods a Windows node admits unless kubelet maxPods says otherwise (no ENI-limited density). */
export const WINDOWS_MAX_PODS = 110;

/** ENI-limited pods: `ENIs × (IPv4 per ENI − 1) + 2`, or 110 when EC2 does not say. */
export function eniLimitedPods(type: { readonly enis: number; readonly ipv4PerEni: number }): number {
  if (type.enis <= 0 || type.ipv4PerEni <= 0) return 110;
  return type.enis * (type.ipv4PerEni - 1) + 2;
}

/**
 * The cloud provider's settings that shape every class's instance types: Karpenter's AWS settings
 * VM_MEMORY_OVERHEAD_PERCENT and RESERVED_ENIS, and its ReservedCapacity feature gate.
 */
export interface ProviderSettings {
  /** The fraction of memory the hypervisor keeps. @default 0.075 */
  readonly vmMemoryOverheadPercent?: number;
  /** ENIs the VPC CNI does not give pods addresses on. @default 0 */
  readonly reservedENIs?: number;
  /** Off, classes get no `reserved` offerings (their reservations are not used). @default true */
  readonly reservedCapacity?: boolean;
}

/**
 * ENI-limited pods with `unusable` of the type's ENIs taken away (EFA-only interfaces on the first
 * card, reserved ENIs), as Karpenter counts them: no usable ENI is no pods. A type whose ENIs EC2
 * does not give keeps `eniMaxPods`.
 */
function usableEniPods(hardware: TypeHardware, unusable: number): number {
  if (unusable === 0 || hardware.enis <= 0 || hardware.ipv4PerEni <= 0) return hardware.eniMaxPods;
  const usable = Math.max(0, hardware.enis - unusable);
  return usable === 0 ? 0 : eniLimitedPods({ enis: usable, ipv4PerEni: hardware.ipv4PerEni });
}

/** An instance type as the hardware and the region make it, before any NodeClass shapes it. */
export interface TypeHardware {
  readonly name: string;
  readonly arch: string;
  readonly vcpu: number;
  readonly memoryMiB: number;
  /** Its well-known labels, `topology.kubernetes.io/region` included. */
  readonly labels: Labels;
  /** Pods the VPC CNI can address with every ENI free. */
  readonly eniMaxPods: number;
  readonly enis: number;
  readonly ipv4PerEni: number;
  /** GPUs, Neuron devices and cores, and pod ENIs, in whole units. */
  readonly extended: ResourceList;
  readonly efaCount: number;
  readonly nestedVirtualization?: boolean;
  /** EC2's `NitroEnclavesSupport` (`supported` is true); unset when unknown. */
  readonly nitroEnclaves?: boolean;
  readonly localNvmeGiB: number;
}

export interface InstanceTypeContext {
  readonly region: string;
  readonly nodeClass: EC2NodeClass;
  readonly family: string | undefined;
  /** Keys of offerings backed off now (`offeringKeyString`). */
  readonly unavailable: ReadonlySet<string>;
  /**
   * Instances each of the class's capacity reservations can still take, by id; a reservation
   * missing here is unavailable. @default none
   */
  readonly reservationCapacity?: ReadonlyMap<string, number>;
  /** The cloud provider's settings. @default Karpenter's defaults */
  readonly provider?: ProviderSettings;
}

/** The placement group the class launches into (`status.placementGroups[0]`), if any. */
export function placementGroupOf(nodeClass: EC2NodeClass): PlacementGroupStatus | undefined {
  return nodeClass.status?.placementGroups?.[0];
}

/** The partitions of a `partition` group (`1`…N); none for other strategies. */
export function partitionsOf(group: PlacementGroupStatus | undefined): string[] {
  if (group?.strategy !== 'partition' || (group.partitionCount ?? 0) <= 0) return [];
  return Array.from({ length: group.partitionCount ?? 0 }, (_, i) => String(i + 1));
}

/**
 * The ICE back-off key of a launch attempt: in a placement group the group (and the targeted
 * partition) are part of it, as EC2 runs out of room in a group independently of the region.
 */
export function launchOfferingKey(
  key: OfferingKey,
  nodeClass: EC2NodeClass,
  partition: string | undefined,
): OfferingKey {
  const group = placementGroupOf(nodeClass);
  if (group === undefined) return key;
  return {
    ...key,
    placementGroupId: group.id,
    ...(partition === undefined || partitionsOf(group).length === 0 ? {} : { partition }),
  };
}

/**
 * The offerings under the class's placement group: each one per partition of a `partition`
 * group (Karpenter's expansion, so that the partition is a scheduling domain), and unavailable
 * while the group (or that partition) is backed off for it.
 */
export function placementOfferings(
  instanceType: string,
  offerings: readonly Offering[],
  nodeClass: EC2NodeClass,
  unavailable: ReadonlySet<string>,
): Offering[] {
  const group = placementGroupOf(nodeClass);
  if (group === undefined) return [...offerings];
  const partitions = partitionsOf(group);
  const keyOf = (o: Offering, partition?: string): OfferingKey => ({
    instanceType,
    zone: o.zone,
    capacityType: o.capacityType,
    ...(o.reservationId === undefined ? {} : { reservationId: o.reservationId }),
    placementGroupId: group.id,
    ...(partition === undefined ? {} : { partition }),
  });
  if (partitions.length === 0)
    return offerings.map((o) => ({ ...o, available: o.available && !isBackedOff(unavailable, keyOf(o)) }));
  return offerings.flatMap((o) =>
    partitions.map((partition) => ({
      ...o,
      partition,
      available: o.available && !isBackedOff(unavailable, keyOf(o, partition)),
    })),
  );
}

/**
 * The `reserved` offerings of one instance type: one per capacity reservation of the class for
 * that type in one of its zones, priced at the on-demand price / RESERVED_PRICE_DIVISOR, and
 * available while the reservation is active, can take an instance and is not backed off.
 */
export function reservedOfferings(
  type: {
    readonly name: string;
    readonly offerings: readonly {
      readonly capacityType: string;
      readonly priceUsdPerHour?: number | undefined;
    }[];
  },
  context: Pick<InstanceTypeContext, 'nodeClass' | 'unavailable' | 'reservationCapacity' | 'provider'>,
  zones: ReadonlySet<string>,
): Offering[] {
  // The ReservedCapacity gate off: a status resolved while it was on is not launched into either.
  if (context.provider?.reservedCapacity === false) return [];
  const onDemand = type.offerings.find(
    (o) => o.capacityType === 'on-demand' && o.priceUsdPerHour !== undefined,
  )?.priceUsdPerHour;
  if (onDemand === undefined) return [];
  const out: Offering[] = [];
  for (const r of context.nodeClass.status?.capacityReservations ?? []) {
    if (r.instanceType !== type.name || !zones.has(r.availabilityZone)) continue;
    const capacity = context.reservationCapacity?.get(r.id) ?? 0;
    const key: OfferingKey = {
      instanceType: type.name,
      zone: r.availabilityZone,
      capacityType: 'reserved',
      reservationId: r.id,
    };
    out.push({
      zone: r.availabilityZone,
      capacityType: 'reserved' as CapacityType,
      priceUsdPerHour: onDemand / RESERVED_PRICE_DIVISOR,
      available: r.state === 'active' && capacity > 0 && !isBackedOff(context.unavailable, key),
      reservationId: r.id,
      reservationCapacity: capacity,
      reservationType: r.reservationType,
      ...(r.interruptible === true ? { reservationInterruptible: true } : {}),
    });
  }
  return out;
}

/** The class-wide part of shaping types, computed once per NodeClass. */
export interface ClassShape {
  readonly nodeClass: EC2NodeClass;
  readonly settings: NodeClassSettings;
  /** The Windows build of a Windows family (its nodes are amd64 and not ENI-limited). */
  readonly windowsBuild: string | undefined;
  readonly efaOnly: number;
  readonly efaOnlyOnFirstCard: number;
  /** RESERVED_ENIS: ENIs taken from every type's ENI-limited pods. */
  readonly reservedENIs: number;
}

export function classShape(
  nodeClass: EC2NodeClass,
  family: string | undefined,
  provider: ProviderSettings = {},
): ClassShape {
  const settings = nodeClassSettings(nodeClass, family);
  return {
    nodeClass,
    settings:
      provider.vmMemoryOverheadPercent === undefined
        ? settings
        : { ...settings, vmMemoryOverheadPercent: provider.vmMemoryOverheadPercent },
    reservedENIs: provider.reservedENIs ?? 0,
    windowsBuild: windowsBuild(family as AmiFamily | undefined),
    efaOnly: efaOnlyInterfaces(nodeClass),
    // efa-only interfaces on the first card take ENIs the VPC CNI would give pods addresses on.
    efaOnlyOnFirstCard: (nodeClass.spec.networkInterfaces ?? []).filter(
      (n) => n.interfaceType === 'efa-only' && n.networkCardIndex === 0,
    ).length,
  };
}

/**
 * One instance type as the class launches it, or undefined when the class cannot launch it (no
 * AMI for it, launch settings it cannot carry, a Windows family on arm64, no offering). The
 * offerings are those of the class's zones (reserved ones included); the placement group
 * expansion and back-offs are applied here.
 */
export function classInstanceType(
  hardware: TypeHardware,
  offerings: readonly Offering[],
  shape: ClassShape,
  unavailable: ReadonlySet<string>,
): InstanceType | undefined {
  const { nodeClass, windowsBuild: build } = shape;
  if (build !== undefined && hardware.arch !== 'amd64') return undefined;
  const group = placementGroupOf(nodeClass);
  const labels: Record<string, string> = {
    ...hardware.labels,
    ...(hardware.nitroEnclaves === undefined ? {} : { [Label.nitroSandbox]: String(hardware.nitroEnclaves) }),
    ...(build === undefined ? {} : { [Label.os]: 'windows', [Label.windowsBuild]: build }),
    ...(group === undefined ? {} : { [Label.placementGroupId]: group.id }),
  };
  const amis = nodeClass.status?.amis ?? [];
  if (!amis.some((ami) => labelsMatch(labels, ami.requirements))) return undefined;
  if (!supportsLaunchSettings(nodeClass, hardware)) return undefined;
  if (offerings.length === 0) return undefined;
  const extended: Record<string, number> = { ...hardware.extended };
  // Without spec.networkInterfaces an EFA type advertises every EFA it supports (a pod asking
  // for one gets it); with them, the efa-only interfaces the class attaches.
  const efa = nodeClass.spec.networkInterfaces === undefined ? hardware.efaCount : shape.efaOnly;
  if (efa > 0) extended[Resource.efa] = efa;
  const eniMaxPods =
    build !== undefined
      ? WINDOWS_MAX_PODS
      : usableEniPods(hardware, shape.efaOnlyOnFirstCard + shape.reservedENIs);
  const { capacity, overhead } = computeCapacityAndOverhead(
    {
      vcpu: hardware.vcpu,
      memoryMiB: hardware.memoryMiB,
      arch: hardware.arch,
      eniMaxPods,
      extended,
      instanceStoreBytes: hardware.localNvmeGiB * 1e9,
    },
    shape.settings,
  );
  return {
    name: hardware.name,
    labels,
    capacity,
    overhead,
    offerings: placementOfferings(hardware.name, offerings, nodeClass, unavailable),
  };
}
