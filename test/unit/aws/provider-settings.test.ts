import { describe, expect, it } from 'vitest';
import { toInstanceTypes } from '../../../shared/adapters/aws/instance-types.ts';
import type { ProviderSettings } from '../../../shared/adapters/class-instance-types.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import { defaultKubeReservedMemoryBytes, type InstanceType } from '../../../shared/core/index.ts';
import type { CachedInstanceType, EC2NodeClass } from '../../../shared/ports/cloud.ts';

// Karpenter's AWS settings as the EC2 adapter shapes instance types with them: the VM memory
// overhead taken off memory capacity, reserved ENIs taken out of the ENI-limited max pods (and so
// of kube-reserved memory), and the ReservedCapacity gate deciding whether a class's capacity
// reservations become offerings at all.

const MiB = 1024 ** 2;

const nodeClass: EC2NodeClass = {
  ...parseEC2NodeClass({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default', generation: 1 },
    spec: {
      subnetSelectorTerms: [{ tags: { discovery: 'c' } }],
      securityGroupSelectorTerms: [{ tags: { discovery: 'c' } }],
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      role: 'nodes',
      capacityReservationSelectorTerms: [{ id: 'cr-1' }],
    },
  }),
  status: {
    subnets: [{ id: 'subnet-a', zone: 'us-east-1a' }],
    securityGroups: [{ id: 'sg-1' }],
    amis: [{ id: 'ami-1', requirements: [] }],
    capacityReservations: [
      {
        id: 'cr-1',
        availabilityZone: 'us-east-1a',
        instanceType: 'm5.large',
        instanceMatchCriteria: 'targeted',
        ownerID: '123456789012',
        reservationType: 'default',
        state: 'active',
      },
    ],
    conditions: [],
  },
};

// m5.large as EC2 describes it: 2 vCPU, 8 GiB, 3 ENIs of 10 IPv4 addresses each.
const m5Large: CachedInstanceType = {
  name: 'm5.large',
  arch: 'amd64',
  vcpu: 2,
  memoryMiB: 8192,
  labels: { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': 'm5.large' },
  gpu: { count: 0 },
  accelerator: { count: 0 },
  enis: 3,
  ipv4PerEni: 10,
  branchEnis: 0,
  efaCount: 0,
  bareMetal: false,
  localNvmeGiB: 0,
  offerings: [{ zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 0.096 }],
};

function shaped(provider?: ProviderSettings): InstanceType {
  const [type] = toInstanceTypes([m5Large], {
    region: 'us-east-1',
    nodeClass,
    family: 'AL2023',
    unavailable: new Set(),
    reservationCapacity: new Map([['cr-1', 2]]),
    ...(provider === undefined ? {} : { provider }),
  });
  if (type === undefined) throw new Error('m5.large not offered');
  return type;
}

describe('instance types under Karpenter`s AWS settings', () => {
  it('take the VM memory overhead off memory capacity: 7.5% by default, the setting otherwise', () => {
    expect(shaped().capacity['memory']).toBe((8192 - Math.ceil(8192 * 0.075)) * MiB);
    expect(shaped({ vmMemoryOverheadPercent: 0.075 }).capacity['memory']).toBe(shaped().capacity['memory']);
    expect(shaped({ vmMemoryOverheadPercent: 0.1 }).capacity['memory']).toBe((8192 - 820) * MiB);
    expect(shaped({ vmMemoryOverheadPercent: 0 }).capacity['memory']).toBe(8192 * MiB);
  });

  it.each([
    [0, 29],
    [1, 20],
    [2, 11],
    [3, 0],
    [5, 0],
  ])('with %i reserved ENIs allow %i pods, and reserve kube memory for that many', (reservedENIs, pods) => {
    const type = shaped({ reservedENIs });
    expect(type.capacity['pods']).toBe(pods);
    expect(type.overhead.kubeReserved['memory']).toBe(defaultKubeReservedMemoryBytes(pods));
  });

  it('offer a class`s capacity reservations with the ReservedCapacity gate on (its default), none with it off', () => {
    const reserved = (type: InstanceType) => type.offerings.filter((o) => o.capacityType === 'reserved');
    expect(reserved(shaped())).toEqual([
      expect.objectContaining({ reservationId: 'cr-1', available: true, reservationCapacity: 2 }),
    ]);
    expect(reserved(shaped({ reservedCapacity: true }))).toHaveLength(1);
    expect(reserved(shaped({ reservedCapacity: false }))).toEqual([]);
    expect(shaped({ reservedCapacity: false }).offerings.map((o) => o.capacityType)).toEqual(['on-demand']);
  });
});
