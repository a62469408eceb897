import { describe, expect, it } from 'vitest';
import type {
  EC2NodeClass,
  NodeClassResolution,
  PlacementGroupStatus,
} from '../../../../shared/ports/cloud.ts';
import { computeNodeClassStatus, sameNodeClassStatus } from '../../../../shared/usecases/nodeclass/status.ts';
import { DEFAULT_NODE_CLASS } from '../../memory/fixtures.ts';

const T0 = new Date('2026-11-21T10:00:00Z');
const GROUP: PlacementGroupStatus = { id: 'pg-0abc', name: 'train', state: 'available', strategy: 'cluster' };
const WITH_SELECTOR: EC2NodeClass = {
  ...DEFAULT_NODE_CLASS,
  spec: { ...DEFAULT_NODE_CLASS.spec, placementGroupSelector: { name: 'train' } },
};
const resolved: NodeClassResolution = {
  subnets: { kind: 'resolved', value: [{ id: 'subnet-a', zone: 'us-east-1a' }] },
  securityGroups: { kind: 'resolved', value: [{ id: 'sg-1' }] },
  amis: { kind: 'resolved', value: [{ id: 'ami-1', requirements: [] }] },
  instanceProfile: { kind: 'resolved', value: 'profile' },
};

const types = (nodeClass: EC2NodeClass, resolution: NodeClassResolution) =>
  computeNodeClassStatus(nodeClass, resolution, T0).status.conditions.map((c) => `${c.type}=${c.status}`);

describe('PlacementGroupReady', () => {
  it('is absent without a selector, as is status.placementGroups', () => {
    const { status } = computeNodeClassStatus(DEFAULT_NODE_CLASS, resolved, T0);
    expect(status.conditions.map((c) => c.type)).not.toContain('PlacementGroupReady');
    expect(status.placementGroups).toBeUndefined();
  });

  it('is True with the resolved group in status.placementGroups, and counts towards Ready', () => {
    const { status } = computeNodeClassStatus(
      WITH_SELECTOR,
      { ...resolved, placementGroup: { kind: 'resolved', value: GROUP } },
      T0,
    );
    expect(status.placementGroups).toEqual([GROUP]);
    expect(types(WITH_SELECTOR, { ...resolved, placementGroup: { kind: 'resolved', value: GROUP } })).toEqual(
      [
        'SubnetsReady=True',
        'SecurityGroupsReady=True',
        'AMIsReady=True',
        'InstanceProfileReady=True',
        'ValidationSucceeded=True',
        'PlacementGroupReady=True',
        'Ready=True',
      ],
    );
  });

  it('is False with the reason when the group is missing, and the class is not Ready', () => {
    const { status } = computeNodeClassStatus(
      WITH_SELECTOR,
      {
        ...resolved,
        placementGroup: {
          kind: 'failed',
          reason: 'PlacementGroupNotFound',
          message: 'placement group "train" does not exist',
        },
      },
      T0,
    );
    const condition = status.conditions.find((c) => c.type === 'PlacementGroupReady');
    expect(condition).toMatchObject({ status: 'False', reason: 'PlacementGroupNotFound' });
    expect(status.conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      message: 'PlacementGroupReady=False: placement group "train" does not exist',
    });
    expect(status.placementGroups).toBeUndefined();
  });

  it('keeps the group it had while AWS cannot answer for now', () => {
    const before = computeNodeClassStatus(
      WITH_SELECTOR,
      { ...resolved, placementGroup: { kind: 'resolved', value: GROUP } },
      T0,
    ).status;
    const { status, retrying } = computeNodeClassStatus(
      { ...WITH_SELECTOR, status: before },
      { ...resolved, placementGroup: { kind: 'retry', message: 'throttled' } },
      T0,
    );
    expect(retrying).toEqual(['PlacementGroupReady']);
    expect(status.placementGroups).toEqual([GROUP]);
    expect(sameNodeClassStatus(before, status)).toBe(true);
  });

  it('goes with the selector: the condition and the group leave the status', () => {
    const before = computeNodeClassStatus(
      WITH_SELECTOR,
      { ...resolved, placementGroup: { kind: 'resolved', value: GROUP } },
      T0,
    ).status;
    const { status } = computeNodeClassStatus({ ...DEFAULT_NODE_CLASS, status: before }, resolved, T0);
    expect(status.placementGroups).toBeUndefined();
    expect(status.conditions.map((c) => c.type)).not.toContain('PlacementGroupReady');
    expect(sameNodeClassStatus(before, status)).toBe(false);
  });
});
