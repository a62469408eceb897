// NodePool limits: what existing capacity consumes, what each planned NodeClaim reserves (the
// largest type it may still launch as, as Karpenter's `subtractMax`), and which types fit.
import { formatQuantity } from '../quantity.ts';
import type { ResourceList } from '../resources.ts';
import type { TType } from './instance-type-filter.ts';
import type { Bin, Template } from './model.ts';

/** Subtracts a node's capacity (and one node) from the pool's remaining limits. */
export function consumeLimits(t: Template, capacity: ResourceList): void {
  const remaining = t.remaining;
  if (remaining === undefined) return;
  for (const [k, v] of remaining) {
    remaining.set(k, v - (k === 'nodes' ? 1 : (capacity[k] ?? 0)));
  }
}

/** Per limited resource (except `nodes`), the largest capacity among `types`. */
export function maxCapacity(template: Template, types: readonly TType[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of template.remaining?.keys() ?? []) {
    if (k === 'nodes') continue;
    let m = 0;
    for (const t of types) m = Math.max(m, t.capacity[k] ?? 0);
    out.set(k, m);
  }
  return out;
}

/**
 * The types a claim can still launch as: its cheapest `maxTypes` (all of them when a minValues
 * requirement may pull in pricier ones). Limits reserve the largest of these, and the plan only
 * offers types within the reservation, so no launch can exceed a limit.
 */
export function launchable(bin: Bin, types: readonly TType[], maxTypes: number): readonly TType[] {
  if (types.length <= maxTypes) return types;
  for (const r of bin.reqs.values()) if (r.minValues !== undefined) return types;
  return types.slice(0, maxTypes);
}

/** True when the type fits within what the claim reserved against the limits. */
export function withinReservation(bin: Bin, t: TType): boolean {
  if (bin.reserve === undefined) return true;
  for (const [k, v] of bin.reserve) if ((t.capacity[k] ?? 0) > v) return false;
  return true;
}

/** Remaining-limit bookkeeping for the NodePools of one solve. */
export class Limits {
  private readonly maxCapacityCache = new Map<number, Map<string, number>>();

  constructor(private readonly maxTypes: number) {}

  /** True when every limited resource has room for the largest instance type of the pool. */
  slack(t: Template): boolean {
    const remaining = t.remaining;
    if (remaining === undefined) return true;
    let max = this.maxCapacityCache.get(t.order);
    if (max === undefined) {
      max = maxCapacity(t, t.types);
      this.maxCapacityCache.set(t.order, max);
    }
    for (const [k, v] of max) if ((remaining.get(k) ?? 0) < v) return false;
    return true;
  }

  /** Narrows `types` so the claim's reservation stays within the pool's limits; may be empty. */
  withinLimits(bin: Bin, types: readonly TType[]): readonly TType[] {
    const template = bin.template as Template;
    const remaining = template.remaining;
    if (remaining === undefined || this.slack(template)) return types;
    const budget = new Map<string, number>();
    for (const [k, v] of remaining) if (k !== 'nodes') budget.set(k, v + (bin.reserve?.get(k) ?? 0));
    const fitsBudget = (t: TType): boolean => {
      for (const [k, v] of budget) if ((t.capacity[k] ?? 0) > v) return false;
      return true;
    };
    if (launchable(bin, types, this.maxTypes).every(fitsBudget)) return types;
    return types.filter(fitsBudget);
  }

  /**
   * For a new claim: the types whose capacity fits the remaining limits, or the reason none does.
   */
  affordable(t: Template, types: readonly TType[]): readonly TType[] | string {
    const remaining = t.remaining;
    if (remaining === undefined || this.slack(t)) return types;
    const affordable = types.filter((tt) => {
      for (const [k, v] of remaining) if (k !== 'nodes' && (tt.capacity[k] ?? 0) > v) return false;
      return true;
    });
    if (affordable.length > 0) return affordable;
    const limited = [...remaining.entries()].filter(([k]) => k !== 'nodes');
    return `limits ${limited.map(([k]) => `${k} ${formatQuantity(k, t.pool.limits?.[k] ?? 0)}`).join(', ')} leave room for no instance type that fits (remaining ${limited.map(([k, v]) => `${k} ${formatQuantity(k, Math.max(0, v))}`).join(', ')})`;
  }

  /**
   * Moves the claim's reservation to the largest type it can now launch as (`types` must be the
   * claim's new candidate list).
   */
  reserve(bin: Bin, types: readonly TType[]): void {
    const template = bin.template as Template;
    if (template.remaining === undefined) return;
    const reserve = maxCapacity(template, launchable(bin, types, this.maxTypes));
    const previous = bin.reserve;
    for (const [k, v] of reserve) {
      template.remaining.set(k, (template.remaining.get(k) ?? 0) + (previous?.get(k) ?? 0) - v);
    }
    bin.reserve = reserve;
  }
}
