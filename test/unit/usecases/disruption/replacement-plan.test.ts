import { describe, expect, it } from 'vitest';
import { type InstanceType, Label, type NodeClaimPlan } from '../../../../shared/core/index.ts';
import {
  narrowPlan,
  SPOT_TO_SPOT_MIN_TYPES,
} from '../../../../shared/usecases/disruption/replacement-plan.ts';
import { catalogInstanceTypes } from '../../core/builders.ts';
import { plan as solverPlan } from '../provisioning/builders.ts';

// A consolidation replacement narrowed to the types cheaper than its candidates: they must still
// offer the NodePool's minValues, as Karpenter's price filter requires, and the NodeClaim keeps
// asking for them.

const TYPES = catalogInstanceTypes({
  filter: (t) => ['c6a', 'm6a', 'r6a', 'c6i', 'm6i', 'r6i'].includes(t.family),
  capacityTypes: ['on-demand', 'spot'],
  zones: ['a'],
});
const byName = new Map(TYPES.map((t) => [t.name, t]));
/** The on-demand price of `t`. */
const price = (t: InstanceType) =>
  Math.min(...t.offerings.filter((o) => o.capacityType === 'on-demand').map((o) => o.priceUsdPerHour));

/**
 * A plan whose candidates are `types` (at least `typeMin` of them, when given), with the
 * requirements `extra` besides the instance types.
 */
function plan(
  types: readonly InstanceType[],
  extra: NodeClaimPlan['requirements'],
  typeMin?: number,
): NodeClaimPlan {
  return solverPlan({
    nodePoolName: 'default',
    requirements: [
      ...extra,
      {
        key: Label.instanceType,
        operator: 'In',
        values: types.map((t) => t.name),
        ...(typeMin === undefined ? {} : { minValues: typeMin }),
      },
    ],
    instanceTypes: types
      .map((t) => ({ name: t.name, priceUsdPerHour: price(t) }))
      .sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour),
  });
}

const ON_DEMAND = new Set(['on-demand']);
const SPOT = new Set(['spot']);
const families = (p: NodeClaimPlan) =>
  new Set(p.instanceTypes.map((c) => byName.get(c.name)?.labels[Label.instanceFamily]));

describe("a replacement's types narrowed by price", () => {
  const fourXl = TYPES.filter((t) => t.name.endsWith('.4xlarge'));
  const familyMin = (n: number) => [{ key: Label.instanceFamily, operator: 'Exists' as const, minValues: n }];

  it('keeps the types that offer the minValues, and the NodeClaim still asks for them', () => {
    const narrowed = narrowPlan(
      plan(fourXl, familyMin(3), 3),
      byName,
      ON_DEMAND,
      Number.POSITIVE_INFINITY,
      false,
    );
    if (typeof narrowed === 'string') throw new Error(narrowed);
    expect(families(narrowed.plan).size).toBeGreaterThanOrEqual(3);
    expect(narrowed.plan.requirements.find((r) => r.key === Label.instanceType)?.minValues).toBe(3);
    expect(narrowed.plan.requirements.find((r) => r.key === Label.instanceFamily)?.minValues).toBe(3);
  });

  it('finds no replacement when the cheaper types offer fewer values than a minValues', () => {
    // Under the on-demand price of r6a.4xlarge, only the c6a, c6i, m6a and m6i families are left.
    const cap = price(byName.get('r6a.4xlarge') as InstanceType) - 1e-6;
    const four = narrowPlan(plan(fourXl, familyMin(4)), byName, ON_DEMAND, cap, false);
    if (typeof four === 'string') throw new Error(four);
    expect([...families(four.plan)].sort()).toEqual(['c6a', 'c6i', 'm6a', 'm6i']);
    expect(narrowPlan(plan(fourXl, familyMin(5)), byName, ON_DEMAND, cap, false)).toBe(
      'Filtering by price: minValues of karpenter.k8s.aws/instance-family is 5, the cheaper instance types offer 4',
    );
  });

  it('launches a spot-to-spot replacement from as many of the cheapest types as its minValues need', () => {
    const spot = narrowPlan(plan(TYPES, [], 20), byName, SPOT, Number.POSITIVE_INFINITY, true);
    if (typeof spot === 'string') throw new Error(spot);
    expect(spot.plan.instanceTypes).toHaveLength(20);
    expect(spot.plan.requirements.find((r) => r.key === Label.instanceType)).toMatchObject({ minValues: 20 });
    // Without minValues, the 15 cheapest.
    const plain = narrowPlan(plan(TYPES, []), byName, SPOT, Number.POSITIVE_INFINITY, true);
    if (typeof plain === 'string') throw new Error(plain);
    expect(plain.plan.instanceTypes).toHaveLength(SPOT_TO_SPOT_MIN_TYPES);
  });
});
