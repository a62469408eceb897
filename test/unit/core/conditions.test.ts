import { describe, expect, it } from 'vitest';
import {
  type Condition,
  type ConditionStatus,
  conditionSinceMs,
  findCondition,
  isConditionTrue,
  NodeClaimConditionType,
  NodeClassConditionType,
  NodePoolConditionType,
  transitionTimeMs,
  trueSinceMs,
} from '../../../shared/core/index.ts';

const T0 = '2026-01-01T00:00:00Z';
const T0_MS = Date.parse(T0);

function condition(type: string, status: ConditionStatus, lastTransitionTime = T0): Condition {
  return { type, status, reason: type, message: '', lastTransitionTime };
}

describe('condition names', () => {
  it('spells the NodeClaim conditions as Karpenter v1 does, with no Empty or Expired', () => {
    expect(Object.values(NodeClaimConditionType).sort()).toEqual([
      'ConsistentStateFound',
      'Consolidatable',
      'DisruptionReason',
      'Drained',
      'Drifted',
      'Initialized',
      'InstanceTerminating',
      'Launched',
      'Ready',
      'Registered',
      'VolumesDetached',
    ]);
  });

  it('spells the NodePool and EC2NodeClass conditions, Flotilla’s own included', () => {
    expect(NodePoolConditionType).toMatchObject({
      ready: 'Ready',
      validationSucceeded: 'ValidationSucceeded',
      nodeClassReady: 'NodeClassReady',
      nodeRegistrationHealthy: 'NodeRegistrationHealthy',
      launchBackoff: 'LaunchBackoff',
      disruptionBudgetsValid: 'DisruptionBudgetsValid',
      nodeRepairBlocked: 'NodeRepairBlocked',
      rolloutPaused: 'RolloutPaused',
    });
    expect(NodeClassConditionType).toMatchObject({ ready: 'Ready', amisReady: 'AMIsReady' });
  });
});

describe('reading conditions', () => {
  const conditions = [
    condition(NodeClaimConditionType.launched, 'True', '2026-01-01T00:01:00Z'),
    condition(NodeClaimConditionType.registered, 'False', '2026-01-01T00:02:00Z'),
    condition(NodeClaimConditionType.initialized, 'Unknown', ''),
    condition(NodeClaimConditionType.drifted, 'True', 'yesterday'),
  ];

  it('finds a condition by type, and nothing for a type the object lacks', () => {
    expect(findCondition(conditions, NodeClaimConditionType.registered)?.status).toBe('False');
    expect(findCondition(conditions, NodeClaimConditionType.consolidatable)).toBeUndefined();
  });

  it.each([
    [NodeClaimConditionType.launched, true],
    [NodeClaimConditionType.registered, false],
    [NodeClaimConditionType.initialized, false],
    [NodeClaimConditionType.consolidatable, false],
  ])('isConditionTrue(%s) is %s', (type, expected) => {
    expect(isConditionTrue(conditions, type)).toBe(expected);
  });

  it.each([
    ['an RFC 3339 time', condition('X', 'True', T0), T0_MS],
    ['an empty time', condition('X', 'True', ''), undefined],
    ['a time that does not parse', condition('X', 'True', 'soon'), undefined],
    ['no condition', undefined, undefined],
  ])('transitionTimeMs of %s', (_what, c, expected) => {
    expect(transitionTimeMs(c)).toBe(expected);
  });

  it.each([
    [
      'True since its transition',
      NodeClaimConditionType.launched,
      'True',
      Date.parse('2026-01-01T00:01:00Z'),
    ],
    [
      'False since its transition',
      NodeClaimConditionType.registered,
      'False',
      Date.parse('2026-01-01T00:02:00Z'),
    ],
    ['not True while False', NodeClaimConditionType.registered, 'True', undefined],
    ['no time when the transition is empty', NodeClaimConditionType.initialized, 'Unknown', undefined],
    ['no time when the transition does not parse', NodeClaimConditionType.drifted, 'True', undefined],
    ['nothing for an absent condition', NodeClaimConditionType.drained, 'True', undefined],
  ] as const)('conditionSinceMs: %s', (_what, type, status, expected) => {
    expect(conditionSinceMs(conditions, type, status)).toBe(expected);
  });

  it('trueSinceMs is conditionSinceMs for True', () => {
    expect(trueSinceMs(conditions, NodeClaimConditionType.launched)).toBe(Date.parse('2026-01-01T00:01:00Z'));
    expect(trueSinceMs(conditions, NodeClaimConditionType.registered)).toBeUndefined();
  });
});
