// Dollar limits (Flotilla's own; Karpenter has none): a NodePool's maximum cost per hour and the
// cluster's. A solve counts them as one more limited resource, COST_KEY, in micro-dollars per hour
// (integers, so sums are exact): an existing node or a launched NodeClaim spends its offering's
// price, and a NodeClaim not launched yet (or planned in this solve) reserves the highest price any
// offering the pool allows of its candidate types could launch at, as a claim reserves its largest
// candidate's capacity. So a plan never launches past a limit, whichever offering the fleet picks.
// The cluster's limit is shared: each pool's remaining cost is the lesser of its own and the
// cluster's, and spending in one pool spends the cluster's too (RemainingLimits). Pure.
import type { InstanceType } from '../instance-type.ts';
import { Label, type Labels } from '../labels.ts';
import type { NodePool } from '../node-pool.ts';
import type { NodeSelectorRequirement } from '../requirements.ts';
import type { SolveInput } from '../scheduling-types.ts';

/** The limits key of cost: not a valid Kubernetes resource name, so no resource can collide. */
export const COST_KEY = '$/h';

/** USD per hour → integer micro-dollars per hour. */
export function toMicros(usdPerHour: number): number {
  return Math.round(usdPerHour * 1_000_000);
}

/** `$1.2345/h` from micro-dollars per hour. */
export function formatCost(micros: number): string {
  if (!Number.isFinite(micros)) return micros < 0 ? 'unknown' : 'unlimited';
  return `$${(micros / 1_000_000).toFixed(4)}/h`;
}

/** A shared amount: the cluster's remaining cost, spent by every pool. */
export interface CostCell {
  value: number;
}

/**
 * A pool's remaining limits. Its COST_KEY entry reads as the lesser of the pool's own remaining cost
 * and the cluster's (`cluster`), and a write moves both by the same amount, so every pool's spending
 * counts against the cluster. Every other key is a plain entry.
 */
export class RemainingLimits extends Map<string, number> {
  private readonly cluster: CostCell | undefined;

  constructor(own: Iterable<readonly [string, number]>, cluster: CostCell | undefined) {
    super();
    this.cluster = cluster;
    for (const [k, v] of own) super.set(k, v);
    if (cluster !== undefined && !super.has(COST_KEY)) super.set(COST_KEY, Number.POSITIVE_INFINITY);
  }

  override get(key: string): number | undefined {
    const own = super.get(key);
    if (key !== COST_KEY || this.cluster === undefined) return own;
    return Math.min(own ?? Number.POSITIVE_INFINITY, this.cluster.value);
  }

  override set(key: string, value: number): this {
    // Before the constructor sets `cluster` (Map's own constructor adds no entries here).
    if (key !== COST_KEY || this.cluster === undefined) return super.set(key, value);
    const delta = value - (this.get(key) as number);
    this.cluster.value += delta;
    return super.set(key, (super.get(key) ?? Number.POSITIVE_INFINITY) + delta);
  }

  /** Which limit the remaining cost is: the pool's own, or the cluster's when that is lower. */
  costBinding(): 'pool' | 'cluster' {
    const own = super.get(COST_KEY) ?? Number.POSITIVE_INFINITY;
    return this.cluster !== undefined && this.cluster.value < own ? 'cluster' : 'pool';
  }

  override *entries(): MapIterator<[string, number]> {
    for (const k of super.keys()) yield [k, this.get(k) as number];
  }

  override *values(): MapIterator<number> {
    for (const k of super.keys()) yield this.get(k) as number;
  }

  override [Symbol.iterator](): MapIterator<[string, number]> {
    return this.entries();
  }

  override forEach(
    fn: (value: number, key: string, map: Map<string, number>) => void,
    thisArg?: unknown,
  ): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
}

/** Where a pool's dollar limit comes from, for the reason a pod is refused. */
export const POOL_COST_SOURCE = 'the NodePool annotation flotilla.io/max-cost-per-hour';
export const CLUSTER_COST_SOURCE = "the cluster's maxCostPerHour";

/** The solve's cost accounting: the cluster's cell, and the nodes whose price is unknown. */
export interface CostContext {
  readonly cluster: CostCell | undefined;
  readonly clusterLimitMicros: number | undefined;
  /** Every instance type of the solve by name, to price a node of a pool not in the solve. */
  readonly anyType: ReadonlyMap<string, InstanceType>;
  /** Per NodePool ('' for the cluster as a whole), nodes and NodeClaims with no known price. */
  readonly unpriced: Map<string, string[]>;
  /** Per NodePool with types of its own, its types by name (filled as asked). */
  readonly poolTypes: Map<string, ReadonlyMap<string, InstanceType>>;
}

/** The cost context of a solve, or undefined when no dollar limit applies to it. */
export function costContext(input: SolveInput): CostContext | undefined {
  const clusterLimit = input.options?.maxCostPerHour;
  if (clusterLimit === undefined && !input.nodePools.some((p) => p.costLimit !== undefined)) return undefined;
  const anyType = new Map<string, InstanceType>();
  for (const types of [...(input.poolInstanceTypes?.values() ?? []), ...input.instanceTypes.values()]) {
    for (const t of types) if (!anyType.has(t.name)) anyType.set(t.name, t);
  }
  const clusterLimitMicros = clusterLimit === undefined ? undefined : toMicros(clusterLimit);
  return {
    cluster: clusterLimitMicros === undefined ? undefined : { value: clusterLimitMicros },
    clusterLimitMicros,
    anyType,
    unpriced: new Map(),
    poolTypes: new Map(),
  };
}

/** Whether a pool's launches are bounded in dollars (its own limit, or the cluster's). */
export function costLimited(pool: NodePool, ctx: CostContext | undefined): boolean {
  return ctx !== undefined && (ctx.cluster !== undefined || pool.costLimit !== undefined);
}

/**
 * What a node or launched NodeClaim costs, in micro-dollars per hour: its offering's price (type,
 * zone and capacity type from its labels) among `types`, else the highest price of its type; undefined
 * when its type is unknown.
 */
export function nodePriceMicros(
  labels: Labels | undefined,
  typeOf: (name: string) => InstanceType | undefined,
): number | undefined {
  const name = labels?.[Label.instanceType];
  const type = name === undefined ? undefined : typeOf(name);
  if (type === undefined || type.offerings.length === 0) return undefined;
  const own = type.offerings.find(
    (o) => o.zone === labels?.[Label.zone] && o.capacityType === labels?.[Label.capacityType],
  );
  if (own !== undefined) return toMicros(own.priceUsdPerHour);
  return Math.max(...type.offerings.map((o) => toMicros(o.priceUsdPerHour)));
}

/** The highest price among offerings, in micro-dollars per hour (what a launch may cost at most). */
export function maxOfferingMicros(offerings: readonly { readonly priceUsdPerHour: number }[]): number {
  let max = 0;
  for (const o of offerings) max = Math.max(max, toMicros(o.priceUsdPerHour));
  return max;
}

/** What a node or in-flight NodeClaim carries that prices it. */
export interface Priced {
  /** Instance type, zone and capacity type (a NodeClaim's, not a Node's own), once launched. */
  readonly labels?: Labels | undefined;
  /** A NodeClaim not launched yet: its candidate types and requirements. */
  readonly candidates?: readonly string[];
  readonly requirements?: readonly NodeSelectorRequirement[];
}

/**
 * What a node or in-flight NodeClaim of `poolName` spends against the dollar limits, in
 * micro-dollars per hour: its running offering's price once launched (labels), else the highest
 * price any offering its requirements allow of its candidate types may launch at. Undefined when
 * no price is known; it is then recorded as unpriced for its pool and the cluster, and no
 * dollar-limited launch it counts against goes ahead.
 */
export function spendOf(
  ctx: CostContext,
  input: SolveInput,
  poolName: string,
  name: string,
  priced: Priced,
): number | undefined {
  const typeOf = poolTypeLookup(ctx, input, poolName);
  const { labels, candidates } = priced;
  let price = labels?.[Label.instanceType] === undefined ? undefined : nodePriceMicros(labels, typeOf);
  if (price === undefined && labels?.[Label.instanceType] === undefined && candidates !== undefined) {
    const allowed = (key: string) =>
      priced.requirements?.find((r) => r.key === key && r.operator === 'In')?.values ?? undefined;
    const zones = allowed(Label.zone);
    const capacityTypes = allowed(Label.capacityType);
    const offerings = candidates.flatMap((n) =>
      (typeOf(n)?.offerings ?? []).filter(
        (o) =>
          (zones === undefined || zones.includes(o.zone)) &&
          (capacityTypes === undefined || capacityTypes.includes(o.capacityType)),
      ),
    );
    if (candidates.length > 0 && candidates.every((n) => typeOf(n) !== undefined) && offerings.length > 0) {
      price = maxOfferingMicros(offerings);
    }
  }
  if (price !== undefined) return price;
  for (const key of [poolName, '']) {
    const list = ctx.unpriced.get(key) ?? [];
    list.push(name);
    ctx.unpriced.set(key, list);
  }
  return undefined;
}

/**
 * What a node of a pool with no NodeClaim of its own spends: its labels may come from the cluster
 * summary, so it counts at the highest price any type its pool allows may launch at (`poolTypes`,
 * the pool's template), or, for a pool outside the solve, any type of the solve.
 */
export function unclaimedSpend(
  ctx: CostContext,
  poolTypes: readonly { readonly offerings: readonly { readonly priceUsdPerHour: number }[] }[] | undefined,
): number {
  let max = 0;
  for (const t of poolTypes ?? ctx.anyType.values()) max = Math.max(max, maxOfferingMicros(t.offerings));
  return max;
}

/** Instance types by name for a pool: its own (NodeOverlays applied) first, then any class's. */
function poolTypeLookup(ctx: CostContext, input: SolveInput, poolName: string) {
  const own = input.poolInstanceTypes?.get(poolName);
  if (own === undefined) return (n: string) => ctx.anyType.get(n);
  let byName = ctx.poolTypes.get(poolName);
  if (byName === undefined) {
    byName = new Map(own.map((t) => [t.name, t]));
    ctx.poolTypes.set(poolName, byName);
  }
  const found = byName;
  return (n: string) => found.get(n) ?? ctx.anyType.get(n);
}

/** `capacity` with its price under COST_KEY (none when unknown), for consumeLimits. */
export function withCost(
  capacity: Readonly<Record<string, number>>,
  price: number | undefined,
): Record<string, number> {
  const out: Record<string, number> = { ...capacity };
  if (price === undefined) delete out[COST_KEY];
  else out[COST_KEY] = price;
  return out;
}
