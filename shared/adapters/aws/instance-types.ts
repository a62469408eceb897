import {
  DescribeAvailabilityZonesCommand,
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
  type EC2Client,
  type InstanceTypeInfo,
} from '@aws-sdk/client-ec2';
import { type CapacityType, type InstanceType, Label, type Offering, Resource } from '../../core/index.ts';
import type { CachedInstanceType, OfferingKey } from '../../ports/cloud.ts';
import { offeringKeyString } from '../../ports/cloud.ts';
import {
  classInstanceType,
  classShape,
  eniLimitedPods,
  type InstanceTypeContext,
  reservedOfferings,
  type TypeHardware,
} from '../class-instance-types.ts';
import { labelsMatch, nodeClassSettings } from '../launch-plan.ts';
import { call } from './errors.ts';

export { eniLimitedPods, type InstanceTypeContext, labelsMatch, nodeClassSettings, reservedOfferings };

/** Karpenter's instance-type name scheme: category letters, optional `-Ntb`, generation digits. */
const NAME_SCHEME = /^([a-z]+)(-[0-9]+tb)?([0-9]+)[a-z0-9-]*\./;

/** Every instance type in the region that Linux nodes can use (hvm, x86_64 or arm64), paginated. */
export async function describeInstanceTypes(ec2: EC2Client): Promise<InstanceTypeInfo[]> {
  const out: InstanceTypeInfo[] = [];
  let nextToken: string | undefined;
  do {
    const page = await call('ec2:DescribeInstanceTypes', () =>
      ec2.send(
        new DescribeInstanceTypesCommand({
          Filters: [
            { Name: 'supported-virtualization-type', Values: ['hvm'] },
            { Name: 'processor-info.supported-architecture', Values: ['x86_64', 'arm64'] },
          ],
          MaxResults: 100,
          ...(nextToken ? { NextToken: nextToken } : {}),
        }),
      ),
    );
    out.push(...(page.InstanceTypes ?? []));
    nextToken = page.NextToken;
  } while (nextToken);
  return out;
}

/** Instance type → zones it is offered in (DescribeInstanceTypeOfferings, availability-zone). */
export async function describeZonalOfferings(ec2: EC2Client): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  let nextToken: string | undefined;
  do {
    const page = await call('ec2:DescribeInstanceTypeOfferings', () =>
      ec2.send(
        new DescribeInstanceTypeOfferingsCommand({
          LocationType: 'availability-zone',
          MaxResults: 1000,
          ...(nextToken ? { NextToken: nextToken } : {}),
        }),
      ),
    );
    for (const offering of page.InstanceTypeOfferings ?? []) {
      if (!offering.InstanceType || !offering.Location) continue;
      const zones = out.get(offering.InstanceType) ?? new Set<string>();
      zones.add(offering.Location);
      out.set(offering.InstanceType, zones);
    }
    nextToken = page.NextToken;
  } while (nextToken);
  return out;
}

/** Zone name → zone id (`us-east-1a` → `use1-az6`). */
export async function describeZoneIds(ec2: EC2Client): Promise<Map<string, string>> {
  const result = await call('ec2:DescribeAvailabilityZones', () =>
    ec2.send(new DescribeAvailabilityZonesCommand({})),
  );
  return new Map(
    (result.AvailabilityZones ?? []).flatMap((z) =>
      z.ZoneName && z.ZoneId ? [[z.ZoneName, z.ZoneId] as const] : [],
    ),
  );
}

export interface OfferingPrices {
  /** Instance type → USD per hour (on-demand). */
  readonly onDemand: ReadonlyMap<string, number>;
  /** `<instanceType>:<zone>` → USD per hour (spot). */
  readonly spot: ReadonlyMap<string, number>;
}

/**
 * Maps one DescribeInstanceTypes entry to the cache's NodeClass-independent form, with Karpenter's
 * well-known labels and one offering per zone × supported capacity type. An offering without a
 * price keeps no price (and is unavailable when read).
 */
export function toCachedInstanceType(
  info: InstanceTypeInfo,
  zones: ReadonlySet<string>,
  zoneIds: ReadonlyMap<string, string>,
  prices: OfferingPrices,
  branchEnis: number,
): CachedInstanceType | undefined {
  const name = info.InstanceType;
  if (name === undefined) return undefined;
  const architectures = info.ProcessorInfo?.SupportedArchitectures ?? [];
  const arch = architectures.includes('x86_64')
    ? 'amd64'
    : architectures.includes('arm64')
      ? 'arm64'
      : undefined;
  if (arch === undefined) return undefined;
  const [family = name, size = ''] = name.split('.');
  const scheme = NAME_SCHEME.exec(name);
  const vcpu = info.VCpuInfo?.DefaultVCpus ?? 0;
  const memoryMiB = info.MemoryInfo?.SizeInMiB ?? 0;
  const gpu = info.GpuInfo?.Gpus?.[0];
  const gpuCount = (info.GpuInfo?.Gpus ?? []).reduce((sum, g) => sum + (g.Count ?? 0), 0);
  const neuron = info.NeuronInfo?.NeuronDevices?.[0];
  const inference = info.InferenceAcceleratorInfo?.Accelerators?.[0];
  const acceleratorCount =
    (info.NeuronInfo?.NeuronDevices ?? []).reduce((sum, d) => sum + (d.Count ?? 0), 0) ||
    (info.InferenceAcceleratorInfo?.Accelerators ?? []).reduce((sum, a) => sum + (a.Count ?? 0), 0);
  // Karpenter counts cores as the first Neuron device's count × its cores per device.
  const neuronCores = (neuron?.Count ?? 0) * (neuron?.CoreInfo?.Count ?? 0);
  const acceleratorName = neuron?.Name ?? inference?.Name;
  const acceleratorManufacturer = neuron !== undefined ? 'aws' : inference?.Manufacturer;
  const networkMbps = Math.round(
    (info.NetworkInfo?.NetworkCards ?? []).reduce(
      (sum, card) => sum + (card.BaselineBandwidthInGbps ?? 0),
      0,
    ) * 1000,
  );
  const localNvmeGiB =
    info.InstanceStorageInfo?.NvmeSupport !== 'unsupported'
      ? (info.InstanceStorageInfo?.TotalSizeInGB ?? 0)
      : 0;

  const labels: Record<string, string> = {
    [Label.arch]: arch,
    [Label.os]: 'linux',
    [Label.instanceType]: name,
    [Label.instanceFamily]: family,
    [Label.instanceSize]: size,
    [Label.instanceCpu]: String(vcpu),
    [Label.instanceMemory]: String(memoryMiB),
    [Label.instanceEncryptionInTransitSupported]: String(
      info.NetworkInfo?.EncryptionInTransitSupported ?? false,
    ),
    [Label.instanceCapabilityFlex]: String(family.includes('flex')),
  };
  if (scheme?.[1]) labels[Label.instanceCategory] = scheme[1];
  if (scheme?.[3]) labels[Label.instanceGeneration] = scheme[3];
  const manufacturer = info.ProcessorInfo?.Manufacturer?.toLowerCase();
  if (manufacturer)
    labels[Label.instanceCpuManufacturer] = manufacturer === 'amazon web services' ? 'aws' : manufacturer;
  const clock = info.ProcessorInfo?.SustainedClockSpeedInGhz;
  if (clock) labels[Label.instanceCpuSustainedClockSpeedMhz] = String(Math.round(clock * 1000));
  if (info.Hypervisor) labels[Label.instanceHypervisor] = info.Hypervisor;
  if (networkMbps > 0) labels[Label.instanceNetworkBandwidth] = String(networkMbps);
  const ebs = info.EbsInfo?.EbsOptimizedInfo?.MaximumBandwidthInMbps;
  if (ebs) labels[Label.instanceEbsBandwidth] = String(ebs);
  if (localNvmeGiB > 0) labels[Label.instanceLocalNvme] = String(localNvmeGiB);
  if (gpu !== undefined && gpuCount > 0) {
    if (gpu.Name) labels[Label.instanceGpuName] = gpu.Name.toLowerCase();
    if (gpu.Manufacturer) labels[Label.instanceGpuManufacturer] = gpu.Manufacturer.toLowerCase();
    labels[Label.instanceGpuCount] = String(gpuCount);
    if (gpu.MemoryInfo?.SizeInMiB) labels[Label.instanceGpuMemory] = String(gpu.MemoryInfo.SizeInMiB);
  }
  if (acceleratorCount > 0) {
    if (acceleratorName) labels[Label.instanceAcceleratorName] = acceleratorName.toLowerCase();
    if (acceleratorManufacturer)
      labels[Label.instanceAcceleratorManufacturer] = acceleratorManufacturer.toLowerCase();
    labels[Label.instanceAcceleratorCount] = String(acceleratorCount);
  }

  const usage = new Set(info.SupportedUsageClasses ?? ['on-demand']);
  const offerings: CachedInstanceType['offerings'][number][] = [];
  for (const zone of [...zones].sort()) {
    const zoneId = zoneIds.get(zone);
    for (const capacityType of ['on-demand', 'spot'] as const) {
      if (!usage.has(capacityType)) continue;
      const price = capacityType === 'spot' ? prices.spot.get(`${name}:${zone}`) : prices.onDemand.get(name);
      offerings.push({
        zone,
        ...(zoneId === undefined ? {} : { zoneId }),
        capacityType,
        ...(price === undefined ? {} : { priceUsdPerHour: price }),
      });
    }
  }
  return {
    name,
    arch,
    vcpu,
    memoryMiB,
    labels,
    gpu: {
      count: gpuCount,
      ...(labels[Label.instanceGpuManufacturer]
        ? { manufacturer: labels[Label.instanceGpuManufacturer] }
        : {}),
      ...(labels[Label.instanceGpuName] ? { name: labels[Label.instanceGpuName] } : {}),
    },
    accelerator: {
      count: acceleratorCount,
      ...(labels[Label.instanceAcceleratorManufacturer]
        ? { manufacturer: labels[Label.instanceAcceleratorManufacturer] }
        : {}),
      ...(labels[Label.instanceAcceleratorName] ? { name: labels[Label.instanceAcceleratorName] } : {}),
    },
    enis: info.NetworkInfo?.MaximumNetworkInterfaces ?? 0,
    ipv4PerEni: info.NetworkInfo?.Ipv4AddressesPerInterface ?? 0,
    branchEnis,
    efaCount: info.NetworkInfo?.EfaInfo?.MaximumEfaInterfaces ?? 0,
    bareMetal: info.BareMetal ?? false,
    localNvmeGiB,
    ...((info.ProcessorInfo?.SupportedFeatures ?? []).includes('nested-virtualization')
      ? { nestedVirtualization: true }
      : {}),
    ...(info.NitroEnclavesSupport === undefined
      ? {}
      : { nitroEnclaves: info.NitroEnclavesSupport === 'supported' }),
    ...(neuronCores > 0 ? { neuronCores } : {}),
    offerings,
  };
}

/**
 * Instance types usable with a NodeClass: compatible with at least one of its AMIs, with
 * offerings only in its subnets' zones, capacity and overhead from its kubelet settings. An
 * offering is available when it has a price and is not backed off.
 */
export function toInstanceTypes(
  cached: readonly CachedInstanceType[],
  context: InstanceTypeContext,
): InstanceType[] {
  const zones = new Set((context.nodeClass.status?.subnets ?? []).map((s) => s.zone));
  const shape = classShape(context.nodeClass, context.family, context.provider);
  const out: InstanceType[] = [];
  for (const type of cached) {
    const offerings: Offering[] = [];
    for (const o of type.offerings) {
      if (!zones.has(o.zone) || o.priceUsdPerHour === undefined) continue;
      const key: OfferingKey = { instanceType: type.name, zone: o.zone, capacityType: o.capacityType };
      offerings.push({
        zone: o.zone,
        capacityType: o.capacityType as CapacityType,
        priceUsdPerHour: o.priceUsdPerHour,
        available: !context.unavailable.has(offeringKeyString(key)),
      });
    }
    offerings.push(...reservedOfferings(type, context, zones));
    const extended: Record<string, number> = {};
    if (type.gpu.count > 0) {
      extended[type.gpu.manufacturer === 'amd' ? Resource.amdGpu : Resource.nvidiaGpu] = type.gpu.count;
    }
    if (type.accelerator.count > 0 && type.accelerator.manufacturer === 'aws')
      extended[Resource.neuron] = type.accelerator.count;
    if ((type.neuronCores ?? 0) > 0) extended[Resource.neuronCore] = type.neuronCores ?? 0;
    if (type.branchEnis > 0) extended[Resource.podEni] = type.branchEnis;
    const hardware: TypeHardware = {
      ...type,
      labels: { ...type.labels, [Label.region]: context.region },
      eniMaxPods: eniLimitedPods(type),
      extended,
    };
    const shaped = classInstanceType(hardware, offerings, shape, context.unavailable);
    if (shaped !== undefined) out.push(shaped);
  }
  return out;
}
