// NodePool limits: what existing capacity consumes, what each planned NodeClaim reserves, and which
// types fit. While planning, a claim reserves the type it is planned to launch as (its target);
// once the plan is made, `finish` hands what the limits leave over to the claims, each in turn
// widening its candidates up to that, and narrows every claim to the types its reservation
// covers. So a limit the plan does not reach changes no choice of instance type, and a limit it
// does reach narrows the claims' candidates rather than their sizes or their number (Karpenter
// reserves the largest candidate of each claim, `subtractMax`, so a limit costs flexibility and
// money well before it is reached). A claim with minValues requirements keeps Karpenter's rule.
import { formatQuantity } from '../quantity.ts';
import type { ResourceList } from '../resources.ts';
import {
  CLUSTER_COST_SOURCE,
  COST_KEY,
  type CostContext,
  formatCost,
  POOL_COST_SOURCE,
  RemainingLimits,
  toMicros,
} from './cost-limits.ts';
import type { TType } from './instance-type-filter.ts';
import { type Bin, type Template, target } from './model.ts';

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
 * requirement may pull in pricier ones). The plan only offers types within the claim's
 * reservation, so no launch can exceed a limit.
 */
export function launchable(bin: Bin, types: readonly TType[], maxTypes: number): readonly TType[] {
  if (types.length <= maxTypes) return types;
  if (hasMinValues(bin)) return types;
  return types.slice(0, maxTypes);
}

/** True when one of the claim's requirements has minValues. */
export function hasMinValues(bin: Bin): boolean {
  for (const r of bin.reqs.values()) if (r.minValues !== undefined) return true;
  return false;
}

/** True when the type fits within what the claim reserved against the limits. */
export function withinReservation(bin: Bin, t: TType): boolean {
  if (bin.reserve === undefined) return true;
  for (const [k, v] of bin.reserve) if ((t.capacity[k] ?? 0) > v) return false;
  return true;
}

/** Remaining-limit bookkeeping for the NodePools of one solve. */
export class Limits {
  /** Per pool (template order), the largest capacity of its types per limited resource. */
  private readonly maxCapacityCache = new Map<number, { keys: string[]; values: number[] }>();

  /** The solve's dollar limits, when any applies (set once the templates are built). */
  cost: CostContext | undefined;
  private readonly unpricedCache = new Map<number, string | undefined>();
  /** Per pool, `widest` per candidate list. */
  private readonly widestCache = new Map<number, WeakMap<readonly TType[], Map<string, number>>>();

  constructor(private readonly maxTypes: number) {}

  /** True when every limited resource has room for the largest instance type of the pool. */
  slack(t: Template): boolean {
    const remaining = t.remaining;
    if (remaining === undefined) return true;
    let max = this.maxCapacityCache.get(t.order);
    if (max === undefined) {
      const byKey = maxCapacity(t, t.types);
      max = { keys: [...byKey.keys()], values: [...byKey.values()] };
      this.maxCapacityCache.set(t.order, max);
    }
    for (let i = 0; i < max.keys.length; i++) {
      if ((remaining.get(max.keys[i] as string) ?? 0) < (max.values[i] as number)) return false;
    }
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
    if (remaining === undefined) return types;
    const unknown = this.unpriced(t);
    if (unknown !== undefined) return unknown;
    if (this.slack(t)) return types;
    const limited = [...remaining.entries()].filter(([k]) => k !== 'nodes' && k !== COST_KEY);
    const byResource =
      limited.length === 0
        ? types
        : types.filter((tt) => {
            for (const [k, v] of limited) if ((tt.capacity[k] ?? 0) > v) return false;
            return true;
          });
    if (byResource.length === 0) {
      const heldBy = t.pool.limitsHeldBy === undefined ? '' : ` (${t.pool.limitsHeldBy})`;
      return `limits ${limited.map(([k]) => `${k} ${formatQuantity(k, t.pool.limits?.[k] ?? 0)}`).join(', ')}${heldBy} leave room for no instance type that fits (remaining ${limited.map(([k, v]) => `${k} ${formatQuantity(k, Math.max(0, v))}`).join(', ')})`;
    }
    const cost = remaining.get(COST_KEY);
    if (cost === undefined) return byResource;
    const affordable = byResource.filter((tt) => (tt.capacity[COST_KEY] ?? 0) <= cost);
    if (affordable.length > 0) return affordable;
    const cheapest = Math.min(...byResource.map((tt) => tt.capacity[COST_KEY] ?? 0));
    return `${this.costLimitName(t)} leaves room for no instance type that fits (remaining ${formatCost(Math.max(0, cost))}; the cheapest that fits may launch at up to ${formatCost(cheapest)})`;
  }

  /** `dollar limit $5.0000/h (the NodePool annotation …)`: the limit that binds the pool now. */
  private costLimitName(t: Template): string {
    const remaining = t.remaining;
    const cluster = remaining instanceof RemainingLimits && remaining.costBinding() === 'cluster';
    const limit =
      cluster || t.pool.costLimit === undefined || !('usdPerHour' in t.pool.costLimit)
        ? (this.cost?.clusterLimitMicros ?? 0)
        : toMicros(t.pool.costLimit.usdPerHour);
    return `dollar limit ${formatCost(limit)} (${cluster ? CLUSTER_COST_SOURCE : POOL_COST_SOURCE})`;
  }

  /**
   * Why a dollar-limited pool cannot launch: a node or NodeClaim that counts against its limit (or
   * the cluster's) has no known price, so what is left cannot be known.
   */
  private unpriced(t: Template): string | undefined {
    // The existing capacity is all counted before the first new claim: one answer per pool.
    if (this.unpricedCache.has(t.order)) return this.unpricedCache.get(t.order);
    const reason = this.unpricedReason(t);
    this.unpricedCache.set(t.order, reason);
    return reason;
  }

  private unpricedReason(t: Template): string | undefined {
    const cost = this.cost;
    if (cost === undefined || t.remaining?.has(COST_KEY) !== true) return undefined;
    const own = t.pool.costLimit !== undefined ? (cost.unpriced.get(t.pool.name) ?? []) : [];
    const all = cost.cluster !== undefined ? (cost.unpriced.get('') ?? []) : [];
    const names = [...new Set([...own, ...all])].sort();
    if (names.length === 0) return undefined;
    const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? ` and ${names.length - 5} more` : '');
    return `dollar limit cannot be judged: no price is known for ${shown}`;
  }

  /**
   * The largest capacity per limited resource among the types the claim may launch as, with no
   * limit in reach: the same for every claim with the same candidate list (shared, never changed).
   */
  private widest(template: Template, bin: Bin): Map<string, number> {
    let byTypes = this.widestCache.get(template.order);
    if (byTypes === undefined) {
      byTypes = new WeakMap();
      this.widestCache.set(template.order, byTypes);
    }
    let out = byTypes.get(bin.types);
    if (out === undefined) {
      out = maxCapacity(template, launchable(bin, bin.types, this.maxTypes));
      byTypes.set(bin.types, out);
    }
    return out;
  }

  /** `widest` with a limit in reach: only the types within the claim's reservation plus what is left. */
  private widestWithin(template: Template, bin: Bin): Map<string, number> {
    const remaining = template.remaining as Map<string, number>;
    const budget = new Map<string, number>();
    for (const [k, v] of bin.reserve ?? []) budget.set(k, v + Math.max(0, remaining.get(k) ?? 0));
    const fits = bin.types.filter((t) => {
      for (const [k, v] of budget) if ((t.capacity[k] ?? 0) > v) return false;
      return true;
    });
    return maxCapacity(template, launchable(bin, fits, this.maxTypes));
  }

  /**
   * Moves the claim's reservation to the type it is planned to launch as (`types` must be the
   * claim's new candidate list, `bin.planned` already set); with minValues requirements, to the
   * largest type it may launch as.
   */
  reserve(bin: Bin, types: readonly TType[]): void {
    const template = bin.template as Template;
    if (template.remaining === undefined) return;
    if (hasMinValues(bin)) {
      this.moveReservation(template, bin, maxCapacity(template, launchable(bin, types, this.maxTypes)));
      return;
    }
    const planned = types.length === 0 ? undefined : target(bin);
    // The same type reserves the same capacity: nothing moves.
    if (planned !== undefined && planned === bin.reservedFor && bin.reserve !== undefined) return;
    this.moveReservation(template, bin, maxCapacity(template, planned === undefined ? [] : [planned]));
    bin.reservedFor = planned;
  }

  private moveReservation(template: Template, bin: Bin, reserve: Map<string, number>): void {
    const remaining = template.remaining as Map<string, number>;
    const previous = bin.reserve;
    for (const [k, v] of reserve) remaining.set(k, (remaining.get(k) ?? 0) + (previous?.get(k) ?? 0) - v);
    bin.reserve = reserve;
    bin.reservedFor = undefined;
  }

  /**
   * Once the plan is made: what the limits leave over goes to the claims in turn (plan order), each
   * reserving the largest type it may launch as within its own reservation plus what is left, so
   * the plan offers every claim the types its reservation covers and no more. The claims of one
   * pool never reserve more, in sum, than its limits leave.
   */
  finish(claims: readonly Bin[]): void {
    for (const bin of claims) {
      const template = bin.template as Template | undefined;
      if (template?.remaining === undefined || bin.reserve === undefined || hasMinValues(bin)) continue;
      const widest = this.slack(template) ? this.widest(template, bin) : this.widestWithin(template, bin);
      // Never below what the claim holds already (its target is among the types that fit).
      let widened = widest;
      for (const [k, v] of bin.reserve) {
        const w = widened.get(k);
        if (w !== undefined && w >= v) continue;
        if (widened === widest) widened = new Map(widest);
        widened.set(k, Math.max(v, w ?? 0));
      }
      this.moveReservation(template, bin, widened);
    }
  }
}
