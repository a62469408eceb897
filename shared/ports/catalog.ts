import type { CapacityType, Labels } from '../core/index.ts';

// The offering cache: a region's instance types and offerings as the cloud describes them,
// independent of any NodeClass, and the sources a refresh builds it from.

/** An offering as the offering cache stores it: region-wide, independent of any NodeClass. */
export interface CachedOffering {
  readonly zone: string;
  readonly zoneId?: string;
  readonly capacityType: CapacityType;
  /** Absent when no price is known; such an offering is unavailable (as in Karpenter). */
  readonly priceUsdPerHour?: number;
}

/**
 * An instance type as DescribeInstanceTypes describes it, independent of any NodeClass: the
 * offering cache stores these, and `InstanceType`s (shared/core) are computed from them per NodeClass.
 */
export interface CachedInstanceType {
  readonly name: string;
  readonly arch: 'amd64' | 'arm64';
  readonly vcpu: number;
  readonly memoryMiB: number;
  /** Single-valued well-known labels (karpenter.k8s.aws/instance-*, arch, os, instance-type). */
  readonly labels: Labels;
  readonly gpu: { readonly count: number; readonly manufacturer?: string; readonly name?: string };
  readonly accelerator: { readonly count: number; readonly manufacturer?: string; readonly name?: string };
  readonly enis: number;
  readonly ipv4PerEni: number;
  /** Branch ENIs for security groups for pods (`vpc.amazonaws.com/pod-eni`); 0 when unsupported. */
  readonly branchEnis: number;
  readonly efaCount: number;
  readonly bareMetal: boolean;
  readonly localNvmeGiB: number;
  /** The processor supports nested virtualization (`cpuOptions.nestedVirtualization`). */
  readonly nestedVirtualization?: boolean;
  /**
   * EC2's `NitroEnclavesSupport` (`supported` is true; `enclaveOptions.enabled`, the
   * `karpenter.k8s.aws/nitro-sandbox` label); unset when unknown (EC2 left it out, or a cache
   * written before it was recorded).
   */
  readonly nitroEnclaves?: boolean;
  /**
   * NeuronCores (`aws.amazon.com/neuroncore`): the type's Neuron devices × the cores of each, as
   * EC2's `NeuronInfo` gives them; unset without Neuron devices.
   */
  readonly neuronCores?: number;
  readonly offerings: readonly CachedOffering[];
}

/** What the offering cache holds for one region. */
export interface OfferingCatalog {
  readonly region: string;
  /** Opaque id of one refresh; readers see one generation at a time. */
  readonly generation: string;
  /** RFC 3339. */
  readonly refreshedAt: string;
  readonly instanceTypes: readonly CachedInstanceType[];
}

/** Builds a fresh catalog of the region from the cloud (the catalog refresh reads it). */
export interface CatalogSource {
  /** @throws CloudApiError when the cloud cannot be read. */
  fetchCatalog(): Promise<OfferingCatalog>;
}

/** On-demand Linux prices (AWS Pricing API, or the generated fallback table). */
export interface OnDemandPriceSource {
  /** Instance type → USD per hour for `region`; types without a known price are absent. */
  onDemandPrices(region: string): Promise<ReadonlyMap<string, number>>;
}
