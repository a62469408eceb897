import { describe, expect, it } from 'vitest';
import { type InstanceType, Label } from '../../../../shared/core/index.ts';
import { decisionForCommand } from '../../../../shared/usecases/disruption/describe.ts';
import type { DisruptionCommand } from '../../../../shared/usecases/disruption/index.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { instanceType } from '../provisioning/builders.ts';
import { candidate, replacement, schedulingInputOf } from './builders.ts';

// A consolidation decision marks the prices the catalog only assumes, on the candidate or the
// replacement that shows one, and only there.

/** The instance type with its spot offerings' price marked as assumed. */
const assumedSpot = (type: InstanceType): InstanceType => ({
  ...type,
  offerings: type.offerings.map((o) => (o.capacityType === 'spot' ? { ...o, priceAssumed: true } : o)),
});

function decisionWith(types: readonly InstanceType[], capacityType: 'on-demand' | 'spot') {
  const old = candidate('old', {
    labels: {
      [Label.instanceType]: 'm5.xlarge',
      [Label.zone]: 'us-east-1a',
      [Label.capacityType]: capacityType,
    },
  });
  const input = schedulingInputOf([old.nodePool], types);
  const xlarge = types.find((t) => t.name === 'm5.xlarge');
  const large = types.find((t) => t.name === 'm5.large');
  const offeredAt = (t: InstanceType | undefined) =>
    t?.offerings.find((o) => o.capacityType === capacityType)?.priceUsdPerHour ?? 0;
  const command: DisruptionCommand = {
    method: singleNodeConsolidation,
    reason: 'Underutilized',
    candidates: [{ ...old, pricePerHour: offeredAt(xlarge) }],
    replacements: [
      { ...replacement('new'), instanceTypes: [{ name: 'm5.large', priceUsdPerHour: offeredAt(large) }] },
    ],
  };
  return decisionForCommand(command, input, 'cmd', ['new'], 'started');
}

describe('decisionForCommand: assumed prices', () => {
  const xlarge = instanceType('m5.xlarge', 4, 0.192);
  const large = instanceType('m5.large', 2, 0.096);

  it('marks a replacement whose cheapest price is assumed, and not the candidate with a known one', () => {
    const decision = decisionWith([xlarge, assumedSpot(large)], 'spot');
    expect(decision.replacements).toEqual([
      {
        nodeClaim: 'new',
        nodePool: 'default',
        instanceTypes: ['m5.large'],
        pricePerHour: 0.032,
        priceAssumed: true,
      },
    ]);
    expect(decision.candidates[0]?.pricePerHour).toBe(0.064);
    expect(decision.candidates[0]).not.toHaveProperty('priceAssumed');
  });

  it('marks a candidate running at an assumed price', () => {
    const decision = decisionWith([assumedSpot(xlarge), large], 'spot');
    expect(decision.candidates[0]).toMatchObject({
      nodeClaim: 'old',
      pricePerHour: 0.064,
      priceAssumed: true,
    });
    expect(decision.replacements[0]).not.toHaveProperty('priceAssumed');
  });

  it('marks nothing when every price shown is known', () => {
    const decision = decisionWith([assumedSpot(xlarge), assumedSpot(large)], 'on-demand');
    expect(decision.candidates[0]).toMatchObject({ pricePerHour: 0.192 });
    expect(decision.replacements[0]).toMatchObject({ pricePerHour: 0.096 });
    expect(JSON.stringify(decision)).not.toContain('priceAssumed');
  });
});
