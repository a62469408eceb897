import { describe, expect, it } from 'vitest';
import type { CloudInstance, EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { amiDrifted, cloudDrift } from '../../../shared/ports/cloud-drift.ts';
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

  describe('AMIs mapped to the instance type', () => {
    const gpuCount = 'karpenter.k8s.aws/instance-gpu-count';
    const amis = [
      {
        id: 'ami-standard-new',
        requirements: [
          { key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] },
          { key: gpuCount, operator: 'DoesNotExist' as const },
        ],
      },
      {
        id: 'ami-gpu',
        requirements: [
          { key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] },
          { key: gpuCount, operator: 'Exists' as const },
        ],
      },
    ];
    const standard = { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': 'm5.large' };
    const gpu = { ...standard, 'node.kubernetes.io/instance-type': 'g5.xlarge', [gpuCount]: '1' };

    it('drifts a standard node running the image the class keeps for GPU types', () => {
      expect(amiDrifted('ami-gpu', amis, standard)).toBe(true);
      expect(amiDrifted('ami-standard-new', amis, standard)).toBe(false);
    });

    it('keeps a GPU node on the GPU image and drifts it off the standard one', () => {
      expect(amiDrifted('ami-gpu', amis, gpu)).toBe(false);
      expect(amiDrifted('ami-standard-new', amis, gpu)).toBe(true);
    });

    it('drifts a node no AMI serves any more, and judges nothing without AMIs', () => {
      expect(amiDrifted('ami-gpu', amis, { ...gpu, 'kubernetes.io/arch': 'arm64' })).toBe(true);
      expect(amiDrifted('ami-gpu', [], standard)).toBe(false);
    });

    it('without labels, any of the AMIs will do', () => {
      expect(amiDrifted('ami-gpu', amis)).toBe(false);
      expect(amiDrifted('ami-old', amis)).toBe(true);
    });

    it('counts an AMI whose requirements cannot be read for every node', () => {
      const unreadable = [
        { id: 'ami-x', requirements: [{ key: 'bad key!', operator: 'In' as const, values: [] }] },
      ];
      expect(amiDrifted('ami-x', unreadable, standard)).toBe(false);
    });
  });
});
