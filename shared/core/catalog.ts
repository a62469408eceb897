import {
  computeCapacityAndOverhead,
  type InstanceHardware,
  type InstanceType,
  type NodeClassSettings,
  type Offering,
} from './instance-type.ts';
import { type CapacityType, Label } from './labels.ts';
import { Resource } from './resources.ts';

/**
 * One record of the bundled catalog (`shared/catalog/instance-types.json`); fields are described
 * in `shared/data/INSTANCE-TYPES-SOURCES.md`. Only the fields the core reads are typed.
 */
export interface CatalogInstanceType {
  readonly name: string;
  readonly family: string;
  readonly category: string;
  readonly generation: number;
  readonly size: string;
  readonly arch: string;
  readonly vcpu: number;
  readonly memoryMiB: number;
  readonly cpuManufacturer?: string | null;
  readonly cpuSustainedClockMHz?: number | null;
  readonly gpuCount: number;
  readonly gpuName?: string | null;
  readonly gpuManufacturer?: string | null;
  readonly gpuMemoryMiB?: number;
  readonly acceleratorCount?: number;
  readonly acceleratorName?: string | null;
  /** NeuronCores (`aws.amazon.com/neuroncore`); absent without Neuron devices (the bundled records have none). */
  readonly neuronCores?: number;
  /** EC2's `NitroEnclavesSupport` (`karpenter.k8s.aws/nitro-sandbox`); absent when unknown, as in the bundled records. */
  readonly nitroEnclaves?: boolean;
  readonly maxPods: number;
  readonly enis?: number;
  readonly ipv4PerEni?: number;
  readonly branchEnis?: number;
  /** EFA interfaces the type supports (`vpc.amazonaws.com/efa`); 0 or absent when none. */
  readonly efaCount?: number;
  readonly networkBandwidthMbps?: number | null;
  readonly ebsBandwidthMbps?: number | null;
  readonly localNvmeGiB?: number;
  readonly hypervisor?: string | null;
  readonly flex?: boolean;
  readonly encryptionInTransit?: boolean;
  readonly onDemandPriceUsd: Readonly<Record<string, number>>;
  /** Per region, where the on-demand price comes from; `assumed-…` when it is another region's. */
  readonly onDemandPriceSource?: Readonly<Record<string, string>>;
  /** Per region, the zone ids (`use1-az1`) the type is offered in, where known. */
  readonly zones?: Readonly<Record<string, readonly string[]>>;
  readonly spotAdvisor?: Readonly<Record<string, { readonly estimatedSpotPriceUsd: number }>>;
  readonly karpenterAllocatable?: {
    readonly cpuMillicores: number;
    readonly memoryMiB: number;
    readonly ephemeralStorageGiB: number;
    readonly pods: number;
    readonly podEni: number;
  };
}

export interface CatalogOptions {
  /** Region whose prices are used, e.g. `us-east-1`. */
  readonly region: string;
  /** Zones every type is offered in (the catalog does not know per-type zones for most types). */
  readonly zones: readonly string[];
  /** @default ['on-demand', 'spot'] */
  readonly capacityTypes?: readonly CapacityType[];
  readonly nodeClass?: NodeClassSettings;
  /**
   * Spot discount used when the catalog has no Spot Advisor estimate for a type.
   * @default 0.65 (the region median savings in the catalog notes)
   */
  readonly fallbackSpotSavings?: number;
  /**
   * Leave out the offerings whose price is assumed (a spot price from `fallbackSpotSavings`, an
   * on-demand price taken from another region), and the types left with none. When false they
   * are kept, marked `priceAssumed`. @default false
   */
  readonly knownPricesOnly?: boolean;
  /** Marks offerings unavailable (an ICE cache, a zonal shift). */
  readonly isUnavailable?: (instanceType: string, zone: string, capacityType: CapacityType) => boolean;
}

/** What an assumed price is, as the reports' legends for their `*` say it. */
export const ASSUMED_PRICE_MEANING =
  "the bundled catalog has no Spot Advisor estimate for the type (spot at its default 65% discount) or no on-demand price for the region (another region's)";

/**
 * Converts catalog records into domain instance types with one offering per zone × capacity
 * type. Types without an on-demand price in the region are left out. Pure: the JSON is passed in.
 */
export function instanceTypesFromCatalog(
  records: readonly CatalogInstanceType[],
  options: CatalogOptions,
): InstanceType[] {
  const out: InstanceType[] = [];
  for (const r of records) {
    const offerings = catalogOfferings(r, options);
    if (offerings === undefined) continue;
    if (offerings.length === 0 && options.knownPricesOnly === true) continue;
    const hardware = catalogHardware(r);
    const { capacity, overhead } = computeCapacityAndOverhead(hardware, options.nodeClass);
    out.push({ name: r.name, labels: catalogLabels(r, options.region), capacity, overhead, offerings });
  }
  return out;
}

/**
 * A record's offerings in `options.region`, one per zone × capacity type (reserved ones come
 * from reservations, not the catalog); undefined when the type has no on-demand price there.
 */
export function catalogOfferings(r: CatalogInstanceType, options: CatalogOptions): Offering[] | undefined {
  const capacityTypes = options.capacityTypes ?? ['on-demand', 'spot'];
  const savings = options.fallbackSpotSavings ?? 0.65;
  const onDemand = r.onDemandPriceUsd[options.region];
  if (onDemand === undefined) return undefined;
  const estimate = r.spotAdvisor?.[options.region]?.estimatedSpotPriceUsd;
  const spot = estimate ?? onDemand * (1 - savings);
  const assumed = {
    'on-demand': r.onDemandPriceSource?.[options.region]?.startsWith('assumed') === true,
    spot: estimate === undefined,
  };
  const offerings: Offering[] = [];
  for (const zone of options.zones) {
    for (const capacityType of capacityTypes) {
      if (capacityType === 'reserved') continue;
      const priceAssumed = assumed[capacityType];
      if (priceAssumed && options.knownPricesOnly === true) continue;
      offerings.push({
        zone,
        capacityType,
        priceUsdPerHour: capacityType === 'spot' ? spot : onDemand,
        available: !(options.isUnavailable?.(r.name, zone, capacityType) ?? false),
        ...(priceAssumed ? { priceAssumed } : {}),
      });
    }
  }
  return offerings;
}

/**
 * A record's hardware: ENI-limited pods as the catalog gives them, GPUs, Neuron devices and cores,
 * pod ENIs.
 */
export function catalogHardware(r: CatalogInstanceType): InstanceHardware {
  const extended: Record<string, number> = {};
  if (r.gpuCount > 0) {
    extended[r.gpuManufacturer === 'amd' ? Resource.amdGpu : Resource.nvidiaGpu] = r.gpuCount;
  }
  if ((r.acceleratorCount ?? 0) > 0) extended[Resource.neuron] = r.acceleratorCount ?? 0;
  if ((r.neuronCores ?? 0) > 0) extended[Resource.neuronCore] = r.neuronCores ?? 0;
  // The catalog does not carry the trunking-compatible flag; Karpenter's published column says
  // which types advertise pod ENIs, and branchEnis how many.
  const podEni = r.karpenterAllocatable === undefined ? (r.branchEnis ?? 0) : r.karpenterAllocatable.podEni;
  if (podEni > 0) extended[Resource.podEni] = podEni;
  return {
    vcpu: r.vcpu,
    memoryMiB: r.memoryMiB,
    arch: r.arch,
    eniMaxPods: r.maxPods,
    extended,
    instanceStoreBytes: (r.localNvmeGiB ?? 0) * 1e9,
  };
}

/** The well-known labels of a catalog record in `region`. */
export function catalogLabels(r: CatalogInstanceType, region: string): Record<string, string> {
  const labels: Record<string, string> = {
    [Label.arch]: r.arch,
    [Label.os]: 'linux',
    [Label.region]: region,
    [Label.instanceType]: r.name,
    [Label.instanceCategory]: r.category,
    [Label.instanceFamily]: r.family,
    [Label.instanceGeneration]: String(r.generation),
    [Label.instanceSize]: r.size,
    [Label.instanceCpu]: String(r.vcpu),
    [Label.instanceMemory]: String(r.memoryMiB),
    [Label.instanceEncryptionInTransitSupported]: String(r.encryptionInTransit ?? false),
    [Label.instanceCapabilityFlex]: String(r.flex ?? false),
  };
  if (r.cpuManufacturer) labels[Label.instanceCpuManufacturer] = r.cpuManufacturer;
  if (r.cpuSustainedClockMHz)
    labels[Label.instanceCpuSustainedClockSpeedMhz] = String(r.cpuSustainedClockMHz);
  if (r.hypervisor) labels[Label.instanceHypervisor] = r.hypervisor;
  if (r.nitroEnclaves !== undefined) labels[Label.nitroSandbox] = String(r.nitroEnclaves);
  if (r.networkBandwidthMbps) labels[Label.instanceNetworkBandwidth] = String(r.networkBandwidthMbps);
  if (r.ebsBandwidthMbps) labels[Label.instanceEbsBandwidth] = String(r.ebsBandwidthMbps);
  if (r.localNvmeGiB) labels[Label.instanceLocalNvme] = String(r.localNvmeGiB);
  if (r.gpuName) {
    labels[Label.instanceGpuName] = r.gpuName;
    labels[Label.instanceGpuCount] = String(r.gpuCount);
    if (r.gpuManufacturer) labels[Label.instanceGpuManufacturer] = r.gpuManufacturer;
    if (r.gpuMemoryMiB) labels[Label.instanceGpuMemory] = String(r.gpuMemoryMiB);
  }
  if (r.acceleratorName) {
    labels[Label.instanceAcceleratorName] = r.acceleratorName;
    labels[Label.instanceAcceleratorCount] = String(r.acceleratorCount ?? 0);
  }
  return labels;
}
