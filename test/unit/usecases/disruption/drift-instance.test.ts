import { describe, expect, it } from 'vitest';
import type { InstanceType } from '../../../../shared/core/index.ts';
import type { CloudInstance, EC2NodeClass } from '../../../../shared/ports/cloud.ts';
import { placementGroupDrifted } from '../../../../shared/ports/cloud-drift.ts';
import {
  type ConditionInput,
  driftOf,
  INSTANCE_TYPE_NOT_FOUND_AFTER_MS,
  instanceTypeNotFound,
} from '../../../../shared/usecases/disruption/conditions.ts';
import { nodeClass } from '../provisioning/builders.ts';
import { MINUTE, nodeClaim, T0 } from './builders.ts';

// Drift from what the instance runs on beyond AMI, subnet and security groups: its placement group
// (PlacementGroupDrift) and its instance type or offering no longer offered (InstanceTypeNotFound).

const GROUP = { id: 'pg-0abc', name: 'train', state: 'available', strategy: 'cluster' };
const placed: EC2NodeClass = {
  ...nodeClass,
  spec: { ...nodeClass.spec, placementGroupSelector: { name: 'train' } },
  status: {
    ...(nodeClass.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] }),
    placementGroups: [GROUP],
  },
};

/** A running instance of the claim (only what the placement check and the claim's drift read). */
function instance(o: Partial<CloudInstance> = {}): CloudInstance {
  const where = { zone: 'us-east-1a', providerId: 'aws:///us-east-1a/i-c' };
  return {
    instanceId: 'i-c',
    instanceType: 'm5.large',
    capacityType: 'on-demand',
    state: 'running',
    tags: {},
    ...where,
    ...o,
  };
}

describe('placementGroupDrifted', () => {
  it.each<[string, EC2NodeClass, CloudInstance, boolean]>([
    [
      'in the class group (by name, as EC2 gives it)',
      placed,
      instance({ placementGroup: { name: 'train' } }),
      false,
    ],
    ['in the class group (by id)', placed, instance({ placementGroup: { id: 'pg-0abc', name: 'x' } }), false],
    ['in another group', placed, instance({ placementGroup: { name: 'old' } }), true],
    ['in no group while the class selects one', placed, instance(), true],
    [
      'in a group while the class selects none',
      nodeClass,
      instance({ placementGroup: { name: 'train' } }),
      true,
    ],
    ['in no group, none selected', nodeClass, instance(), false],
    [
      'with a selector not resolved yet (nothing judged)',
      {
        ...placed,
        status: {
          ...(placed.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] }),
          placementGroups: [],
        },
      },
      instance(),
      false,
    ],
  ])('an instance %s', (_, cls, inst, drifted) => {
    expect(placementGroupDrifted(inst, cls)).toBe(drifted);
  });

  it('is the drift reason a launched NodeClaim gets, with both groups named', () => {
    const claim = nodeClaim('c', { imageId: 'ami-1' });
    expect(
      driftOf({
        claim,
        node: undefined,
        pool: undefined,
        nodeClass: placed,
        instance: instance(),
        nowMs: T0,
      }),
    ).toEqual({
      reason: 'PlacementGroupDrift',
      message: 'the instance runs in placement group (none), the EC2NodeClass selects train (pg-0abc)',
    });
  });
});

function type(name: string, offerings: InstanceType['offerings']): InstanceType {
  return {
    name,
    labels: {},
    capacity: {},
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings,
  };
}

const LABELS = {
  'node.kubernetes.io/instance-type': 'm5.large',
  'topology.kubernetes.io/zone': 'us-east-1a',
  'karpenter.sh/capacity-type': 'spot',
};
const offering = (zone: string, capacityType: 'spot' | 'on-demand') => ({
  zone,
  capacityType,
  priceUsdPerHour: 0.05,
  available: false,
});

function input(instanceTypes: readonly InstanceType[] | undefined, ageMs: number): ConditionInput {
  return {
    claim: nodeClaim('c', { labels: LABELS, createdAtMs: T0 }),
    node: undefined,
    pool: undefined,
    nodeClass,
    instance: undefined,
    ...(instanceTypes === undefined ? {} : { instanceTypes }),
    nowMs: T0 + ageMs,
  };
}

describe('instanceTypeNotFound', () => {
  const HOUR = INSTANCE_TYPE_NOT_FOUND_AFTER_MS;

  it('keeps a claim whose type still has an offering in its zone and capacity type, available or not', () => {
    expect(
      instanceTypeNotFound(input([type('m5.large', [offering('us-east-1a', 'spot')])], 2 * HOUR)),
    ).toBeUndefined();
  });

  it('drifts a claim whose type is gone, or has no offering in its zone and capacity type any more', () => {
    expect(instanceTypeNotFound(input([type('m6i.large', [offering('us-east-1a', 'spot')])], HOUR))).toEqual({
      reason: 'InstanceTypeNotFound',
      message: 'instance type m5.large is no longer offered for the EC2NodeClass',
    });
    expect(
      instanceTypeNotFound(
        input(
          [type('m5.large', [offering('us-east-1b', 'spot'), offering('us-east-1a', 'on-demand')])],
          HOUR,
        ),
      ),
    ).toEqual({
      reason: 'InstanceTypeNotFound',
      message: 'instance type m5.large is no longer offered as spot in us-east-1a for the EC2NodeClass',
    });
  });

  it('judges nothing in the first hour, or without the class instance types', () => {
    expect(instanceTypeNotFound(input([], HOUR - MINUTE))).toBeUndefined();
    expect(instanceTypeNotFound(input(undefined, 2 * HOUR))).toBeUndefined();
  });

  it('comes after the NodePool checks and before the cloud ones in driftOf', () => {
    expect(driftOf({ ...input([], 2 * HOUR), instance: instance({ subnetId: 'subnet-gone' }) })?.reason).toBe(
      'InstanceTypeNotFound',
    );
  });
});
