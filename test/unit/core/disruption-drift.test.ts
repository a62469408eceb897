import { describe, expect, it } from 'vitest';
import { hashDrift, type NodeSelectorRequirement, requirementsDrift } from '../../../shared/core/index.ts';

describe('hashDrift', () => {
  it.each([
    ['same version, different hash', { hash: '1', version: 'v1' }, { hash: '2', version: 'v1' }, true],
    ['same version, same hash', { hash: '1', version: 'v1' }, { hash: '1', version: 'v1' }, false],
    ['different versions', { hash: '1', version: 'v3' }, { hash: '2', version: 'flotilla-v1' }, false],
    ['claim without a version', { hash: '1', version: undefined }, { hash: '2', version: 'v1' }, false],
    ['neither has a version', { hash: '1', version: undefined }, { hash: '2', version: undefined }, false],
    ['claim without a hash', { hash: undefined, version: 'v1' }, { hash: '2', version: 'v1' }, false],
    ['template without a hash', { hash: '1', version: 'v1' }, { hash: undefined, version: 'v1' }, false],
    [
      'no hashes at all',
      { hash: undefined, version: undefined },
      { hash: undefined, version: undefined },
      false,
    ],
  ] as const)('%s: drifted %s', (_, claim, current, drifted) => {
    expect(hashDrift('NodePoolDrifted', claim, current) !== undefined).toBe(drifted);
  });

  it.each([
    ['NodePoolDrifted', 'the NodePool template changed since the NodeClaim was made (hash 1 → 2)'],
    ['NodeClassDrift', 'the EC2NodeClass changed since the NodeClaim was made (hash 1 → 2)'],
  ] as const)('names %s and both hashes', (reason, message) => {
    expect(hashDrift(reason, { hash: '1', version: 'v1' }, { hash: '2', version: 'v1' })).toEqual({
      reason,
      message,
    });
  });
});

describe('requirementsDrift', () => {
  const labels = {
    'topology.kubernetes.io/zone': 'us-east-1a',
    'karpenter.sh/capacity-type': 'spot',
    'karpenter.k8s.aws/instance-cpu': '4',
    'example.com/team': 'web',
  };
  const req = (key: string, operator: string, values?: string[]): NodeSelectorRequirement =>
    ({ key, operator, ...(values === undefined ? {} : { values }) }) as NodeSelectorRequirement;

  it.each([
    [
      'In with the label value',
      req('topology.kubernetes.io/zone', 'In', ['us-east-1a', 'us-east-1b']),
      false,
    ],
    ['In without the label value', req('topology.kubernetes.io/zone', 'In', ['us-east-1b']), true],
    ['NotIn with the label value', req('karpenter.sh/capacity-type', 'NotIn', ['spot']), true],
    ['NotIn without the label value', req('karpenter.sh/capacity-type', 'NotIn', ['on-demand']), false],
    ['Exists on a label present', req('example.com/team', 'Exists'), false],
    ['DoesNotExist on a label present', req('example.com/team', 'DoesNotExist'), true],
    ['Gt below the value', req('karpenter.k8s.aws/instance-cpu', 'Gt', ['2']), false],
    ['Gt at the value', req('karpenter.k8s.aws/instance-cpu', 'Gt', ['4']), true],
    ['Lt above the value', req('karpenter.k8s.aws/instance-cpu', 'Lt', ['8']), false],
    ['Lt at the value', req('karpenter.k8s.aws/instance-cpu', 'Lt', ['4']), true],
    ['Gt on a label that is not a number', req('example.com/team', 'Gt', ['1']), true],
    // Keys the NodeClaim has no label for are not judged.
    ['In on a missing label', req('example.com/gpu', 'In', ['yes']), false],
    ['Exists on a missing label', req('example.com/gpu', 'Exists'), false],
    ['Gt on a missing label', req('example.com/gpu', 'Gt', ['1']), false],
    // Malformed requirements are skipped.
    ['Gt with a value that is not an integer', req('karpenter.k8s.aws/instance-cpu', 'Gt', ['many']), false],
    ['Lt with two values', req('karpenter.k8s.aws/instance-cpu', 'Lt', ['1', '2']), false],
    ['In without values', req('topology.kubernetes.io/zone', 'In', []), false],
    ['Exists with values', req('example.com/team', 'Exists', ['db']), false],
    ['an unknown operator', req('topology.kubernetes.io/zone', 'Near', ['us-east-1b']), false],
  ])('%s: drifted %s', (_, requirement, drifted) => {
    const drift = requirementsDrift([requirement], labels);
    expect(drift !== undefined).toBe(drifted);
    if (drift !== undefined) {
      expect(drift.reason).toBe('RequirementsDrifted');
      expect(drift.message).toMatch(
        new RegExp(
          `^label ${requirement.key}=${labels[requirement.key as keyof typeof labels]} no longer satisfies the NodePool requirement `,
        ),
      );
    }
  });

  it('no requirements, no drift', () => {
    expect(requirementsDrift([], labels)).toBeUndefined();
  });

  it('skips a malformed requirement and still judges the ones after it', () => {
    const drift = requirementsDrift(
      [
        req('karpenter.k8s.aws/instance-cpu', 'Gt', ['many']),
        req('example.com/gpu', 'In', ['yes']),
        req('karpenter.sh/capacity-type', 'In', ['on-demand']),
        req('topology.kubernetes.io/zone', 'In', ['us-east-1c']),
      ],
      labels,
    );
    expect(drift?.message).toMatch(/^label karpenter\.sh\/capacity-type=spot no longer satisfies/);
  });
});
