import { describe, expect, it } from 'vitest';
import { selectCandidates } from '../../../shared/adapters/launch-plan.ts';
import { type InstanceType, Label, solve } from '../../../shared/core/index.ts';
import {
  type EC2NodeClass,
  isBackedOff,
  type LaunchRequest,
  offeringKeyString,
} from '../../../shared/ports/cloud.ts';
import { launchedLabels } from '../../../shared/usecases/state/new-nodeclaim.ts';
import { nodeClass as baseClass } from '../usecases/provisioning/builders.ts';
import { fakeInstanceType, pods, solveInput } from './builders.ts';

// A partition placement group: every offering once per partition (Karpenter's expansion), so a
// pod can require a partition or spread over them, the NodeClaim carries the partition it pins,
// and back-offs are kept per group and partition.

const GROUP = 'pg-0partition00001';

/** The type as an EC2NodeClass with a three-partition group makes it. */
function partitioned(type: InstanceType, partitions = 3): InstanceType {
  return {
    ...type,
    labels: { ...type.labels, [Label.placementGroupId]: GROUP },
    offerings: type.offerings.flatMap((o) =>
      Array.from({ length: partitions }, (_, i) => ({ ...o, partition: String(i + 1) })),
    ),
  };
}

const m5 = partitioned(fakeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096 }));
const reqValues = (claim: { requirements: readonly { key: string; values?: readonly string[] }[] }) =>
  claim.requirements.find((r) => r.key === Label.placementGroupPartition)?.values;

describe('scheduling onto a partition placement group', () => {
  it('pins the partition a pod requires, as a requirement and a label of its NodeClaim', () => {
    const result = solve(
      solveInput({
        pods: pods(1, () => ({
          cpu: '500m',
          nodeSelector: { [Label.placementGroupPartition]: '2' },
        })),
        types: [m5],
      }),
    );
    expect(result.unschedulable).toEqual([]);
    const [claim] = result.nodeClaims;
    expect(reqValues(claim ?? { requirements: [] })).toEqual(['2']);
    expect(claim?.labels[Label.placementGroupPartition]).toBe('2');
  });

  it('finds no room for a partition the group does not have', () => {
    const result = solve(
      solveInput({
        pods: pods(1, () => ({ cpu: '500m', nodeSelector: { [Label.placementGroupPartition]: '7' } })),
        types: [m5],
      }),
    );
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toHaveLength(1);
  });

  it('spreads pods over the partitions as topology domains', () => {
    const spread = [
      {
        maxSkew: 1,
        topologyKey: Label.placementGroupPartition,
        whenUnsatisfiable: 'DoNotSchedule' as const,
        labelSelector: { matchLabels: { app: 'cassandra' } },
      },
    ];
    const result = solve(
      solveInput({
        pods: pods(3, () => ({ cpu: '1500m', labels: { app: 'cassandra' }, spread })),
        types: [m5],
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => c.labels[Label.placementGroupPartition]).sort()).toEqual([
      '1',
      '2',
      '3',
    ]);
  });
});

describe('launching into a partition placement group', () => {
  // The shared provisioning class, in the zone of the fake type's offerings, with the group.
  const nodeClass: EC2NodeClass = {
    ...baseClass,
    status: {
      ...(baseClass.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] }),
      subnets: [{ id: 'subnet-a', zone: m5.offerings[0]?.zone ?? '' }],
      placementGroups: [
        { id: GROUP, name: 'c', state: 'available', strategy: 'partition', partitionCount: 3 },
      ],
    },
  };
  const request = (partitions: readonly string[]): LaunchRequest => ({
    nodeClaimName: 'claim',
    nodePoolName: 'default',
    nodeClass,
    instanceTypes: [m5],
    requirements: [{ key: Label.placementGroupPartition, operator: 'In', values: [...partitions] }],
    labels: {},
    taints: [],
    startupTaints: [],
  });
  const zone = m5.offerings[0]?.zone ?? '';

  it('offers each zone once: the pinned partition, or none named when EC2 may choose', () => {
    const pinned = selectCandidates(request(['3']), new Set(), new Map());
    expect(pinned?.candidates[0]?.offerings.map((o) => [o.zone, o.capacityType, o.partition])).toEqual([
      [zone, 'on-demand', '3'],
    ]);
    const any = selectCandidates(request(['1', '2', '3']), new Set(), new Map());
    expect(any?.candidates[0]?.offerings.map((o) => o.partition)).toEqual([undefined]);
  });

  it('backs off per group and partition, and a group-wide back-off covers every partition', () => {
    const key = { instanceType: 'm5.large', zone, capacityType: 'on-demand' as const };
    const inPartition = offeringKeyString({ ...key, placementGroupId: GROUP, partition: '3' });
    expect(inPartition).toBe(`on-demand:m5.large:${zone}:${GROUP}:3`);
    // Partition 3 backed off: a claim pinned to it has nothing left, another partition does.
    expect(selectCandidates(request(['3']), new Set([inPartition]), new Map())).toBeUndefined();
    expect(selectCandidates(request(['2']), new Set([inPartition]), new Map())?.candidates).toHaveLength(1);
    const groupWide = new Set([offeringKeyString({ ...key, placementGroupId: GROUP })]);
    expect(isBackedOff(groupWide, { ...key, placementGroupId: GROUP, partition: '2' })).toBe(true);
    expect(isBackedOff(groupWide, key)).toBe(false);
  });

  it('labels the NodeClaim with the partition EC2 put the instance in', () => {
    const patch = launchedLabels(
      {
        instanceId: 'i-1',
        providerId: `aws:///${zone}/i-1`,
        instanceType: 'm5.large',
        zone,
        capacityType: 'on-demand',
        state: 'running',
        placementGroup: { id: GROUP, partition: '2' },
        tags: {},
      },
      m5,
      {},
    );
    expect(patch.labels?.[Label.placementGroupPartition]).toBe('2');
    expect(patch.labels?.[Label.placementGroupId]).toBe(GROUP);
  });
});
