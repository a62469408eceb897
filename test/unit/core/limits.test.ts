import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Requirements } from '../../../shared/core/requirements.ts';
import type { TType } from '../../../shared/core/scheduling/instance-type-filter.ts';
import { Limits } from '../../../shared/core/scheduling/limits.ts';
import { Bin, type Template } from '../../../shared/core/scheduling/model.ts';

/** Types of 2, 4, … cpus, cheapest (smallest) first: only capacity and order matter here. */
const TYPES: readonly TType[] = [2, 4, 8, 16, 32, 64].map(
  (cpu, i) =>
    ({
      capacity: { cpu },
      alloc: Float64Array.of(cpu),
      basePrice: cpu,
      it: { name: `t${i}` },
    }) as unknown as TType,
);

function pool(cpuLimit: number): Template {
  return { order: 0, types: TYPES, remaining: new Map([['cpu', cpuLimit]]) } as unknown as Template;
}

function claim(template: Template, i: number): Bin {
  return new Bin(
    'claim',
    `c${i}`,
    Requirements.none,
    undefined,
    [],
    new Float64Array(1),
    undefined,
    template,
    false,
  );
}

/** What a claim reserves while planning: its planned type while a candidate, else its cheapest. */
function targetCpu(bin: Bin): number {
  const t = bin.planned ?? bin.types[0];
  return t === undefined ? 0 : (t.capacity['cpu'] ?? 0);
}

// One step: a claim, its new candidates (a subset of TYPES, price order) and a planned type.
const step = fc.record({
  claim: fc.nat({ max: 3 }),
  types: fc.subarray([...TYPES.keys()]),
  planned: fc.option(fc.nat({ max: TYPES.length - 1 }), { nil: undefined }),
});

describe('Limits.reserve', () => {
  it('keeps the pool at its limit less every claim’s target, however often a claim is told its types', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const template = pool(1000);
        const limits = new Limits(60);
        const bins = [0, 1, 2, 3].map((i) => claim(template, i));
        for (const s of steps) {
          const bin = bins[s.claim] as Bin;
          const types = s.types.map((k) => TYPES[k] as TType);
          const planned = s.planned === undefined ? undefined : TYPES[s.planned];
          bin.types = types;
          // As setTypes does: a planned type that is no longer a candidate is dropped.
          bin.planned = planned !== undefined && types.includes(planned) ? planned : undefined;
          limits.reserve(bin, types);
          const reserved = bins.reduce((sum, b) => sum + (b.reserve === undefined ? 0 : targetCpu(b)), 0);
          expect(template.remaining?.get('cpu')).toBe(1000 - reserved);
          expect(bin.reserve?.get('cpu')).toBe(targetCpu(bin));
        }
      }),
    );
  });
});

describe('Limits.finish', () => {
  it('widens each claim to its largest candidate when the limit is far, never below what it holds', () => {
    const template = pool(1000);
    const limits = new Limits(3);
    const bins = [0, 1, 2].map((i) => claim(template, i));
    const shared = TYPES.slice(0, 5);
    // The first claim is planned as a 32-cpu type, past the three candidates a plan offers.
    (bins[0] as Bin).planned = TYPES[4];
    for (const bin of bins) {
      bin.types = shared;
      limits.reserve(bin, shared);
    }
    expect(template.remaining?.get('cpu')).toBe(1000 - 32 - 2 * 2);
    limits.finish(bins);
    // The first three candidates (maxTypes 3), the largest of them 8 cpus; the first claim keeps 32.
    expect(bins.map((b) => b.reserve?.get('cpu'))).toEqual([32, 8, 8]);
    expect(template.remaining?.get('cpu')).toBe(1000 - 32 - 2 * 8);
  });

  it('hands what a near limit leaves over to the claims in turn, never past it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 6, max: 80 }),
        fc.array(fc.nat({ max: 2 }), { minLength: 3, maxLength: 3 }),
        (limit, firsts) => {
          const template = pool(limit);
          const limits = new Limits(60);
          const bins = firsts.map((first, i) => {
            const bin = claim(template, i);
            bin.types = TYPES.slice(first);
            limits.reserve(bin, bin.types);
            return bin;
          });
          const before = template.remaining?.get('cpu') as number;
          fc.pre(before >= 0);
          limits.finish(bins);
          for (const bin of bins) expect(bin.reserve?.get('cpu')).toBeGreaterThanOrEqual(targetCpu(bin));
          expect(template.remaining?.get('cpu')).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });
});
