import { describe, expect, it } from 'vitest';
import {
  interruptedOffering,
  interruptionPolicy,
} from '../../../../shared/usecases/interruption/interruption.ts';

describe('interruptionPolicy (Karpenter actionForMessage)', () => {
  it.each([
    ['spotInterruption', 'cordonAndDrain', 'SpotInterrupted'],
    ['scheduledChange', 'cordonAndDrain', 'InstanceUnhealthy'],
    ['instanceStopped', 'cordonAndDrain', 'InstanceStopping'],
    ['instanceTerminated', 'cordonAndDrain', 'InstanceTerminating'],
    ['capacityReservationInterruption', 'cordonAndDrain', 'CapacityReservationInstanceInterrupted'],
    ['rebalanceRecommendation', 'event', 'SpotRebalanceRecommendation'],
    ['noop', 'none', undefined],
  ] as const)('%s → %s (%s)', (kind, action, reason) => {
    const policy = interruptionPolicy(kind);
    expect(policy.action).toBe(action);
    expect(policy.event?.reason).toBe(reason);
  });

  it('rebalance recommendations drain only when configured to', () => {
    expect(interruptionPolicy('rebalanceRecommendation', { rebalance: 'drain' }).action).toBe(
      'cordonAndDrain',
    );
  });

  it('backs off the spot offering of the NodeClaim, and only a spot one', () => {
    const labels = {
      'node.kubernetes.io/instance-type': 'm5.large',
      'topology.kubernetes.io/zone': 'us-east-1b',
      'karpenter.sh/capacity-type': 'spot',
    };
    expect(interruptedOffering({ labels })).toEqual({
      instanceType: 'm5.large',
      zone: 'us-east-1b',
      capacityType: 'spot',
    });
    expect(
      interruptedOffering({ labels: { ...labels, 'karpenter.sh/capacity-type': 'on-demand' } }),
    ).toBeUndefined();
    expect(interruptedOffering({ labels: { 'karpenter.sh/capacity-type': 'spot' } })).toBeUndefined();
  });
});
