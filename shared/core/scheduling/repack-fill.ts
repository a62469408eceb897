// Filling one node for the re-packing pass (improve.ts): an instance type, an anchor pod, then
// more pods by one of two greedy rules, and the node shrunk to the cheapest type that still fits.
import type { TType } from './instance-type-filter.ts';
import { fits, type Vec } from './vectors.ts';

/** What one run of the re-packing fills nodes from. */
export interface Packing {
  readonly shapes: readonly PackShape[];
  readonly priced: readonly { readonly t: TType; readonly price: number }[];
  readonly size: number;
  readonly fill: 'largest' | 'aligned';
  /** Shape indices, largest first (ties: lower index first). */
  readonly order: readonly number[];
  /** The largest allocatable of the first types of `priced`. */
  readonly prefixMax: PrefixMax;
  /** The dimensions some shape asks for; in the others (`inactive`) every shape asks nothing. */
  readonly active: Int32Array;
  readonly inactive: Int32Array;
}

/** `active` and `inactive` of a Packing for these shapes. */
export function activeDims(
  shapes: readonly { readonly vec: Vec }[],
  size: number,
): { active: Int32Array; inactive: Int32Array } {
  const active: number[] = [];
  const inactive: number[] = [];
  for (let d = 0; d < size; d++) {
    if (shapes.some((sh) => (sh.vec[d] as number) !== 0)) active.push(d);
    else inactive.push(d);
  }
  return { active: Int32Array.from(active), inactive: Int32Array.from(inactive) };
}

/**
 * For each k, the largest allocatable of `priced[0..k]` per dimension, worked out only as far as
 * asked (small groups never look far down a long list). Shared by the fills of one group.
 */
export class PrefixMax {
  private readonly flat: Float64Array;
  private done = 0;

  constructor(
    private readonly priced: readonly { readonly t: TType }[],
    private readonly size: number,
  ) {
    this.flat = new Float64Array(priced.length * size);
  }

  /** True when `used` fits the largest allocatable of `priced[0..k]` in every dimension. */
  holds(k: number, used: Vec): boolean {
    const { size, flat } = this;
    for (; this.done <= k; this.done++) {
      const alloc = (this.priced[this.done] as { t: TType }).t.alloc;
      const at = this.done * size;
      for (let d = 0; d < size; d++) {
        const before = this.done === 0 ? Number.NEGATIVE_INFINITY : (flat[at - size + d] as number);
        flat[at + d] = Math.max(before, alloc[d] as number);
      }
    }
    const at = k * size;
    for (let d = 0; d < size; d++) if ((used[d] as number) > (flat[at + d] as number)) return false;
    return true;
  }
}

export interface PackShape {
  readonly vec: Vec;
  readonly items: readonly number[];
  /** The first of `items` not yet on a node. */
  next: number;
}

/** One instance type filled from an anchor pod, shrunk to the cheapest type that still fits. */
export interface Fill {
  /** Shapes in the order they were taken, with how many pods of each. */
  readonly picks: readonly (readonly [number, number])[];
  /** Pods taken per shape. */
  readonly taken: readonly number[];
  readonly used: Vec;
  readonly type: TType;
  readonly price: number;
}

/**
 * True when the fill took no more pods of any shape than are still available. Then filling the
 * same type from the same anchor again gives the same fill: fewer pods available only take
 * shapes out of the choice the fill never made again, and the fill's own picks stay available.
 */
export function stillAvailable(taken: readonly number[], avail: readonly number[]): boolean {
  for (let s = 0; s < taken.length; s++) if ((taken[s] as number) > (avail[s] as number)) return false;
  return true;
}

/**
 * Fills `priced[index]` with the anchor pod (the largest shape still available) and then,
 * greedily, the `largest` pod that fits or the one best `aligned` (by dot product) with the free
 * room, among `avail` pods per shape.
 */
export function fillType(p: Packing, index: number, anchor: number, avail: readonly number[]): Fill {
  const { shapes, priced, size } = p;
  const t = (priced[index] as { t: TType }).t;
  const node: NodeFill = {
    taken: new Array<number>(shapes.length).fill(0),
    picks: [],
    used: new Float64Array(size),
    residual: new Float64Array(t.alloc),
  };
  take(node, (shapes[anchor] as PackShape).vec, anchor, 1, p.active);
  // Only the dimensions the pods ask for can refuse one, unless the type has less than nothing to
  // offer in another: then none fits beside the anchor.
  if (!belowZero(p.inactive, t.alloc)) {
    if (p.fill === 'largest') fillLargest(p, node, avail);
    else fillAligned(p, node, avail, t.alloc);
  }
  // The cheapest type that still fits: types before `index` are cheaper (or equal). None before
  // the first k whose prefix maximum holds the node can. The maxima only grow: doubling steps
  // find a prefix that holds (a small node stops near the start of the list), then halving.
  const zero = new Float64Array(size);
  let shrunk = priced[index] as { t: TType; price: number };
  let lo = 0;
  let hi = index;
  for (let step = 1; lo < index; step *= 2) {
    const k = Math.min(lo + step - 1, index - 1);
    if (p.prefixMax.holds(k, node.used)) {
      hi = k;
      break;
    }
    lo = k + 1;
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (p.prefixMax.holds(mid, node.used)) hi = mid;
    else lo = mid + 1;
  }
  for (let k = lo; k < index; k++) {
    const x = priced[k] as { t: TType; price: number };
    if (fits(node.used, zero, x.t.alloc)) {
      shrunk = x;
      break;
    }
  }
  return { picks: node.picks, taken: node.taken, used: node.used, type: shrunk.t, price: shrunk.price };
}

/** A node being filled. */
interface NodeFill {
  readonly taken: number[];
  readonly picks: [number, number][];
  readonly used: Vec;
  readonly residual: Vec;
}

/** Adds `count` pods of the shape; the pods ask nothing outside `active`. */
function take(node: NodeFill, vec: Vec, pick: number, count: number, active: Int32Array): void {
  const { used, residual } = node;
  for (let k = 0; k < count; k++) {
    for (let j = 0; j < active.length; j++) {
      const d = active[j] as number;
      used[d] = (used[d] as number) + (vec[d] as number);
      residual[d] = (residual[d] as number) - (vec[d] as number);
    }
  }
  node.taken[pick] = (node.taken[pick] as number) + count;
  const last = node.picks[node.picks.length - 1];
  if (last !== undefined && last[0] === pick) last[1] += count;
  else node.picks.push([pick, count]);
}

/**
 * Largest first. The scores do not change and a shape that stops fitting never fits again, so
 * this is one pass in size order, taking as many of each shape as fit (the pick would keep
 * choosing it while it does).
 */
function fillLargest(p: Packing, node: NodeFill, avail: readonly number[]): void {
  const { residual, taken } = node;
  const active = p.active;
  for (const s of p.order) {
    const vec = (p.shapes[s] as PackShape).vec;
    let count = (avail[s] as number) - (taken[s] as number);
    if (count <= 0 || !fitsIn(active, vec, residual)) continue;
    for (let j = 0; j < active.length; j++) {
      const d = active[j] as number;
      const need = vec[d] as number;
      if (need > 0) count = Math.min(count, Math.floor((residual[d] as number) / need));
    }
    take(node, vec, s, count, active);
  }
}

/** True when `v` is below zero in one of the `dims` given. */
function belowZero(dims: Int32Array, v: Vec): boolean {
  for (let j = 0; j < dims.length; j++) if ((v[dims[j] as number] as number) < 0) return true;
  return false;
}

/** True when `req ≤ room` in the `dims` given. */
function fitsIn(dims: Int32Array, req: Vec, room: Vec): boolean {
  for (let j = 0; j < dims.length; j++) {
    const d = dims[j] as number;
    if ((req[d] as number) > (room[d] as number)) return false;
  }
  return true;
}

/** One pod at a time, the one best aligned (by dot product) with the free room. */
function fillAligned(p: Packing, node: NodeFill, avail: readonly number[], alloc: Vec): void {
  const { residual, taken } = node;
  const { shapes, active } = p;
  for (;;) {
    let pick = -1;
    let pickScore = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < shapes.length; s++) {
      const sh = shapes[s] as PackShape;
      if ((taken[s] as number) >= (avail[s] as number) || !fitsIn(active, sh.vec, residual)) continue;
      // Dimensions no pod asks for add nothing to the score.
      let score = 0;
      for (let j = 0; j < active.length; j++) {
        const d = active[j] as number;
        const a = alloc[d] as number;
        if (a > 0) score += ((sh.vec[d] as number) / a) * ((residual[d] as number) / a);
      }
      if (score > pickScore) {
        pickScore = score;
        pick = s;
      }
    }
    if (pick < 0) return;
    take(node, (shapes[pick] as PackShape).vec, pick, 1, active);
  }
}
