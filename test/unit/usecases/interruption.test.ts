import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeInterruptionHandler } from '../../../lambdas/interruption/run.ts';
import type { InterruptionMessage } from '../../../shared/messages/interruption-event.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { interruptedOffering, interruptionPolicy } from '../../../shared/usecases/interruption.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/events/${name}.json`, import.meta.url), 'utf8');

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

describe('interruption Lambda batch handling', () => {
  const record = (messageId: string, body: string) => ({
    messageId,
    body,
    receiptHandle: 'r',
    attributes: {},
  });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) });

  it('reports malformed records as failures, handles the rest, and a duplicate event once', async () => {
    const handled: InterruptionMessage[] = [];
    const handler = makeInterruptionHandler({
      logger,
      indexNodeClaims: async () => new Map(),
      handle: async (message) => {
        handled.push(message);
        if (message.kind === 'instanceStopped') throw new Error('API server unavailable');
      },
    });
    const result = await handler({
      Records: [
        record('m1', fixture('spot-interruption')),
        record('m2', '{"detail-type":'),
        record('m3', fixture('spot-interruption')),
        record('m4', fixture('rebalance')),
        record('m5', fixture('state-change-stopping')),
      ],
    });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm2' }, { itemIdentifier: 'm5' }]);
    expect(handled.map((m) => m.kind)).toEqual([
      'spotInterruption',
      'rebalanceRecommendation',
      'instanceStopped',
    ]);
    expect(lines.find((l) => l['message'] === 'interruption message rejected')).toMatchObject({
      messageId: 'm2',
    });
    expect(lines.find((l) => l['message'] === 'interruption failed')).toMatchObject({
      messageId: 'm5',
      kind: 'instanceStopped',
    });
  });

  it('fails every valid record when the NodeClaims cannot be read', async () => {
    const handler = makeInterruptionHandler({
      logger,
      indexNodeClaims: async () => {
        throw new Error('timeout');
      },
      handle: async () => undefined,
    });
    const result = await handler({ Records: [record('a', fixture('rebalance')), record('b', 'nope')] });
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b']);
  });
});
