import { describe, expect, it } from 'vitest';
import {
  firstUntolerated,
  isEphemeralTaint,
  type Taint,
  type Toleration,
  tolerates,
} from '../../../shared/core/index.ts';

const gpu: Taint = { key: 'team', value: 'gpu', effect: 'NoSchedule' };

describe('tolerations', () => {
  it.each<[string, Toleration, Taint, boolean]>([
    ['Equal with the same value', { key: 'team', operator: 'Equal', value: 'gpu' }, gpu, true],
    ['Equal is the default operator', { key: 'team', value: 'gpu' }, gpu, true],
    ['Equal with another value', { key: 'team', value: 'cpu' }, gpu, false],
    ['Exists on the key', { key: 'team', operator: 'Exists' }, gpu, true],
    ['empty key with Exists tolerates everything', { operator: 'Exists' }, gpu, true],
    ['empty key without Exists tolerates nothing', { value: 'gpu' }, gpu, false],
    ['effect must match when set', { key: 'team', operator: 'Exists', effect: 'NoExecute' }, gpu, false],
    ['effect matches', { key: 'team', operator: 'Exists', effect: 'NoSchedule' }, gpu, true],
    ['other key', { key: 'other', operator: 'Exists' }, gpu, false],
  ])('%s', (_name, toleration, taint, expected) => {
    expect(tolerates(toleration, taint)).toBe(expected);
  });

  it('reports the first untolerated taint, PreferNoSchedule optional', () => {
    const soft: Taint = { key: 'soft', effect: 'PreferNoSchedule' };
    expect(firstUntolerated([soft, gpu], [])).toEqual(soft);
    expect(firstUntolerated([soft, gpu], [], true)).toEqual(gpu);
    expect(firstUntolerated([soft, gpu], [{ operator: 'Exists' }])).toBeUndefined();
  });

  it.each([
    ['node.kubernetes.io/not-ready', true],
    ['karpenter.sh/unregistered', true],
    ['readiness.k8s.io/network', true],
    ['team', false],
  ])('%s is ephemeral: %s', (key, expected) => {
    expect(isEphemeralTaint({ key, effect: 'NoSchedule' })).toBe(expected);
  });
});
