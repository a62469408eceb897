import { describe, expect, it } from 'vitest';
import { standaloneInstanceTypes } from '../../../../shared/usecases/provisioning/standalone.ts';
import { instanceType } from './builders.ts';

// The instance types a standalone NodeClaim may launch as: those its requirements admit on the
// keys an instance type decides, big enough for its requests. Zone and capacity type are left to
// the launch, which picks among the offerings; a label only the node has does not rule a type out.

const types = [
  instanceType('m5.large', 2, 0.096),
  instanceType('m5.xlarge', 4, 0.192),
  instanceType('c5.xlarge', 4, 0.17),
  instanceType('m5.2xlarge', 8, 0.384),
];

const names = (claim: Parameters<typeof standaloneInstanceTypes>[0]) =>
  standaloneInstanceTypes(claim, types).map((t) => t.name);

describe('standaloneInstanceTypes', () => {
  it('keeps the types its requirements admit that hold its requests', () => {
    expect(
      names({
        name: 'by-hand',
        requirements: [
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1b'] },
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
          { key: 'team', operator: 'In', values: ['batch'] },
        ],
        requests: { cpu: 3000 },
      }),
    ).toEqual(['m5.xlarge', 'm5.2xlarge']);
  });

  it('rules out a type whose label a requirement does not admit, or that lacks the label', () => {
    expect(
      names({
        name: 'by-hand',
        requirements: [
          { key: 'node.kubernetes.io/instance-type', operator: 'NotIn', values: ['m5.large'] },
          { key: 'karpenter.k8s.aws/instance-generation', operator: 'Exists' },
        ],
        requests: {},
      }),
    ).toEqual([]);
    expect(
      names({
        name: 'by-hand',
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'NotIn', values: ['m5.large'] }],
        requests: { memory: 20 * 1024 ** 3 },
      }),
    ).toEqual(['m5.2xlarge']);
  });
});
