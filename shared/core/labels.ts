/** Label keys map: key → value. */
export type Labels = Readonly<Record<string, string>>;

/** Well-known label keys Karpenter (and therefore Flotilla) schedules on. */
export const Label = {
  hostname: 'kubernetes.io/hostname',
  arch: 'kubernetes.io/arch',
  os: 'kubernetes.io/os',
  windowsBuild: 'node.kubernetes.io/windows-build',
  zone: 'topology.kubernetes.io/zone',
  region: 'topology.kubernetes.io/region',
  zoneId: 'topology.k8s.aws/zone-id',
  instanceType: 'node.kubernetes.io/instance-type',
  capacityType: 'karpenter.sh/capacity-type',
  nodePool: 'karpenter.sh/nodepool',
  registered: 'karpenter.sh/registered',
  initialized: 'karpenter.sh/initialized',
  nodeClass: 'karpenter.k8s.aws/ec2nodeclass',
  instanceCategory: 'karpenter.k8s.aws/instance-category',
  instanceFamily: 'karpenter.k8s.aws/instance-family',
  instanceGeneration: 'karpenter.k8s.aws/instance-generation',
  instanceSize: 'karpenter.k8s.aws/instance-size',
  instanceCpu: 'karpenter.k8s.aws/instance-cpu',
  instanceCpuManufacturer: 'karpenter.k8s.aws/instance-cpu-manufacturer',
  instanceCpuSustainedClockSpeedMhz: 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz',
  instanceMemory: 'karpenter.k8s.aws/instance-memory',
  instanceEbsBandwidth: 'karpenter.k8s.aws/instance-ebs-bandwidth',
  instanceNetworkBandwidth: 'karpenter.k8s.aws/instance-network-bandwidth',
  instanceHypervisor: 'karpenter.k8s.aws/instance-hypervisor',
  instanceEncryptionInTransitSupported: 'karpenter.k8s.aws/instance-encryption-in-transit-supported',
  instanceLocalNvme: 'karpenter.k8s.aws/instance-local-nvme',
  instanceCapabilityFlex: 'karpenter.k8s.aws/instance-capability-flex',
  instanceGpuName: 'karpenter.k8s.aws/instance-gpu-name',
  instanceGpuManufacturer: 'karpenter.k8s.aws/instance-gpu-manufacturer',
  instanceGpuCount: 'karpenter.k8s.aws/instance-gpu-count',
  instanceGpuMemory: 'karpenter.k8s.aws/instance-gpu-memory',
  instanceAcceleratorName: 'karpenter.k8s.aws/instance-accelerator-name',
  instanceAcceleratorManufacturer: 'karpenter.k8s.aws/instance-accelerator-manufacturer',
  instanceAcceleratorCount: 'karpenter.k8s.aws/instance-accelerator-count',
  instanceTenancy: 'karpenter.k8s.aws/instance-tenancy',
  /** `true` or `false`: EC2 reports the type supports Nitro Enclaves (`NitroEnclavesSupport`). */
  nitroSandbox: 'karpenter.k8s.aws/nitro-sandbox',
  /** The capacity reservation a `reserved` node runs in. */
  capacityReservationId: 'karpenter.k8s.aws/capacity-reservation-id',
  /** `default` (an On-Demand Capacity Reservation) or `capacity-block`. */
  capacityReservationType: 'karpenter.k8s.aws/capacity-reservation-type',
  /** `true` or `false` on a `reserved` node: its reservation is interruptible. */
  capacityReservationInterruptible: 'karpenter.k8s.aws/capacity-reservation-interruptible',
  /** The placement group (its id) the EC2NodeClass launches into. */
  placementGroupId: 'karpenter.k8s.aws/placement-group-id',
  /** The partition (`1`…partition count) of a `partition` placement group a node runs in. */
  placementGroupPartition: 'karpenter.k8s.aws/placement-group-partition',
} as const;

/** Values of `karpenter.sh/capacity-type`. */
export type CapacityType = 'on-demand' | 'spot' | 'reserved';

/**
 * Keys whose value comes from the instance type (or its offering: zone, capacity type) and not
 * from the NodePool. A NodePool that says nothing about them allows every value; a pod that
 * requires them is matched per instance type.
 */
export const INSTANCE_TYPE_LABEL_KEYS: ReadonlySet<string> = new Set([
  Label.arch,
  Label.os,
  Label.windowsBuild,
  Label.zone,
  Label.region,
  Label.zoneId,
  Label.instanceType,
  Label.capacityType,
  Label.instanceTenancy,
  Label.nitroSandbox,
  Label.capacityReservationInterruptible,
  Label.placementGroupId,
  Label.placementGroupPartition,
  ...Object.values(Label).filter((k) => k.startsWith('karpenter.k8s.aws/instance-')),
]);

/** Keys that come from an offering rather than the instance type itself. */
export const OFFERING_LABEL_KEYS: ReadonlySet<string> = new Set([
  Label.zone,
  Label.capacityType,
  Label.capacityReservationInterruptible,
  Label.placementGroupPartition,
]);
