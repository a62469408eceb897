import type {
  CapacityType,
  InstanceType,
  Labels,
  NodeSelectorRequirement,
  Offering,
  Taint,
} from '../core/index.ts';
import { FlotillaError } from '../core/index.ts';

// The Cloud port: what the use cases ask of EC2, in Karpenter's vocabulary. The AWS adapter lives
// in shared/adapters/aws; the simulator's in-memory one in shared/adapters/memory.
//
// Domain types (InstanceType, Offering, requirements, taints) come from shared/core.

export type { CapacityType, InstanceType, Labels, NodeSelectorRequirement, Offering, Taint };

// ---------------------------------------------------------------------------------------------
// EC2NodeClass (karpenter.k8s.aws/v1), parsed

/** Subnet and security-group selector term: exactly one of tags, id or (security groups only) name. */
export interface SelectorTerm {
  /** Tag key → value; `*` matches any value. */
  readonly tags?: Readonly<Record<string, string>>;
  readonly id?: string;
  /** Security groups only: the group name (not the Name tag). */
  readonly name?: string;
}

export interface AmiSelectorTerm {
  /** `family@version`, e.g. `al2023@latest`, `al2023@v20240625`, `bottlerocket@latest`. */
  readonly alias?: string;
  readonly id?: string;
  /** Image name, wildcards allowed. Without `owner`, only images owned by `self` or `amazon` match. */
  readonly name?: string;
  readonly owner?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /** An SSM parameter whose value is an AMI id. */
  readonly ssmParameter?: string;
}

export type AmiFamily =
  | 'AL2023'
  | 'Bottlerocket'
  | 'AL2'
  | 'Custom'
  | 'Windows2019'
  | 'Windows2022'
  | 'Windows2025';

export interface BlockDevice {
  readonly deleteOnTermination?: boolean;
  readonly encrypted?: boolean;
  readonly iops?: number;
  readonly kmsKeyID?: string;
  readonly snapshotID?: string;
  readonly throughput?: number;
  /** Bytes (parsed from a quantity such as `20Gi`). */
  readonly volumeSizeBytes?: number;
  readonly volumeType?: 'standard' | 'io1' | 'io2' | 'gp2' | 'sc1' | 'st1' | 'gp3';
}

export interface BlockDeviceMapping {
  readonly deviceName: string;
  readonly rootVolume?: boolean;
  readonly ebs?: BlockDevice;
}

export interface MetadataOptions {
  readonly httpEndpoint: 'enabled' | 'disabled';
  readonly httpProtocolIPv6: 'enabled' | 'disabled';
  readonly httpPutResponseHopLimit: number;
  readonly httpTokens: 'required' | 'optional';
}

/** EC2NodeClass `spec.kubelet` (v1.14 typed fields). Reserved maps are kept as quantity strings. */
export interface KubeletSpec {
  readonly clusterDNS?: readonly string[];
  readonly maxPods?: number;
  readonly podsPerCore?: number;
  readonly systemReserved?: Readonly<Record<string, string>>;
  readonly kubeReserved?: Readonly<Record<string, string>>;
  readonly evictionHard?: Readonly<Record<string, string>>;
  readonly evictionSoft?: Readonly<Record<string, string>>;
  readonly evictionSoftGracePeriod?: Readonly<Record<string, string>>;
  readonly evictionMaxPodGracePeriod?: number;
  readonly imageGCHighThresholdPercent?: number;
  readonly imageGCLowThresholdPercent?: number;
  readonly cpuCFSQuota?: boolean;
}

export interface EC2NodeClassSpec {
  readonly subnetSelectorTerms: readonly SelectorTerm[];
  readonly securityGroupSelectorTerms: readonly SelectorTerm[];
  readonly amiSelectorTerms: readonly AmiSelectorTerm[];
  readonly amiFamily?: AmiFamily;
  readonly role?: string;
  readonly instanceProfile?: string;
  readonly userData?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly kubelet?: KubeletSpec;
  readonly blockDeviceMappings?: readonly BlockDeviceMapping[];
  /** Defaults applied when parsed: IMDSv2 required, hop limit 1. */
  readonly metadataOptions: MetadataOptions;
  readonly associatePublicIPAddress?: boolean;
  readonly detailedMonitoring?: boolean;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  /** RFC 3339. */
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

export interface SubnetStatus {
  readonly id: string;
  readonly zone: string;
  readonly zoneID?: string;
}

export interface SecurityGroupStatus {
  readonly id: string;
  readonly name?: string;
}

export interface AmiStatus {
  readonly id: string;
  readonly name?: string;
  readonly deprecated?: boolean;
  /** Which instance types the AMI serves: architecture, GPU/accelerator variant. */
  readonly requirements: readonly NodeSelectorRequirement[];
}

export interface EC2NodeClassStatus {
  readonly subnets: readonly SubnetStatus[];
  readonly securityGroups: readonly SecurityGroupStatus[];
  readonly amis: readonly AmiStatus[];
  readonly instanceProfile?: string;
  readonly conditions: readonly Condition[];
}

export interface EC2NodeClass {
  readonly name: string;
  readonly generation?: number;
  readonly spec: EC2NodeClassSpec;
  readonly status?: EC2NodeClassStatus;
}

/** Condition types an EC2NodeClass carries; `Ready` is True only when all the others are. */
export const NodeClassConditionType = {
  ready: 'Ready',
  subnetsReady: 'SubnetsReady',
  securityGroupsReady: 'SecurityGroupsReady',
  amisReady: 'AMIsReady',
  instanceProfileReady: 'InstanceProfileReady',
  validationSucceeded: 'ValidationSucceeded',
} as const;

/** True when the status says the NodeClass may launch. */
export function isNodeClassReady(status: EC2NodeClassStatus | undefined): boolean {
  return (
    status?.conditions.some((c) => c.type === NodeClassConditionType.ready && c.status === 'True') ?? false
  );
}

// ---------------------------------------------------------------------------------------------
// Instance types and offerings

/** One (instance type × zone × capacity type), the unit EC2 runs out of. */
export interface OfferingKey {
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
}

/** `<capacityType>:<instanceType>:<zone>`, Karpenter's ICE-cache key. */
export function offeringKeyString(key: OfferingKey): string {
  return `${key.capacityType}:${key.instanceType}:${key.zone}`;
}

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

// ---------------------------------------------------------------------------------------------
// Launch and instances

export interface LaunchRequest {
  /** The NodeClaim name; it derives the idempotency token and the `karpenter.sh/nodeclaim` tag. */
  readonly nodeClaimName: string;
  readonly nodePoolName: string;
  /** The NodeClass with a resolved, Ready status. */
  readonly nodeClass: EC2NodeClass;
  /** Candidate types (already filtered by the scheduler: compatible and big enough). */
  readonly instanceTypes: readonly InstanceType[];
  /** The NodeClaim's requirements; only offering keys (zone, capacity type, zone id) are evaluated here. */
  readonly requirements: readonly NodeSelectorRequirement[];
  /** Labels kubelet registers the node with. */
  readonly labels: Labels;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
}

export type InstanceState = 'pending' | 'running' | 'shutting-down' | 'terminated' | 'stopping' | 'stopped';

export interface CloudInstance {
  readonly instanceId: string;
  /** `aws:///<zone>/<instance id>`, as the Node's spec.providerID. */
  readonly providerId: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  readonly state: InstanceState;
  readonly imageId?: string;
  readonly launchTime?: Date;
  readonly privateDnsName?: string;
  readonly nodeClaimName?: string;
  readonly nodePoolName?: string;
  readonly nodeClassName?: string;
  readonly tags: Readonly<Record<string, string>>;
}

/**
 * EC2 as the use cases need it. Every method is idempotent; errors are the typed errors below.
 */
export interface Cloud {
  /**
   * Instance types usable with `nodeClass` (its AMIs' architectures, its subnets' zones), with
   * capacity and overhead from its kubelet settings and offerings whose `available` reflects the
   * ICE back-offs now. Reads the offering cache, never EC2.
   * @throws CatalogUnavailableError when the cache has not been filled yet.
   */
  instanceTypes(nodeClass: EC2NodeClass): Promise<readonly InstanceType[]>;
  /**
   * Launches one instance for a NodeClaim. Launching again with the same NodeClaim name returns
   * the instance already launched.
   * @throws NodeClassNotReadyError, InsufficientCapacityError (offerings already backed off),
   *   CloudApiError.
   */
  create(request: LaunchRequest): Promise<CloudInstance>;
  /**
   * Terminates an instance this cluster launched. An instance already gone counts as success.
   * @throws InstanceNotOwnedError when the instance lacks this cluster's tags; CloudApiError.
   */
  delete(instanceId: string): Promise<void>;
  /** The instance, or undefined when EC2 no longer knows it. */
  get(instanceId: string): Promise<CloudInstance | undefined>;
  /** Every non-terminated instance this cluster owns (for garbage collection). */
  list(): Promise<readonly CloudInstance[]>;
  /** Backs offerings off for the ICE TTL (3 minutes), e.g. after a spot interruption warning. */
  markUnavailable(offerings: readonly OfferingKey[], reason: string): Promise<void>;
}

/** Resolves an EC2NodeClass's selectors against EC2/SSM into its status. */
export interface NodeClassResolver {
  /** Never throws for user mistakes: those become False conditions with readable messages. */
  resolve(nodeClass: EC2NodeClass): Promise<EC2NodeClassStatus>;
}

/** Writes an EC2NodeClass's status subresource back to the cluster. */
export interface NodeClassStatusWriter {
  write(name: string, status: EC2NodeClassStatus): Promise<void>;
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

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * EC2 had no capacity for any of the offerings tried. The offerings are already backed off; the
 * NodeClaim should be deleted so the next provisioning round picks something else.
 */
export class InsufficientCapacityError extends FlotillaError {
  readonly code = 'InsufficientCapacity';

  constructor(
    message: string,
    readonly offerings: readonly OfferingKey[],
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The NodeClass's status is not Ready; nothing is launched. */
export class NodeClassNotReadyError extends FlotillaError {
  readonly code = 'NodeClassNotReady';

  constructor(
    readonly nodeClass: string,
    reasons: string,
  ) {
    super(
      `ec2NodeClass "${nodeClass}" is not ready, so nothing was launched: ${reasons}. Fix the EC2NodeClass (kubectl describe ec2nodeclass ${nodeClass}).`,
    );
  }
}

/** An AWS call failed with an error that is not insufficient capacity. */
export class CloudApiError extends FlotillaError {
  readonly code = 'CloudApiError';

  constructor(
    readonly operation: string,
    readonly awsCode: string,
    readonly awsMessage: string,
    advice: string,
    options?: { readonly cause?: unknown },
  ) {
    super(`${operation} failed with ${awsCode}: ${awsMessage}${advice === '' ? '' : `. ${advice}`}`, options);
  }
}

/** Refused to touch an instance that this cluster did not launch. */
export class InstanceNotOwnedError extends FlotillaError {
  readonly code = 'InstanceNotOwned';

  constructor(
    readonly instanceId: string,
    clusterName: string,
  ) {
    super(
      `instance ${instanceId} is not tagged kubernetes.io/cluster/${clusterName}=owned with a karpenter.sh/nodepool tag, so Flotilla did not launch it and will not terminate it; terminate it yourself if it is yours to remove`,
    );
  }
}

/** The offering cache is empty or unreadable: the catalog refresh has not run yet or failed. */
export class CatalogUnavailableError extends FlotillaError {
  readonly code = 'CatalogUnavailable';
}
