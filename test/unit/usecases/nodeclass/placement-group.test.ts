import { describe, expect, it } from 'vitest';
import {
  PLACEMENT_GROUP_ANNOTATION,
  parseEC2NodeClass,
  placementGroupAnnotation,
} from '../../../../shared/apis/index.ts';
import {
  type EC2NodeClass,
  isNodeClassReady,
  type NodeClassResolution,
  nodeClassNotReady,
  type PlacementGroupStatus,
} from '../../../../shared/ports/cloud.ts';
import {
  computeNodeClassStatus,
  isNodeClassStatusCurrent,
  sameNodeClassStatus,
} from '../../../../shared/usecases/nodeclass/status.ts';
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

describe('the resolved group as the API server keeps it (an annotation, not a status field)', () => {
  const readyStatus = {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: '',
        lastTransitionTime: '',
        observedGeneration: 1,
      },
    ],
  };
  const object = (spec: Record<string, unknown>, annotations?: Record<string, string>, status?: object) => ({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'gpu', generation: 1, ...(annotations === undefined ? {} : { annotations }) },
    spec: {
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: [{ tags: { a: 'b' } }],
      securityGroupSelectorTerms: [{ tags: { a: 'b' } }],
      ...spec,
    },
    status: { ...readyStatus, ...status },
  });
  const selector = { placementGroupSelector: { name: 'train' } };

  it('reads the group from the annotation the status writer makes', () => {
    const value = placementGroupAnnotation({
      subnets: [],
      securityGroups: [],
      amis: [],
      conditions: [],
      placementGroups: [GROUP],
    });
    const parsed = parseEC2NodeClass(object(selector, { [PLACEMENT_GROUP_ANNOTATION]: value ?? '' }));
    expect(parsed.status?.placementGroups).toEqual([GROUP]);
    expect(isNodeClassReady(parsed)).toBe(true);
    expect(isNodeClassStatusCurrent(parsed)).toBe(true);
  });

  it('reads no group from a status field, a malformed annotation, or a class without a selector', () => {
    const field = parseEC2NodeClass(object(selector, undefined, { placementGroups: [GROUP] }));
    const malformed = parseEC2NodeClass(object(selector, { [PLACEMENT_GROUP_ANNOTATION]: '{"id":' }));
    const wrongShape = parseEC2NodeClass(object(selector, { [PLACEMENT_GROUP_ANNOTATION]: '{"name":"x"}' }));
    const noSelector = parseEC2NodeClass(object({}, { [PLACEMENT_GROUP_ANNOTATION]: JSON.stringify(GROUP) }));
    for (const c of [field, malformed, wrongShape, noSelector])
      expect(c.status?.placementGroups).toBeUndefined();
    expect(noSelector.status?.conditions).toEqual(readyStatus.conditions);
  });

  it('keeps a Ready class that selects a group from launching until the group is at hand, and resolves it again', () => {
    // As Karpenter leaves a class it resolved: Ready and PlacementGroupReady True, no group on record.
    const taken = parseEC2NodeClass(object(selector));
    expect(nodeClassNotReady(taken)).toBe('its placement group is not resolved yet');
    expect(isNodeClassReady(taken)).toBe(false);
    expect(isNodeClassStatusCurrent(taken)).toBe(false);
  });

  it('writes null (removing the annotation) when no group is resolved', () => {
    expect(
      placementGroupAnnotation({ subnets: [], securityGroups: [], amis: [], conditions: [] }),
    ).toBeNull();
  });
});
