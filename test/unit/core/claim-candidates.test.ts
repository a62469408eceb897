import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  computeAllocatable,
  type InstanceType,
  Label,
  type Offering,
  type SolveResult,
  solve,
} from '../../../shared/core/index.ts';
import { fakeInstanceType, nodePool, pod, solveInput, zoneName } from './builders.ts';

/**
 * Types whose spot offerings are priced apart from their on-demand ones, so that the order of
 * their cheapest offerings in the NodePool (the order the solver keeps them in) is not the order
 * of the on-demand prices the pods' NodeClaims pay. Prices come from a few steps, so that they tie.
 * Each type is offered in some of two zones and capacity types, not always all.
 */
const OFFERS = ['a/on-demand', 'a/spot', 'b/on-demand', 'b/spot'] as const;
const typeArb = fc.record({
  cpu: fc.constantFrom(2, 4, 8, 16),
  memoryGiB: fc.constantFrom(4, 8, 16, 32, 64),
  onDemand: fc.integer({ min: 1, max: 6 }),
  spot: fc.integer({ min: 1, max: 6 }),
  offers: fc.subarray([...OFFERS], { minLength: 1 }),
});

function build(
  specs: readonly {
    cpu: number;
    memoryGiB: number;
    onDemand: number;
    spot: number;
    offers: readonly (typeof OFFERS)[number][];
  }[],
): InstanceType[] {
  return specs.map((s, i) => {
    const t = fakeInstanceType({ name: `t${i}.x${s.cpu}`, cpu: s.cpu, memoryGiB: s.memoryGiB, price: 1 });
    const offerings = s.offers.map((o) => {
      const [zone, capacityType] = o.split('/') as [string, 'on-demand' | 'spot'];
      return {
        zone: zoneName(zone),
        capacityType,
        priceUsdPerHour: (capacityType === 'spot' ? s.spot : s.onDemand) / 10,
        available: true,
      };
    });
    return { ...t, offerings };
  });
}

/** Each claim's candidates: the admitted types that hold its requests at their cheapest allowed offering. */
function expectCandidates(
  result: SolveResult,
  types: readonly InstanceType[],
  admitted: (t: InstanceType) => boolean,
  allowed: (o: Offering) => boolean,
  maxInstanceTypes: number,
): void {
  for (const claim of result.nodeClaims) {
    const expected = types
      .filter((t) => {
        const alloc = computeAllocatable(t);
        return (
          admitted(t) &&
          t.offerings.some(allowed) &&
          Object.entries(claim.requests).every(([k, v]) => (alloc[k] ?? 0) >= v)
        );
      })
      .map((t) => ({
        name: t.name,
        price: Math.min(...t.offerings.filter(allowed).map((o) => o.priceUsdPerHour)),
      }))
      .sort((a, b) => a.price - b.price || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, maxInstanceTypes);
    expect(claim.instanceTypes.map((t) => ({ name: t.name, price: t.priceUsdPerHour }))).toEqual(expected);
  }
}

const cpusArb = fc.array(fc.constantFrom('500m', '1', '1500m', '3'), { minLength: 1, maxLength: 6 });

describe("a NodeClaim's candidate types", () => {
  it('are the types that hold its pods, priced at their cheapest allowed offering, cheapest first, at most maxInstanceTypes', () => {
    fc.assert(
      fc.property(
        fc.array(typeArb, { minLength: 1, maxLength: 40 }),
        cpusArb,
        fc.integer({ min: 1, max: 8 }),
        fc.boolean(),
        (specs, cpus, maxInstanceTypes, repack) => {
          const types = build(specs);
          const result = solve(
            solveInput({
              types,
              // The pool allows both capacity types; the pods ask for on-demand.
              nodePools: [nodePool()],
              pods: cpus.map((cpu, i) =>
                pod({
                  name: `p${i}`,
                  cpu,
                  memory: '1Gi',
                  nodeSelector: { [Label.capacityType]: 'on-demand' },
                }),
              ),
              options: { maxInstanceTypes, repack },
            }),
          );
          expectCandidates(
            result,
            types,
            () => true,
            (o) => o.capacityType === 'on-demand',
            maxInstanceTypes,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("are only types the NodePool's requirements admit when the pods ask nothing more", () => {
    fc.assert(
      fc.property(
        fc.array(typeArb, { minLength: 1, maxLength: 30 }),
        cpusArb,
        fc.integer({ min: 1, max: 8 }),
        fc.subarray(['a', 'b'], { minLength: 1 }),
        fc.constantFrom('on-demand' as const, 'spot' as const),
        fc.array(fc.nat({ max: 29 }), { maxLength: 10 }),
        (specs, cpus, maxInstanceTypes, zones, capacityType, excluded) => {
          const types = build(specs);
          const families = [...new Set(excluded.map((i) => `t${i}`))];
          const pool = nodePool({
            requirements: [
              { key: Label.zone, operator: 'In', values: zones.map(zoneName) },
              { key: Label.capacityType, operator: 'In', values: [capacityType] },
              ...(families.length === 0
                ? []
                : [{ key: Label.instanceFamily, operator: 'NotIn' as const, values: families }]),
            ],
          });
          const result = solve(
            solveInput({
              types,
              nodePools: [pool],
              pods: cpus.map((cpu, i) => pod({ name: `p${i}`, cpu, memory: '1Gi' })),
              options: { maxInstanceTypes },
            }),
          );
          expectCandidates(
            result,
            types,
            (t) => !families.includes(t.labels[Label.instanceFamily] ?? ''),
            (o) => o.capacityType === capacityType && zones.map(zoneName).includes(o.zone),
            maxInstanceTypes,
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
