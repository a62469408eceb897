import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TType } from '../../../shared/core/scheduling/instance-type-filter.ts';
import {
  fillType,
  type Packing,
  type PackShape,
  PrefixMax,
  stillAvailable,
} from '../../../shared/core/scheduling/repack-fill.ts';

const SIZE = 3;

/** A priced type: only its allocatable and price matter to a fill. */
function priced(allocs: readonly number[][]): { t: TType; price: number }[] {
  return allocs
    .map((a, i) => ({
      t: { alloc: Float64Array.from(a), it: { name: `t${i}` } } as unknown as TType,
      price: a[0] ?? 0,
    }))
    .sort((x, y) => x.price - y.price);
}

const vec = fc.array(fc.integer({ min: 1, max: 64 }), { minLength: SIZE, maxLength: SIZE });

describe('PrefixMax', () => {
  it('holds exactly when the largest allocatable of the first k+1 types holds the node, asked in any order', () => {
    fc.assert(
      fc.property(
        fc.array(vec, { minLength: 1, maxLength: 40 }),
        fc.array(fc.tuple(fc.nat(), vec), { minLength: 1, maxLength: 20 }),
        (allocs, asks) => {
          const list = priced(allocs);
          const prefix = new PrefixMax(list, SIZE);
          for (const [at, used] of asks) {
            const k = at % list.length;
            const expected = [0, 1, 2].every((d) =>
              list.slice(0, k + 1).some((x) => (used[d] as number) <= (x.t.alloc[d] as number)),
            );
            const largest = [0, 1, 2].every(
              (d) =>
                (used[d] as number) <= Math.max(...list.slice(0, k + 1).map((x) => x.t.alloc[d] as number)),
            );
            expect(prefix.holds(k, Float64Array.from(used))).toBe(largest);
            expect(largest).toBe(expected);
          }
        },
      ),
    );
  });
});

describe('fillType', () => {
  const input = fc.record({
    shapes: fc.array(
      fc.tuple(
        fc.array(fc.integer({ min: 1, max: 16 }), { minLength: SIZE, maxLength: SIZE }),
        fc.integer({ min: 1, max: 12 }),
      ),
      {
        minLength: 1,
        maxLength: 8,
      },
    ),
    allocs: fc.array(vec, { minLength: 1, maxLength: 30 }),
    fill: fc.constantFrom('largest' as const, 'aligned' as const),
    index: fc.nat(),
    anchor: fc.nat(),
    fewer: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 8, maxLength: 8 }),
  });

  it('shrinks the node to the first cheaper type that holds it, and gives the same fill while every pod it took is still available', () => {
    fc.assert(
      fc.property(input, ({ shapes: raw, allocs, fill, index: i, anchor: a, fewer }) => {
        const list = priced(allocs.map((x) => x.map((v) => v * 4)));
        const shapes: PackShape[] = raw.map(([v], s) => ({ vec: Float64Array.from(v), items: [s], next: 0 }));
        const order = shapes
          .map((_, s) => s)
          .sort((x, y) => {
            const sum = (s: number) => [...(shapes[s] as PackShape).vec].reduce((p, q) => p + q, 0);
            return sum(y) - sum(x) || x - y;
          });
        const packing: Packing = {
          shapes,
          priced: list,
          size: SIZE,
          fill,
          order,
          prefixMax: new PrefixMax(list, SIZE),
        };
        const avail = raw.map(([, n]) => n);
        const index = i % list.length;
        const anchor = a % shapes.length;
        const anchorVec = (shapes[anchor] as PackShape).vec;
        // The anchor must fit the type the fill starts from.
        if (
          ![0, 1, 2].every(
            (d) => (anchorVec[d] as number) <= ((list[index] as { t: TType }).t.alloc[d] as number),
          )
        )
          return;
        const first = fillType(packing, index, anchor, avail);
        // The cheapest type before `index` that holds the node, or the type itself.
        const holds = (t: TType) =>
          [0, 1, 2].every((d) => (first.used[d] as number) <= (t.alloc[d] as number));
        const naive =
          list.slice(0, index).find((x) => holds(x.t)) ?? (list[index] as { t: TType; price: number });
        expect(first.type).toBe(naive.t);
        expect(first.price).toBe(naive.price);
        // Fewer pods available, but never fewer than the fill took.
        const less = avail.map((n, s) => {
          const took = first.taken[s] as number;
          return took + Math.floor((fewer[s % fewer.length] as number) * (n - took));
        });
        expect(stillAvailable(first.taken, less)).toBe(true);
        const again = fillType(packing, index, anchor, less);
        expect(again.picks).toEqual(first.picks);
        expect(again.taken).toEqual(first.taken);
        expect([...again.used]).toEqual([...first.used]);
        expect(again.type).toBe(first.type);
        // One pod fewer of a shape it took, and the check says so.
        const took = first.taken.findIndex((n) => n > 0);
        const short = [...less];
        short[took] = (first.taken[took] as number) - 1;
        expect(stillAvailable(first.taken, short)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
