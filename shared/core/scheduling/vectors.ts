import { formatQuantity } from '../quantity.ts';
import type { ResourceList } from '../resources.ts';

/** A resource vector over the dimensions of one solve (see Dims). */
export type Vec = Float64Array;

/** The value of dimension `d` of `v`, 0 when either is missing. */
export function dimOf(v: Vec | undefined, d: number | undefined): number {
  return d === undefined || v === undefined ? 0 : (v[d] ?? 0);
}

/** The resource names of one solve, each mapped to a vector index. */
export class Dims {
  readonly names: string[] = [];
  readonly index = new Map<string, number>();

  add(list: ResourceList | undefined): void {
    if (list === undefined) return;
    for (const name of Object.keys(list)) {
      if (!this.index.has(name)) {
        this.index.set(name, this.names.length);
        this.names.push(name);
      }
    }
  }

  vec(list: ResourceList | undefined): Vec {
    const v = new Float64Array(this.names.length);
    if (list === undefined) return v;
    for (const [name, value] of Object.entries(list)) {
      const i = this.index.get(name);
      if (i !== undefined) v[i] = value;
    }
    return v;
  }

  list(v: Vec): ResourceList {
    const out: Record<string, number> = {};
    this.names.forEach((name, i) => {
      const x = v[i] ?? 0;
      if (x !== 0) out[name] = x;
    });
    return out;
  }
}

/** True when `used + req ≤ cap` in every dimension. */
export function fits(used: Vec, req: Vec, cap: Vec): boolean {
  for (let i = 0; i < req.length; i++) {
    if ((used[i] as number) + (req[i] as number) > (cap[i] as number)) return false;
  }
  return true;
}

export function addInto(target: Vec, v: Vec): void {
  for (let i = 0; i < v.length; i++) target[i] = (target[i] as number) + (v[i] as number);
}

/** `1 cpu, 2Gi memory`: the non-zero entries of a vector. */
export function formatList(dims: Dims, v: Vec): string {
  const parts: string[] = [];
  dims.names.forEach((name, i) => {
    const x = v[i] ?? 0;
    if (x > 0) parts.push(`${formatQuantity(name, x)} ${name}`);
  });
  return parts.join(', ');
}
