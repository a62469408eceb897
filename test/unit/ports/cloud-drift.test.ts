import { describe, expect, it } from 'vitest';
import type { CloudInstance, EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { cloudDrift } from '../../../shared/ports/cloud-drift.ts';
import { DEFAULT_NODE_CLASS } from '../memory/fixtures.ts';

const nodeClass: EC2NodeClass = {
  ...DEFAULT_NODE_CLASS,
  status: {
    subnets: [
      { id: 'subnet-a', zone: 'us-east-1a' },
      { id: 'subnet-b', zone: 'us-east-1b' },
    ],
    securityGroups: [{ id: 'sg-nodes' }, { id: 'sg-extra' }],
    amis: [
      { id: 'ami-amd', requirements: [] },
      { id: 'ami-arm', requirements: [] },
    ],
    conditions: [],
  },
};

const instance: CloudInstance = {
  instanceId: 'i-0123456789abcdef0',
  providerId: 'aws:///us-east-1a/i-0123456789abcdef0',
  instanceType: 'm5.large',
  zone: 'us-east-1a',
  capacityType: 'on-demand',
  state: 'running',
  imageId: 'ami-amd',
  subnetId: 'subnet-a',
  securityGroupIds: ['sg-extra', 'sg-nodes'],
  tags: {},
};

describe('cloud drift', () => {
  it('finds none while the class still resolves to what the instance runs on', () => {
    expect(cloudDrift(instance, nodeClass)).toBeUndefined();
  });

  it.each([
    ['AMIDrift', { imageId: 'ami-older' }],
    ['SubnetDrift', { subnetId: 'subnet-gone' }],
    ['SecurityGroupDrift', { securityGroupIds: ['sg-nodes'] }],
    ['SecurityGroupDrift', { securityGroupIds: ['sg-nodes', 'sg-extra', 'sg-added-by-hand'] }],
  ] as const)('reports %s for %o', (reason, change) => {
    expect(cloudDrift({ ...instance, ...change }, nodeClass)).toBe(reason);
  });

  it('names the AMI first when several parts drifted, as Karpenter checks them', () => {
    expect(cloudDrift({ ...instance, imageId: 'ami-older', subnetId: 'subnet-gone' }, nodeClass)).toBe(
      'AMIDrift',
    );
  });

  it('does not judge what it cannot see: a class without status, an instance without groups', () => {
    const { status: _status, ...unresolved } = nodeClass;
    expect(cloudDrift({ ...instance, imageId: 'ami-older' }, unresolved)).toBeUndefined();
    expect(cloudDrift({ ...instance, securityGroupIds: [] }, nodeClass)).toBeUndefined();
  });
});
