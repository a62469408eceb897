import type { CapacityType, Labels } from './labels.ts';
import { Resource, type ResourceList } from './resources.ts';

/** Where and how an instance type can be bought. */
export interface Offering {
  readonly zone: string;
  readonly capacityType: CapacityType;
  /** USD per hour for one instance. */
  readonly priceUsdPerHour: number;
  /**
   * The price is an estimate, not a published one (the bundled catalog's spot price for a type
   * without a Spot Advisor estimate, or an on-demand price taken from another region).
   */
  readonly priceAssumed?: boolean;
  /** A NodeOverlay set or adjusted the price (it is the user's, not the catalog's). */
  readonly priceOverlaid?: boolean;
  /** False when the offering is known not to launch now (ICE back-off, no price, zone shifted). */
  readonly available: boolean;
  /** Capacity reservation id, for `reserved` offerings. */
  readonly reservationId?: string;
  /** `reserved` offerings: instances the reservation can still take (it is unavailable at 0). */
  readonly reservationCapacity?: number;
  /** `reserved` offerings: `default` (an On-Demand Capacity Reservation) or `capacity-block`. */
  readonly reservationType?: 'default' | 'capacity-block';
  /**
   * `reserved` offerings: the reservation is interruptible (EC2 may reclaim its instances);
   * `karpenter.k8s.aws/capacity-reservation-interruptible`. Such offerings are taken after the
   * others of the same price.
   */
  readonly reservationInterruptible?: boolean;
  /**
   * The partition (`1`…N) of the NodeClass's `partition` placement group this offering launches
   * into (`karpenter.k8s.aws/placement-group-partition`); absent without such a group.
   */
  readonly partition?: string;
}

/**
 * Karpenter prices a reserved offering at the on-demand price divided by this, so that it is
 * always the cheapest and keeps the instance types' relative order.
 */
export const RESERVED_PRICE_DIVISOR = 10_000_000;

/**
 * Which kind of reservation is taken first among equally priced ones, as Karpenter orders them
 * (0 first): an On-Demand Capacity Reservation, then a capacity block, then an interruptible
 * reservation (whose instances EC2 may reclaim).
 */
export function reservationPreference(
  o: Pick<Offering, 'reservationType' | 'reservationInterruptible'>,
): number {
  if (o.reservationType === 'capacity-block') return 1;
  return o.reservationInterruptible === true ? 2 : 0;
}

/** Resources the node keeps for itself; allocatable = capacity − the sum of the three. */
export interface InstanceTypeOverhead {
  readonly kubeReserved: ResourceList;
  readonly systemReserved: ResourceList;
  readonly evictionThreshold: ResourceList;
}

/**
 * An instance type as resolved for one NodeClass (the overhead depends on its kubelet settings
 * and block devices).
 */
export interface InstanceType {
  readonly name: string;
  /**
   * Labels a node of this type carries, apart from zone and capacity type (those come from the
   * offering): `kubernetes.io/arch`, `node.kubernetes.io/instance-type`,
   * `karpenter.k8s.aws/instance-family`, … A label that is missing is absent on the node.
   */
  readonly labels: Labels;
  /** Node capacity (memory already net of the VM overhead). */
  readonly capacity: ResourceList;
  readonly overhead: InstanceTypeOverhead;
  readonly offerings: readonly Offering[];
}

/** capacity − kubeReserved − systemReserved − evictionThreshold, floored at 0. */
export function computeAllocatable(instanceType: Pick<InstanceType, 'capacity' | 'overhead'>): ResourceList {
  const out: Record<string, number> = { ...instanceType.capacity };
  const { kubeReserved, systemReserved, evictionThreshold } = instanceType.overhead;
  for (const list of [kubeReserved, systemReserved, evictionThreshold]) {
    for (const [name, value] of Object.entries(list)) out[name] = Math.max(0, (out[name] ?? 0) - value);
  }
  return out;
}

/** An eviction threshold: an absolute amount (bytes) or a percentage of capacity. */
export type EvictionThreshold =
  | { readonly kind: 'quantity'; readonly amount: number }
  | { readonly kind: 'percent'; readonly percent: number };

/** The kubelet settings of a NodeClass that change allocatable. Quantities are integers. */
export interface KubeletConfiguration {
  /** Overrides the ENI-limited pod count. */
  readonly maxPods?: number;
  /** When > 0, pods are capped at `podsPerCore × vCPU`. */
  readonly podsPerCore?: number;
  /** Per resource, replaces Karpenter's computed default. */
  readonly kubeReserved?: ResourceList;
  readonly systemReserved?: ResourceList;
  /** Keys are kubelet signals: `memory.available`, `nodefs.available`. */
  readonly evictionHard?: Readonly<Record<string, EvictionThreshold>>;
  readonly evictionSoft?: Readonly<Record<string, EvictionThreshold>>;
}

/** NodeClass settings that shape an instance type's capacity and overhead. */
export interface NodeClassSettings {
  readonly kubelet?: KubeletConfiguration;
  /** Root volume size in bytes (ephemeral-storage capacity). @default 20Gi (AL2023 default). */
  readonly rootVolumeBytes?: number;
  /**
   * `RAID0`: a type with an instance store has the store (striped) as its ephemeral storage
   * instead of the root volume. @default none
   */
  readonly instanceStorePolicy?: 'RAID0';
  /** Fraction of memory the hypervisor keeps. @default 0.075 (`VM_MEMORY_OVERHEAD_PERCENT`). */
  readonly vmMemoryOverheadPercent?: number;
  /**
   * Extra memory (MiB) the AMI keeps on top of the VM overhead, per architecture.
   * @default `{ arm64: 59 }` — Karpenter's published AL2023 allocatable is exactly 59 MiB lower
   *   than the §4.3 formula for every one of the 375 arm64 types in the catalog and equal for
   *   every amd64 type; the reason is not in the reference, the number is in the data.
   */
  readonly extraMemoryOverheadMiBByArch?: Readonly<Record<string, number>>;
}

/** Hardware facts of an instance type, before any overhead. */
export interface InstanceHardware {
  readonly vcpu: number;
  readonly memoryMiB: number;
  readonly arch: string;
  /** ENI-limited pod count (`ENIs × (IPv4 per ENI − 1) + 2`). */
  readonly eniMaxPods: number;
  /** Extended resources (`nvidia.com/gpu`, `vpc.amazonaws.com/pod-eni`, …) in whole units. */
  readonly extended?: ResourceList;
  /** Total instance-store size in bytes (EC2 gives it in GB, 10^9 bytes); 0 or absent when none. */
  readonly instanceStoreBytes?: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Defaults for AL2023 without block device mappings, as Karpenter assumes. */
export const AL2023_DEFAULTS: {
  readonly rootVolumeBytes: number;
  readonly vmMemoryOverheadPercent: number;
  readonly extraMemoryOverheadMiBByArch: Readonly<Record<string, number>>;
  readonly evictionHard: Readonly<Record<string, EvictionThreshold>>;
} = {
  rootVolumeBytes: 20 * GiB,
  vmMemoryOverheadPercent: 0.075,
  extraMemoryOverheadMiBByArch: { arm64: 59 },
  evictionHard: {
    'memory.available': { kind: 'quantity', amount: 100 * MiB },
    'nodefs.available': { kind: 'percent', percent: 10 },
  },
};

/**
 * Karpenter's default kube-reserved cpu in millicores: 6% of the first core, 1% of the second,
 * 0.5% of cores 3–4 and 0.25% of the rest.
 */
export function defaultKubeReservedCpuMillis(vcpu: number): number {
  // Work in quarter-millicores so the arithmetic stays integral.
  const millis = vcpu * 1000;
  let quarters = 0;
  quarters += Math.min(millis, 1000) * 0.24;
  quarters += Math.max(0, Math.min(millis, 2000) - 1000) * 0.04;
  quarters += Math.max(0, Math.min(millis, 4000) - 2000) * 0.02;
  quarters += Math.max(0, millis - 4000) * 0.01;
  return Math.floor(Math.round(quarters) / 4);
}

/** Karpenter's default kube-reserved memory in bytes: `11 × pods + 255` MiB. */
export function defaultKubeReservedMemoryBytes(pods: number): number {
  return (11 * pods + 255) * MiB;
}

/**
 * Capacity and overhead of an instance type under a NodeClass, following Karpenter's AWS model:
 * ephemeral storage is the root volume, or the instance store under `RAID0`; memory capacity
 * loses the VM overhead (rounded up to whole MiB); pods come from kubelet
 * `maxPods`, else the ENI limit, capped by `podsPerCore`; kube-reserved uses Karpenter's
 * defaults unless set; eviction thresholds take the larger of hard and soft, percentages of
 * capacity rounded up.
 */
export function computeCapacityAndOverhead(
  hw: InstanceHardware,
  settings: NodeClassSettings = {},
): { capacity: ResourceList; overhead: InstanceTypeOverhead } {
  const kubelet = settings.kubelet ?? {};
  const vmPct = settings.vmMemoryOverheadPercent ?? AL2023_DEFAULTS.vmMemoryOverheadPercent;
  const extraMiB =
    (settings.extraMemoryOverheadMiBByArch ?? AL2023_DEFAULTS.extraMemoryOverheadMiBByArch)[hw.arch] ?? 0;
  const memoryMiB = hw.memoryMiB - Math.ceil(hw.memoryMiB * vmPct) - extraMiB;
  let pods = kubelet.maxPods ?? hw.eniMaxPods;
  if (kubelet.podsPerCore !== undefined && kubelet.podsPerCore > 0) {
    pods = Math.min(pods, kubelet.podsPerCore * hw.vcpu);
  }
  const ephemeral =
    settings.instanceStorePolicy === 'RAID0' && (hw.instanceStoreBytes ?? 0) > 0
      ? (hw.instanceStoreBytes ?? 0)
      : (settings.rootVolumeBytes ?? AL2023_DEFAULTS.rootVolumeBytes);
  const capacity: Record<string, number> = {
    [Resource.cpu]: hw.vcpu * 1000,
    [Resource.memory]: Math.max(0, memoryMiB) * MiB,
    [Resource.pods]: pods,
    [Resource.ephemeralStorage]: ephemeral,
  };
  for (const [name, value] of Object.entries(hw.extended ?? {})) if (value > 0) capacity[name] = value;

  const kubeReserved: Record<string, number> = {
    [Resource.cpu]: defaultKubeReservedCpuMillis(hw.vcpu),
    [Resource.memory]: defaultKubeReservedMemoryBytes(pods),
    [Resource.ephemeralStorage]: GiB,
    ...(kubelet.kubeReserved ?? {}),
  };
  const evictionHard = kubelet.evictionHard ?? AL2023_DEFAULTS.evictionHard;
  const evictionSoft = kubelet.evictionSoft ?? {};
  const threshold = (signal: string, total: number): number => {
    const amount = (t: EvictionThreshold | undefined): number =>
      t === undefined ? 0 : t.kind === 'quantity' ? t.amount : Math.ceil((total * t.percent) / 100);
    return Math.max(amount(evictionHard[signal]), amount(evictionSoft[signal]));
  };
  const evictionThreshold: Record<string, number> = {
    [Resource.memory]: threshold('memory.available', capacity[Resource.memory] ?? 0),
    [Resource.ephemeralStorage]: threshold('nodefs.available', ephemeral),
  };
  return {
    capacity,
    overhead: { kubeReserved, systemReserved: { ...(kubelet.systemReserved ?? {}) }, evictionThreshold },
  };
}

/** The cheapest available offering price, optionally restricted by a predicate; Infinity if none. */
export function cheapestOfferingPrice(
  instanceType: InstanceType,
  allowed: (offering: Offering) => boolean = () => true,
): number {
  let best = Number.POSITIVE_INFINITY;
  for (const o of instanceType.offerings) {
    if (o.available && o.priceUsdPerHour < best && allowed(o)) best = o.priceUsdPerHour;
  }
  return best;
}
