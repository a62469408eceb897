// A final improvement pass over the planned NodeClaims: pods that nothing ties to their claim are
// re-packed, per NodePool and requirements, mixing complementary shapes on the instance types
// that cover the remaining demand most cheaply. The new plan is kept only when it is cheaper.
import { Label } from '../labels.ts';
import { Requirement } from '../requirements.ts';
import {
  cheapestPrice,
  type TType,
  type TypeFilter,
  typeFilterOf,
  typeMatches,
} from './instance-type-filter.ts';
import type { Limits } from './limits.ts';
import { Bin, compareStrings, fnv1a, type Template } from './model.ts';
import {
  activeDims,
  type Fill,
  fillType,
  type Packing,
  type PackShape,
  PrefixMax,
  stillAvailable,
} from './repack-fill.ts';
import { addInto, fits, type Vec } from './vectors.ts';

/** How many instance types, best first by cost per unit of remaining demand, are tried per node. */
const CANDIDATE_TYPES = 8;
/** Nodes opened between two rankings of the instance types for the same largest pod. */
const RERANK_EVERY = 16;
/** Groups with more distinct pod shapes than this are left as planned (the pass is quadratic). */
const MAX_SHAPES = 256;

export interface ImproveContext {
  readonly size: number;
  readonly limits: Limits;
  readonly nowMs: number;
}

/**
 * Returns the claims with every group of fully movable claims (same NodePool, same requirements,
 * no minValues) re-packed when that lowers the group's cost. Claims keep their relative order;
 * a re-packed group takes the place of its first claim. Limits stay within their bounds.
 */
export function improveClaims(claims: readonly Bin[], ctx: ImproveContext): Bin[] {
  const groups = new Map<string, Bin[]>();
  for (const c of claims) {
    if (!isMovable(c)) continue;
    const key = `${(c.template as Template).order}|${c.reqs.without(Label.hostname)}`;
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [c]);
    else list.push(c);
  }
  const replaced = new Map<Bin, Bin[]>();
  for (const group of groups.values()) {
    const repacked = repackGroup(group, ctx);
    if (repacked === undefined) continue;
    group.forEach((c, i) => {
      replaced.set(c, i === 0 ? repacked : []);
    });
  }
  if (replaced.size === 0) return [...claims];
  return claims.flatMap((c) => replaced.get(c) ?? [c]);
}

function isMovable(c: Bin): boolean {
  if (c.kind !== 'claim' || c.template === undefined || c.pods.length === 0) return false;
  if (c.movable !== c.pods.length || c.minValuesRelaxed) return false;
  for (const r of c.reqs.values()) if (r.minValues !== undefined) return false;
  return true;
}

interface Node {
  readonly items: number[];
  readonly used: Vec;
  type: TType;
  price: number;
}

function repackGroup(group: readonly Bin[], ctx: ImproveContext): Bin[] | undefined {
  const first = group[0] as Bin;
  const template = first.template as Template;
  const reqs = first.reqs.without(Label.hostname);
  const f = typeFilterOf(reqs);
  const priced = template.types
    .filter((t) => typeMatches(t, f))
    .map((t) => ({ t, price: cheapestPrice(t, f) }))
    .filter((x) => Number.isFinite(x.price))
    .sort((a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name));
  if (priced.length === 0) return undefined;
  const prices = new Map<TType, number>();
  for (const x of priced) prices.set(x.t, x.price);
  let oldCost = 0;
  for (const c of group) oldCost += claimPrice(c, f, prices);
  const owners: { bin: Bin; i: number }[] = [];
  // Identical requests form one shape; items of a shape are taken in their original order. Pods
  // of one pod shape share their requests vector, so only distinct vectors are compared by value.
  const shapes: { vec: Vec; items: number[] }[] = [];
  const byVec = new Map<Vec, number>();
  const byValue = new Map<string, number>();
  for (const c of group) {
    c.vecs.forEach((v, i) => {
      let s = byVec.get(v);
      if (s === undefined) {
        const key = v.join(',');
        s = byValue.get(key);
        if (s === undefined) {
          s = shapes.length;
          byValue.set(key, s);
          shapes.push({ vec: v, items: [] });
        }
        byVec.set(v, s);
      }
      shapes[s]?.items.push(owners.length);
      owners.push({ bin: c, i });
    });
  }
  if (shapes.length > MAX_SHAPES) return undefined;
  // Two ways to fill a node; the cheaper plan wins (ties: the first).
  let nodes: Node[] | undefined;
  let newCost = Number.POSITIVE_INFINITY;
  const prefixMax = new PrefixMax(priced, ctx.size);
  for (const fill of ['largest', 'aligned'] as const) {
    const candidate = repack(shapes, priced, ctx.size, fill, prefixMax);
    if (candidate === undefined) continue;
    const cost = candidate.reduce((s, n) => s + n.price, 0);
    if (cost < newCost - 1e-9) {
      nodes = candidate;
      newCost = cost;
    }
  }
  if (nodes === undefined) return undefined;
  if (!(newCost < oldCost - 1e-9)) return undefined;

  // Swap the reservations against the pool's limits; undo when a limit would be exceeded.
  const remaining = template.remaining;
  const before = remaining === undefined ? undefined : new Map(remaining);
  if (remaining !== undefined) {
    for (const c of group) {
      for (const [k, v] of c.reserve ?? []) remaining.set(k, (remaining.get(k) ?? 0) + v);
      if (remaining.has('nodes')) remaining.set('nodes', (remaining.get('nodes') ?? 0) + 1);
    }
  }
  // Nodes with the same requests have the same candidates.
  const zero = new Float64Array(ctx.size);
  const fittingCache = new Map<string, { types: readonly TType[]; max: Vec }>();
  const fitting = (used: Vec): { types: readonly TType[]; max: Vec } => {
    const key = used.join(',');
    let hit = fittingCache.get(key);
    if (hit === undefined) {
      const types = priced.map((x) => x.t).filter((t) => fits(used, zero, t.alloc));
      const max = new Float64Array(ctx.size).fill(Number.NEGATIVE_INFINITY);
      for (const t of types)
        for (let d = 0; d < max.length; d++)
          if ((t.alloc[d] as number) > (max[d] as number)) max[d] = t.alloc[d] as number;
      hit = { types, max };
      fittingCache.set(key, hit);
    }
    return hit;
  };
  const bins = nodes.map((n, i) => {
    const firstOwner = owners[n.items[0] as number] as { bin: Bin; i: number };
    const seed = `${ctx.nowMs}/${template.pool.name}/${firstOwner.bin.pods[firstOwner.i]?.uid}/improved/${i}`;
    const name = `${template.pool.name}-${fnv1a(seed)}`;
    const bin = new Bin(
      'claim',
      name,
      reqs.with(Requirement.in(Label.hostname, [name])),
      undefined,
      first.taints,
      n.used,
      undefined,
      template,
      false,
    );
    bin.hostPorts = [...template.daemonPorts];
    for (const item of n.items) {
      const o = owners[item] as { bin: Bin; i: number };
      bin.pods.push(o.bin.pods[o.i] as Bin['pods'][number]);
      bin.placed.push(o.bin.placed[o.i] as Bin['placed'][number]);
      bin.vecs.push(o.bin.vecs[o.i] as Vec);
      bin.movable += 1;
    }
    const { types, max } = fitting(n.used);
    bin.types = types;
    bin.maxAlloc = new Float64Array(max);
    if (remaining !== undefined) {
      if (remaining.has('nodes')) remaining.set('nodes', (remaining.get('nodes') ?? 0) - 1);
      ctx.limits.reserve(bin, types);
    }
    return bin;
  });
  if (remaining !== undefined && before !== undefined) {
    for (const [k, v] of remaining) {
      if (v < Math.min(before.get(k) ?? 0, 0)) {
        for (const [bk, bv] of before) remaining.set(bk, bv);
        return undefined;
      }
    }
  }
  return bins;
}

/** What the plan launches the claim as: its cheapest candidate under its requirements. */
function claimPrice(c: Bin, f: TypeFilter, prices: ReadonlyMap<TType, number>): number {
  let best = Number.POSITIVE_INFINITY;
  for (const t of c.types) {
    // A planned claim's types keep the template's order, lowest base price first, and no
    // offering costs less than its type's base price: the rest cannot be cheaper.
    if (t.basePrice >= best) break;
    best = Math.min(best, prices.get(t) ?? cheapestPrice(t, f));
  }
  return best;
}

/**
 * Vector bin packing of the pods onto instance types. Each new node is opened for the largest pod
 * left and tries the few types that fit it and cover the remaining demand most cheaply. It fills
 * each greedily, `largest` pod first or the pod best `aligned` (by dot product) with the node's
 * free room, shrinks it to the cheapest type that still fits, and keeps the one with the lowest
 * price per share of the remaining demand it covers (in the dimension it covers most).
 */
function repack(
  groups: readonly { readonly vec: Vec; readonly items: readonly number[] }[],
  priced: readonly { readonly t: TType; readonly price: number }[],
  size: number,
  fill: 'largest' | 'aligned',
  prefixMax: PrefixMax,
): Node[] | undefined {
  const shapes: PackShape[] = groups.map((g) => ({ vec: g.vec, items: g.items, next: 0 }));
  const demand = new Float64Array(size);
  for (const sh of shapes) for (let k = 0; k < sh.items.length; k++) addInto(demand, sh.vec);
  // Largest first: every node is opened for the largest pod left (relative to the largest type).
  const largest = new Float64Array(size);
  for (const { t } of priced)
    for (let d = 0; d < size; d++) largest[d] = Math.max(largest[d] as number, t.alloc[d] as number);
  const sizes = shapes.map(({ vec }) => {
    let sum = 0;
    for (let d = 0; d < size; d++)
      if ((largest[d] as number) > 0) sum += (vec[d] as number) / (largest[d] as number);
    return sum;
  });
  const order = shapes.map((_, i) => i).sort((a, b) => (sizes[b] as number) - (sizes[a] as number) || a - b);
  const zero = new Float64Array(size);
  // The CANDIDATE_TYPES best (lowest score, then lowest index) of the types that fit the anchor.
  const rankTypes = (anchorVec: Vec): number[] => {
    const best: { index: number; score: number }[] = [];
    priced.forEach(({ t, price }, index) => {
      let cover = Number.POSITIVE_INFINITY;
      for (let d = 0; d < size; d++) {
        const need = demand[d] as number;
        if (need > 0) cover = Math.min(cover, (t.alloc[d] as number) / need);
      }
      if (!(cover > 0)) return;
      const score = price / Math.min(cover, 1);
      const worst = best[best.length - 1];
      if (best.length === CANDIDATE_TYPES && worst !== undefined && !(score < worst.score)) return;
      if (!fits(zero, anchorVec, t.alloc)) return;
      let at = best.length;
      while (at > 0 && score < (best[at - 1] as { score: number }).score) at--;
      best.splice(at, 0, { index, score });
      if (best.length > CANDIDATE_TYPES) best.pop();
    });
    return best.map((x) => x.index);
  };
  let ranked: number[] = [];
  let rankedFor = -1;
  let sinceRanked = 0;
  let left = 0;
  for (const sh of shapes) left += sh.items.length;
  const nodes: Node[] = [];
  const avail = shapes.map((sh) => sh.items.length);
  // How a type fills from an anchor does not depend on the demand left, only on how many pods of
  // each shape are still available: a fill is the same while every pod it took still is.
  const fills = new Map<number, Fill>();
  const packing: Packing = { shapes, priced, size, fill, order, prefixMax, ...activeDims(shapes, size) };
  while (left > 0) {
    const anchor = order.find((s) => (avail[s] as number) > 0) as number;
    const anchorVec = (shapes[anchor] as PackShape).vec;
    // Cheapest types per share of the remaining demand, among types that fit the anchor pod.
    // The demand mix drifts slowly, so the ranking is kept for a few nodes of the same anchor.
    if (anchor !== rankedFor || sinceRanked >= RERANK_EVERY) {
      ranked = rankTypes(anchorVec);
      rankedFor = anchor;
      sinceRanked = 0;
    }
    sinceRanked += 1;
    if (ranked.length === 0) return undefined;
    let best: Fill | undefined;
    let bestEfficiency = Number.POSITIVE_INFINITY;
    for (const index of ranked) {
      const key = anchor * priced.length + index;
      let f = fills.get(key);
      if (f === undefined || !stillAvailable(f.taken, avail)) {
        f = fillType(packing, index, anchor, avail);
        fills.set(key, f);
      }
      let share = 0;
      for (let d = 0; d < size; d++) {
        const need = demand[d] as number;
        if (need > 0) share = Math.max(share, (f.used[d] as number) / need);
      }
      const efficiency = f.price / share;
      if (best === undefined || efficiency < bestEfficiency) {
        best = f;
        bestEfficiency = efficiency;
      }
    }
    if (best === undefined) return undefined;
    const items: number[] = [];
    for (const [s, count] of best.picks) {
      const sh = shapes[s] as PackShape;
      for (let k = 0; k < count; k++) items.push(sh.items[sh.next++] as number);
      avail[s] = (avail[s] as number) - count;
    }
    for (let d = 0; d < size; d++) demand[d] = (demand[d] as number) - (best.used[d] as number);
    left -= items.length;
    nodes.push({ items, used: new Float64Array(best.used), type: best.type, price: best.price });
  }
  return nodes;
}
