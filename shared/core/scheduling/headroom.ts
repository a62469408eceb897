import { type Bin, target } from './model.ts';
import type { Vec } from './vectors.ts';

/** Bins per headroom block (2^BLOCK_SHIFT). */
export const BLOCK_SHIFT = 6;
export const BLOCK_MASK = (1 << BLOCK_SHIFT) - 1;

/**
 * Per block of 2^BLOCK_SHIFT bins, an upper bound on their headroom (what fits at no extra cost:
 * the free room of an existing node, or of the type a planned claim is expected to launch as). Lets the
 * scan for a free fit skip whole blocks. Raised whenever a bin's headroom grows; tightened lazily
 * when a scanned block turns out to hold nothing that fits.
 */
export class HeadroomIndex {
  private readonly blocks: Vec[] = [];
  /** 1 when a bin in the block lost headroom since the block's bound was computed. */
  private dirty = new Uint8Array(64);
  private readonly scratch: Vec;

  constructor(private readonly size: number) {
    this.scratch = new Float64Array(size);
  }

  /** The bound of the block holding bin index `i`, if any bin was added there. */
  bound(i: number): Vec | undefined {
    return this.blocks[i >> BLOCK_SHIFT];
  }

  isDirty(block: number): boolean {
    return this.dirty[block] === 1;
  }

  /** A bin lost headroom (a pod was added). */
  markDirty(index: number): void {
    const b = index >> BLOCK_SHIFT;
    if (b >= this.dirty.length) {
      const grown = new Uint8Array(b * 2 + 64);
      grown.set(this.dirty);
      this.dirty = grown;
    }
    this.dirty[b] = 1;
  }

  /** A bin was added or its headroom may have grown. */
  raise(bin: Bin): void {
    const b = bin.index >> BLOCK_SHIFT;
    let max = this.blocks[b];
    if (max === undefined) {
      max = new Float64Array(this.size).fill(Number.NEGATIVE_INFINITY);
      this.blocks[b] = max;
    }
    const h = headroomOf(bin, this.scratch);
    for (let i = 0; i < h.length; i++) if ((h[i] as number) > (max[i] as number)) max[i] = h[i] as number;
  }

  /** Recomputes block `b` exactly from its bins. */
  tighten(b: number, bins: readonly Bin[]): void {
    const max = new Float64Array(this.size).fill(Number.NEGATIVE_INFINITY);
    const end = Math.min(bins.length, (b + 1) << BLOCK_SHIFT);
    for (let j = b << BLOCK_SHIFT; j < end; j++) {
      const h = headroomOf(bins[j] as Bin, this.scratch);
      for (let i = 0; i < h.length; i++) if ((h[i] as number) > (max[i] as number)) max[i] = h[i] as number;
    }
    this.blocks[b] = max;
    this.dirty[b] = 0;
  }
}

function headroomOf(bin: Bin, out: Vec): Vec {
  const cap = bin.kind === 'claim' ? target(bin).alloc : (bin.cap as Vec);
  for (let i = 0; i < out.length; i++) out[i] = (cap[i] as number) - (bin.used[i] as number);
  return out;
}
