import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TType } from '../../../shared/core/scheduling/instance-type-filter.ts';
import {
  activeDims,
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
          ...activeDims(shapes, SIZE),
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

  it('takes the pods a fill over every dimension takes, when the pods ask nothing in some and a type offers less than nothing there', () => {
    // Four dimensions: the pods ask nothing in the last and often nothing in the third, where a
    // type may hold less than nothing (its DaemonSets ask more than it has).
    const D = 4;
    const sparse = fc.record({
      shapes: fc.array(
        fc.tuple(
          fc.integer({ min: 1, max: 16 }),
          fc.integer({ min: 1, max: 16 }),
          fc.constantFrom(0, 0, 1, 3),
        ),
        { minLength: 1, maxLength: 8 },
      ),
      counts: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 8, maxLength: 8 }),
      allocs: fc.array(
        fc.tuple(
          fc.integer({ min: 1, max: 64 }),
          fc.integer({ min: 1, max: 64 }),
          fc.integer({ min: -2, max: 16 }),
          fc.integer({ min: -2, max: 8 }),
        ),
        { minLength: 1, maxLength: 20 },
      ),
      fill: fc.constantFrom('largest' as const, 'aligned' as const),
      index: fc.nat(),
      anchor: fc.nat(),
    });
    fc.assert(
      fc.property(sparse, ({ shapes: raw, counts, allocs, fill, index: i, anchor: a }) => {
        const list = priced(allocs.map((x) => [...x]));
        const shapes: PackShape[] = raw.map((v, s) => ({
          vec: Float64Array.of(...v, 0),
          items: [s],
          next: 0,
        }));
        const size = (s: number) => [...(shapes[s] as PackShape).vec].reduce((p, q) => p + q, 0);
        const order = shapes.map((_, s) => s).sort((x, y) => size(y) - size(x) || x - y);
        const packing: Packing = {
          shapes,
          priced: list,
          size: D,
          fill,
          order,
          prefixMax: new PrefixMax(list, D),
          ...activeDims(shapes, D),
        };
        const avail = shapes.map((_, s) => counts[s] as number);
        const index = i % list.length;
        const anchor = a % shapes.length;
        const got = fillType(packing, index, anchor, avail);

        // The same rules, written over every dimension.
        const alloc = (list[index] as { t: TType }).t.alloc;
        const used = new Array<number>(D).fill(0);
        const room = [...alloc];
        const taken = new Array<number>(shapes.length).fill(0);
        const picks: [number, number][] = [];
        const vecOf = (s: number) => [...(shapes[s] as PackShape).vec];
        const fitsAll = (s: number) => vecOf(s).every((v, d) => v <= (room[d] as number));
        const take = (s: number, n: number) => {
          vecOf(s).forEach((v, d) => {
            used[d] = (used[d] as number) + n * v;
            room[d] = (room[d] as number) - n * v;
          });
          taken[s] = (taken[s] as number) + n;
          const last = picks[picks.length - 1];
          if (last !== undefined && last[0] === s) last[1] += n;
          else picks.push([s, n]);
        };
        take(anchor, 1);
        if (fill === 'largest') {
          for (const s of order) {
            let n = (avail[s] as number) - (taken[s] as number);
            if (n <= 0 || !fitsAll(s)) continue;
            vecOf(s).forEach((v, d) => {
              if (v > 0) n = Math.min(n, Math.floor((room[d] as number) / v));
            });
            take(s, n);
          }
        } else {
          for (;;) {
            let pick = -1;
            let best = Number.NEGATIVE_INFINITY;
            shapes.forEach((_, s) => {
              if ((taken[s] as number) >= (avail[s] as number) || !fitsAll(s)) return;
              let score = 0;
              vecOf(s).forEach((v, d) => {
                const x = alloc[d] as number;
                if (x > 0) score += (v / x) * ((room[d] as number) / x);
              });
              if (score > best) {
                best = score;
                pick = s;
              }
            });
            if (pick < 0) break;
            take(pick, 1);
          }
        }
        expect(got.picks).toEqual(picks);
        expect([...got.used]).toEqual(used);
      }),
      { numRuns: 500 },
    );
  });
});
