import {
  type Condition,
  isConditionTrue,
  NodeClassConditionType,
  type NodeSelectorRequirement,
} from '../core/index.ts';

// EC2NodeClass (`karpenter.k8s.aws/v1`) as parsed: its spec (selector terms, AMI family, kubelet,
// block devices, network interfaces, capacity reservations) and its resolved status.

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

/**
 * EC2NodeClass `spec.kubelet`, an open map of kubelet configuration fields (Karpenter v1.15; v1.14
 * had only the typed fields). The fields Flotilla reads itself (Karpenter's managed set) are typed;
 * reserved maps are kept as quantity strings. Nothing the manifest sets is dropped: a managed field
 * whose value Flotilla cannot read is kept in `unreadable`, any other field in `unmanaged`, and
 * the status controller judges both.
 */
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
  /**
   * Fields outside the managed set, as the manifest sets them. Only AL2023 applies them (in the
   * nodeadm NodeConfig, as they are); they never change what the scheduler counts.
   */
  readonly unmanaged?: Readonly<Record<string, unknown>>;
  /**
   * Managed fields set to a value Flotilla cannot use (the wrong JSON type, a CEL expression, a
   * threshold or reservation that is not a quantity), as the manifest sets them.
   */
  readonly unreadable?: Readonly<Record<string, unknown>>;
}

/** The `spec.kubelet` fields Flotilla reads itself (Karpenter's managed set). */
export type ManagedKubeletField = Exclude<keyof KubeletSpec, 'unmanaged' | 'unreadable'>;

/** `spec.kubelet` as the open map the manifest holds: the managed fields, unreadable ones included, and the others. */
export function kubeletConfigMap(kubelet: KubeletSpec): Readonly<Record<string, unknown>> {
  const { unmanaged, unreadable, ...managed } = kubelet;
  return { ...managed, ...unreadable, ...unmanaged };
}

/** One `spec.networkInterfaces` entry: an attachment made at launch (EFA). */
export interface NetworkInterfaceSpec {
  readonly networkCardIndex: number;
  readonly deviceIndex: number;
  /** `interface`: an ENA interface with IP addresses; `efa-only`: an EFA device without IP addresses. */
  readonly interfaceType: 'interface' | 'efa-only';
}

/**
 * `spec.connectionTracking`: idle connection-tracking timeouts in seconds for the interfaces a
 * launch template attaches (not `efa-only` ones); at least one is set. A timeout left out keeps
 * EC2's default.
 */
export interface ConnectionTrackingSpec {
  /** Established TCP connections, 60 to 432,000. */
  readonly tcpEstablishedTimeout?: number;
  /** UDP flows that saw more than one request/response, 60 to 180. */
  readonly udpStreamTimeout?: number;
  /** One-way or single request/response UDP flows, 30 to 60. */
  readonly udpTimeout?: number;
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
  /** AWS Nitro Enclaves (Karpenter v1.15): enabled offers only types that support them. */
  readonly enclaveOptions?: { readonly enabled: boolean };
  /**
   * Idle connection-tracking timeouts on the launch template's interfaces; when set, only types
   * on the Nitro hypervisor are offered.
   */
  readonly connectionTracking?: ConnectionTrackingSpec;
  /** EC2 Fleet `Context`, passed to CreateFleet as it is. */
  readonly context?: string;
  /** On-Demand Capacity Reservations and Capacity Blocks to launch into first. */
  readonly capacityReservationSelectorTerms?: readonly CapacityReservationSelectorTerm[];
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

export interface EC2NodeClassStatus {
  readonly subnets: readonly SubnetStatus[];
  readonly securityGroups: readonly SecurityGroupStatus[];
  readonly amis: readonly AmiStatus[];
  /** Absent when the class selects no capacity reservations. */
  readonly capacityReservations?: readonly CapacityReservationStatus[];
  readonly instanceProfile?: string;
  /**
   * The group `spec.placementGroupSelector` resolved to; absent without a selector. Kept in the
   * class's `flotilla.io/placement-group` annotation, not in its status (Karpenter's CRD has no
   * such field).
   */
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

/**
 * Why the NodeClass may not launch now, or undefined when it may: it must be Ready, and a class
 * that selects a placement group must have its group at hand (nodes never launch outside it).
 */
export function nodeClassNotReady(nodeClass: Pick<EC2NodeClass, 'spec' | 'status'>): string | undefined {
  const status = nodeClass.status;
  if (status === undefined) return 'it has no resolved status yet';
  if (!isConditionTrue(status.conditions, NodeClassConditionType.ready)) {
    const ready = status.conditions.find((c) => c.type === NodeClassConditionType.ready);
    return ready?.message || 'it has no resolved status yet';
  }
  if (placementGroupMissing(nodeClass)) return 'its placement group is not resolved yet';
  return undefined;
}

/** The class selects a placement group, and the group it resolved to is not at hand. */
export function placementGroupMissing(nodeClass: Pick<EC2NodeClass, 'spec' | 'status'>): boolean {
  return (
    nodeClass.spec.placementGroupSelector !== undefined &&
    (nodeClass.status?.placementGroups ?? []).length === 0
  );
}

/** True when the NodeClass may launch (see `nodeClassNotReady`). */
export function isNodeClassReady(nodeClass: Pick<EC2NodeClass, 'spec' | 'status'>): boolean {
  return nodeClassNotReady(nodeClass) === undefined;
}
