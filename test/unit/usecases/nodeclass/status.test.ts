import { describe, expect, it } from 'vitest';
import type {
  EC2NodeClass,
  EC2NodeClassStatus,
  NodeClassResolution,
} from '../../../../shared/ports/cloud.ts';
import {
  computeNodeClassStatus,
  isNodeClassStatusCurrent,
  sameNodeClassStatus,
  validateNodeClass,
} from '../../../../shared/usecases/nodeclass/status.ts';
import { DEFAULT_NODE_CLASS } from '../../memory/fixtures.ts';

const T0 = new Date('2026-11-21T10:00:00Z');
const T1 = new Date('2026-11-21T10:05:00Z');

const SUBNETS = [{ id: 'subnet-a', zone: 'us-east-1a' }];
const GROUPS = [{ id: 'sg-1', name: 'nodes' }];
const AMIS = [{ id: 'ami-1', name: 'al2023', requirements: [] }];

const resolved: NodeClassResolution = {
  subnets: { kind: 'resolved', value: SUBNETS },
  securityGroups: { kind: 'resolved', value: GROUPS },
  amis: { kind: 'resolved', value: AMIS },
  instanceProfile: { kind: 'resolved', value: 'KarpenterNodeInstanceProfile' },
};

const condition = (status: EC2NodeClassStatus, type: string) =>
  status.conditions.find((c) => c.type === type);

describe('computeNodeClassStatus', () => {
  it('is Ready with every part resolved, each condition stamped with the generation', () => {
    const { status, retrying } = computeNodeClassStatus(DEFAULT_NODE_CLASS, resolved, T0);
    expect(retrying).toEqual([]);
    expect(status).toMatchObject({
      subnets: SUBNETS,
      securityGroups: GROUPS,
      amis: AMIS,
      instanceProfile: 'KarpenterNodeInstanceProfile',
    });
    expect(status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'SubnetsReady=True',
      'SecurityGroupsReady=True',
      'AMIsReady=True',
      'InstanceProfileReady=True',
      'ValidationSucceeded=True',
      'Ready=True',
    ]);
    for (const c of status.conditions) {
      expect(c.observedGeneration).toBe(1);
      expect(c.lastTransitionTime).toBe('2026-11-21T10:00:00Z');
    }
  });

  it('turns a real answer into a False condition with the reason and clears the part', () => {
    const { status, retrying } = computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      { ...resolved, subnets: { kind: 'failed', reason: 'SubnetsNotFound', message: 'no subnet matches' } },
      T0,
    );
    expect(retrying).toEqual([]);
    expect(status.subnets).toEqual([]);
    expect(condition(status, 'SubnetsReady')).toMatchObject({
      status: 'False',
      reason: 'SubnetsNotFound',
      message: 'no subnet matches',
    });
    expect(condition(status, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'NotReady',
      message: 'SubnetsReady=False: no subnet matches',
    });
  });

  it('keeps the last good part and condition when AWS fails for now', () => {
    const good = computeNodeClassStatus(DEFAULT_NODE_CLASS, resolved, T0).status;
    const { status, retrying } = computeNodeClassStatus(
      { ...DEFAULT_NODE_CLASS, status: good },
      { ...resolved, subnets: { kind: 'retry', message: 'ec2:DescribeSubnets failed with Throttling' } },
      T1,
    );
    expect(retrying).toEqual(['SubnetsReady']);
    expect(status).toEqual(good);
    expect(sameNodeClassStatus(good, status)).toBe(true);
  });

  it('keeps a False answer through a passing fault too: only a real answer changes a condition', () => {
    const notFound = computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      { ...resolved, subnets: { kind: 'failed', reason: 'SubnetsNotFound', message: 'none' } },
      T0,
    ).status;
    const { status } = computeNodeClassStatus(
      { ...DEFAULT_NODE_CLASS, status: notFound },
      { ...resolved, subnets: { kind: 'retry', message: 'timeout' } },
      T1,
    );
    expect(condition(status, 'SubnetsReady')).toMatchObject({ status: 'False', reason: 'SubnetsNotFound' });
  });

  it('says Unknown, not False, for a part AWS has not answered yet on a new class', () => {
    const { status, retrying } = computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      { ...resolved, amis: { kind: 'retry', message: 'ssm:GetParameter failed with ThrottlingException' } },
      T0,
    );
    expect(retrying).toEqual(['AMIsReady']);
    expect(status.amis).toEqual([]);
    expect(condition(status, 'AMIsReady')).toMatchObject({ status: 'Unknown', reason: 'AwaitingResolution' });
    expect(condition(status, 'Ready')?.status).toBe('Unknown');
  });

  it('keeps lastTransitionTime while a status holds and stamps it when it changes', () => {
    const first = computeNodeClassStatus(DEFAULT_NODE_CLASS, resolved, T0).status;
    const second = computeNodeClassStatus(
      { ...DEFAULT_NODE_CLASS, status: first },
      { ...resolved, amis: { kind: 'failed', reason: 'AMINotFound', message: 'gone' } },
      T1,
    ).status;
    expect(condition(second, 'SubnetsReady')).toMatchObject({ lastTransitionTime: '2026-11-21T10:00:00Z' });
    expect(condition(second, 'AMIsReady')).toMatchObject({ lastTransitionTime: '2026-11-21T10:05:00Z' });
    expect(condition(second, 'Ready')).toMatchObject({ lastTransitionTime: '2026-11-21T10:05:00Z' });
  });

  it('fails validation without AWS: restricted tags, two of role and instanceProfile', () => {
    const invalid: EC2NodeClass = {
      ...DEFAULT_NODE_CLASS,
      spec: { ...DEFAULT_NODE_CLASS.spec, role: 'nodes', tags: { 'karpenter.sh/nodepool': 'x' } },
    };
    expect(validateNodeClass(invalid)).toEqual([
      'set exactly one of spec.role and spec.instanceProfile',
      'spec.tags may not set "karpenter.sh/nodepool" (Flotilla sets it); remove it',
    ]);
    const { status } = computeNodeClassStatus(invalid, resolved, T0);
    expect(condition(status, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ValidationFailed',
    });
    expect(condition(status, 'Ready')?.status).toBe('False');
  });

  it('fails validation with the reason the cloud side gave, after any problem of the spec itself', () => {
    const userData = { reason: 'UserDataInvalid', message: 'spec.userData: does not merge' };
    const { status } = computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      { ...resolved, validation: [userData] },
      T0,
    );
    expect(condition(status, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'UserDataInvalid',
      message: 'spec.userData: does not merge',
    });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(status, 'Ready')?.message).toContain('spec.userData: does not merge');
    const both = computeNodeClassStatus(
      { ...DEFAULT_NODE_CLASS, spec: { ...DEFAULT_NODE_CLASS.spec, role: 'nodes' } },
      { ...resolved, validation: [userData] },
      T0,
    ).status;
    expect(condition(both, 'ValidationSucceeded')).toMatchObject({
      reason: 'ValidationFailed',
      message: 'set exactly one of spec.role and spec.instanceProfile; spec.userData: does not merge',
    });
  });

  it('adds a limitation as its own False condition that leaves the class Ready', () => {
    const limitation = { type: 'PricingExact', reason: 'WindowsLicenseNotPriced', message: 'Linux prices' };
    const { status } = computeNodeClassStatus(
      DEFAULT_NODE_CLASS,
      { ...resolved, limitations: [limitation] },
      T0,
    );
    expect(condition(status, 'Ready')?.status).toBe('True');
    expect(condition(status, 'PricingExact')).toMatchObject({
      status: 'False',
      reason: 'WindowsLicenseNotPriced',
      message: 'Linux prices',
      observedGeneration: 1,
    });
  });
});

describe('isNodeClassStatusCurrent', () => {
  it('is false without a status or with one computed for an older generation', () => {
    expect(isNodeClassStatusCurrent(DEFAULT_NODE_CLASS)).toBe(false);
    const status = computeNodeClassStatus(DEFAULT_NODE_CLASS, resolved, T0).status;
    expect(isNodeClassStatusCurrent({ ...DEFAULT_NODE_CLASS, status })).toBe(true);
    expect(isNodeClassStatusCurrent({ ...DEFAULT_NODE_CLASS, generation: 2, status })).toBe(false);
  });
});
