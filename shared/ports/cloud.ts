import {
  type CapacityType,
  type Condition,
  type ConditionStatus,
  type InstanceType,
  isConditionTrue,
  type Labels,
  NodeClassConditionType,
  type NodeSelectorRequirement,
  type Offering,
  type Taint,
} from '../core/index.ts';

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

/**
 * Capacity reservation selector term: `id` alone, or any of `tags`, `ownerID` and
 * `instanceMatchCriteria` (ANDed within the term; terms are ORed).
 */
export interface CapacityReservationSelectorTerm {
  /** `cr-…`; exclusive with the other fields. */
  readonly id?: string;
  /** Tag key → value; `*` matches any value. */
  readonly tags?: Readonly<Record<string, string>>;
  /** The 12-digit account that owns the reservation. */
  readonly ownerID?: string;
  readonly instanceMatchCriteria?: 'open' | 'targeted';
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

/** One `spec.networkInterfaces` entry: an attachment made at launch (EFA). */
export interface NetworkInterfaceSpec {
  readonly networkCardIndex: number;
  readonly deviceIndex: number;
  /** `interface`: an ENA interface with IP addresses; `efa-only`: an EFA device without IP addresses. */
  readonly interfaceType: 'interface' | 'efa-only';
}

/** `spec.placementGroupSelector`: exactly one of name and id. */
export interface PlacementGroupSelector {
  readonly name?: string;
  readonly id?: string;
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
  /** `RAID0`: the NVMe instance store becomes the node's ephemeral storage. */
  readonly instanceStorePolicy?: 'RAID0';
  /** The placement group every instance of the class is launched into. */
  readonly placementGroupSelector?: PlacementGroupSelector;
  /** Interfaces attached at launch; when set, one is the primary `interface` at card 0, device 0. */
  readonly networkInterfaces?: readonly NetworkInterfaceSpec[];
  /** IPv4 prefixes assigned to the primary interface. */
  readonly ipPrefixCount?: number;
  readonly cpuOptions?: { readonly nestedVirtualization?: 'enabled' | 'disabled' };
  /** EC2 Fleet `Context`, passed to CreateFleet as it is. */
  readonly context?: string;
  /** On-Demand Capacity Reservations and Capacity Blocks to launch into first. */
  readonly capacityReservationSelectorTerms?: readonly CapacityReservationSelectorTerm[];
}

export type { Condition, ConditionStatus };

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

/** A resolved placement group (`status.placementGroups[]`). */
export interface PlacementGroupStatus {
  readonly id: string;
  readonly name: string;
  readonly state: string;
  /** `cluster`, `partition` or `spread`. */
  readonly strategy: string;
  readonly partitionCount?: number;
  /** Spread groups: `rack` or `host`. */
  readonly spreadLevel?: string;
}

/** A capacity reservation the selector terms resolve to (`status.capacityReservations[]`). */
export interface CapacityReservationStatus {
  readonly id: string;
  readonly availabilityZone: string;
  readonly instanceType: string;
  readonly instanceMatchCriteria: 'open' | 'targeted';
  readonly ownerID: string;
  /** `default` (an ODCR) or `capacity-block`. */
  readonly reservationType: 'default' | 'capacity-block';
  /** `expiring` once a capacity block is inside the window before its end, when EC2 reclaims it. */
  readonly state: 'active' | 'expiring';
  /** RFC 3339; absent for an ODCR without an end date. */
  readonly endTime?: string;
  readonly interruptible?: boolean;
}

/**
 * What EC2 says of a capacity reservation NodeClaims run in, whatever the classes select now.
 * `expiring`: a capacity block inside the window before its end; `ended`: expired or cancelled (an
 * ODCR's instances keep running as on-demand ones); `other`: any other state (pending, failed …).
 */
export interface CapacityReservationLifecycle {
  readonly id: string;
  readonly reservationType: 'default' | 'capacity-block';
  readonly state: 'active' | 'expiring' | 'ended' | 'other';
  /** The state as EC2 names it (`expired`, `cancelled`, `active` …). */
  readonly ec2State: string;
  /** RFC 3339; absent for an ODCR without an end date. */
  readonly endTime?: string;
}

export interface EC2NodeClassStatus {
  readonly subnets: readonly SubnetStatus[];
  readonly securityGroups: readonly SecurityGroupStatus[];
  readonly amis: readonly AmiStatus[];
  /** Absent when the class selects no capacity reservations. */
  readonly capacityReservations?: readonly CapacityReservationStatus[];
  readonly instanceProfile?: string;
  /** The group `spec.placementGroupSelector` resolved to; absent without a selector. */
  readonly placementGroups?: readonly PlacementGroupStatus[];
  readonly conditions: readonly Condition[];
}

export interface EC2NodeClass {
  readonly name: string;
  /** `metadata.uid`, when read from a cluster. */
  readonly uid?: string;
  readonly generation?: number;
  /** `metadata.finalizers`, when read from a cluster. */
  readonly finalizers?: readonly string[];
  /** `metadata.deletionTimestamp` is set. */
  readonly deleting?: boolean;
  readonly spec: EC2NodeClassSpec;
  /**
   * Spec fields the object sets that Flotilla does not know (a newer Karpenter's): the class is
   * not valid while any is set, since launching without them would ignore them.
   */
  readonly unsupportedFields?: readonly string[];
  readonly status?: EC2NodeClassStatus;
}

/** True when the status says the NodeClass may launch. */
export function isNodeClassReady(status: EC2NodeClassStatus | undefined): boolean {
  return status !== undefined && isConditionTrue(status.conditions, NodeClassConditionType.ready);
}

// ---------------------------------------------------------------------------------------------
// Instance types and offerings

import type { OfferingKey } from './offering.ts';

export { isBackedOff, type OfferingKey, offeringKeyString } from './offering.ts';

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
  /** The capacity reservation the instance runs in (capacity type `reserved`). */
  readonly capacityReservationId?: string;
  readonly capacityReservationType?: 'default' | 'capacity-block';
  readonly state: InstanceState;
  readonly imageId?: string;
  /** The subnet of its primary network interface. */
  readonly subnetId?: string;
  /** The security groups of its primary network interface. */
  readonly securityGroupIds?: readonly string[];
  /**
   * The placement group it runs in (EC2 names it; the id where EC2 gives it), and in a
   * `partition` group the partition EC2 put it in (`1`…N); absent when none.
   */
  readonly placementGroup?: { readonly name?: string; readonly id?: string; readonly partition?: string };
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
   * ICE back-offs now. Reads the offering cache; EC2 only for what the class's capacity
   * reservations can still take (`reserved` offerings, one DescribeCapacityReservations).
   * @throws CatalogUnavailableError when the cache has not been filled yet.
   */
  instanceTypes(nodeClass: EC2NodeClass): Promise<readonly InstanceType[]>;
  /**
   * Decides the launch of a NodeClaim: the exact request the cloud will be sent (offerings, subnet,
   * launch template, idempotency token), as a record the caller keeps on the NodeClaim before
   * calling `launch`. Makes no launch.
   * @throws NodeClassNotReadyError, InsufficientCapacityError (every offering backed off),
   *   CloudApiError.
   */
  planLaunch(request: LaunchRequest): Promise<LaunchRecord>;
  /**
   * Sends a recorded launch. Sending the same record again never launches a second instance: it
   * returns the instance the first send launched (the record carries the idempotency token), or
   * the instance already tagged with the NodeClaim.
   * @throws InsufficientCapacityError or LaunchRejectedError when the cloud answered that nothing
   *   was launched (final for this record); CloudApiError when the answer is unknown (throttled,
   *   timed out): an instance may exist, so send the same record again rather than a new one.
   */
  launch(request: LaunchRequest, record: LaunchRecord, options?: LaunchOptions): Promise<CloudInstance>;
  /** `planLaunch` then `launch`, keeping nothing in between (callers that cannot crash midway). */
  create(request: LaunchRequest): Promise<CloudInstance>;
  /**
   * The instance tagged with the NodeClaim's name that is not terminated yet (pending, running,
   * stopping, stopped or shutting down). Right after a launch
   * EC2 may not list it yet (eventual consistency): an answer of none is final only once
   * `INSTANCE_LOOKUP_WINDOW_MS` has passed since the launch was sent.
   */
  findByNodeClaim(nodeClaimName: string): Promise<CloudInstance | undefined>;
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
  /**
   * Why the instance has drifted from the EC2NodeClass's resolved status (its AMI, subnet or
   * security groups are no longer the class's), or undefined when it has not, when the class has
   * no status, or when the instance is gone.
   * @throws CloudApiError.
   */
  isDrifted(instanceId: string, nodeClass: EC2NodeClass): Promise<CloudDriftReason | undefined>;
}

/**
 * A launch decided for a NodeClaim (Cloud.planLaunch), kept on the NodeClaim between the decision
 * and the launch so that a resumed launch replays it instead of deciding another.
 */
export interface LaunchRecord {
  /** When the launch was decided, epoch ms; the instance lookup waits out its window from here. */
  readonly decidedAtMs: number;
  /** The cloud adapter's encoding of the exact request; opaque to the use cases. */
  readonly request: string;
}

export interface LaunchOptions {
  /**
   * The record was just planned and has never been sent (the caller recorded it on the NodeClaim
   * right before this send): no instance can carry the NodeClaim's tag yet, so none is looked up
   * first. @default false (a replay: the instance tagged with the NodeClaim, if any, is the answer)
   */
  readonly firstSend?: boolean;
}

/**
 * How long after a launch was sent EC2 may still not list its instance (DescribeInstances is
 * eventually consistent). Termination and garbage collection treat "no instance" as final only
 * after this.
 */
export const INSTANCE_LOOKUP_WINDOW_MS = 90_000;

/** The cloud's reasons a NodeClaim is drifted, as Karpenter's AWS provider names them. */
export type CloudDriftReason =
  | 'AMIDrift'
  | 'SubnetDrift'
  | 'SecurityGroupDrift'
  | 'PlacementGroupDrift'
  | 'CapacityReservationDrift';

/**
 * What resolving one part of an EC2NodeClass came to: a value; a real answer that the user must act
 * on (`failed`: nothing matches, the role does not exist, access is denied); or `retry` when AWS
 * failed for now (throttling, a 5xx, a timeout), in which case what was known before still holds.
 */
export type Resolved<T> =
  | { readonly kind: 'resolved'; readonly value: T }
  | { readonly kind: 'failed'; readonly reason: string; readonly message: string }
  | { readonly kind: 'retry'; readonly message: string };

/** An EC2NodeClass's selectors resolved against EC2, SSM and IAM, part by part. */
export interface NodeClassResolution {
  readonly subnets: Resolved<readonly SubnetStatus[]>;
  readonly securityGroups: Resolved<readonly SecurityGroupStatus[]>;
  readonly amis: Resolved<readonly AmiStatus[]>;
  readonly instanceProfile: Resolved<string>;
  /** Absent when the class has no `spec.placementGroupSelector`. */
  readonly placementGroup?: Resolved<PlacementGroupStatus>;
  /**
   * What the cloud side cannot launch as the spec asks (user data that does not render for the
   * AMI family): each makes ValidationSucceeded False with its reason. Absent or empty: nothing.
   */
  readonly validation?: readonly { readonly reason: string; readonly message: string }[];
  /**
   * What the cloud side does only approximately for this class (Windows prices): a condition each
   * with status False, Flotilla's own and not part of Ready, so the class launches and says how.
   */
  readonly limitations?: readonly {
    readonly type: string;
    readonly reason: string;
    readonly message: string;
  }[];
  /** Absent when the class sets no `capacityReservationSelectorTerms`. */
  readonly capacityReservations?: Resolved<readonly CapacityReservationStatus[]>;
}

/** Resolves EC2NodeClasses against the cloud (the NodeClass controller's cloud side). */
export interface NodeClassResolver {
  /**
   * Resolves every part; never throws for user mistakes or AWS faults, which come back as
   * `failed` and `retry` parts. Creates the instance profile of a class that sets `spec.role`.
   */
  resolve(nodeClass: EC2NodeClass): Promise<NodeClassResolution>;
  /**
   * Removes what resolving created for a class being deleted (the instance profile managed for
   * `spec.role`). Idempotent; a profile already gone counts as removed.
   * @throws CloudApiError (with `retryable` for AWS faults).
   */
  release(nodeClass: EC2NodeClass): Promise<void>;
  /**
   * What EC2 says now of each capacity reservation in `ids`, by id (one read). A reservation EC2
   * does not list is absent: nothing is known of it, so nothing may be decided on it.
   * @throws CloudApiError.
   */
  capacityReservations(
    ids: readonly string[],
    now: Date,
  ): Promise<ReadonlyMap<string, CapacityReservationLifecycle>>;
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

export {
  CatalogUnavailableError,
  CloudApiError,
  InstanceNotOwnedError,
  InsufficientCapacityError,
  isRetryableCloudError,
  LaunchRejectedError,
  NodeClassNotReadyError,
  SpotServiceLinkedRoleError,
} from './errors.ts';
