import {
  type InstanceType,
  Label,
  type NodeClaimPlan,
  type NodeSelectorRequirement,
  type Offering,
} from '../../core/index.ts';

// A consolidation replacement's plan narrowed to the instance types and capacity types that keep
// the savings, priced at the offerings it may launch with (available ones only: an offering backed
// off after insufficient capacity is not one consolidation can count on). Pure.

/** Karpenter's MinInstanceTypesForSpotToSpotConsolidation. */
export const SPOT_TO_SPOT_MIN_TYPES = 15;

/** The values an `In` requirement on `key` allows, or undefined when there is none. */
export function allowedValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
): Set<string> | undefined {
  const r = requirements.find((x) => x.key === key && x.operator === 'In');
  return r === undefined ? undefined : new Set(r.values ?? []);
}

/** `requirements` with `key` required to be one of `values` (any other requirement on it dropped). */
export function withValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
  values: readonly string[],
): NodeSelectorRequirement[] {
  return [...requirements.filter((r) => r.key !== key), { key, operator: 'In', values: [...values] }];
}

/**
 * The price of the cheapest offering of `type` the requirements allow with one of `capacityTypes`
 * (infinite when none), and the capacity type of that price when the catalog only assumes it
 * (every such offering at that price is assumed).
 */
export function priceFor(
  type: InstanceType,
  requirements: readonly NodeSelectorRequirement[],
  capacityTypes: ReadonlySet<string>,
): { readonly price: number; readonly assumed?: string } {
  const zones = allowedValues(requirements, Label.zone);
  let best = Number.POSITIVE_INFINITY;
  let known = false;
  let assumed: string | undefined;
  for (const o of type.offerings as readonly Offering[]) {
    if (!o.available || !capacityTypes.has(o.capacityType)) continue;
    if (zones !== undefined && !zones.has(o.zone)) continue;
    if (o.priceUsdPerHour > best) continue;
    if (o.priceUsdPerHour < best) {
      best = o.priceUsdPerHour;
      known = false;
      assumed = undefined;
    }
    if (o.priceAssumed === true) assumed ??= o.capacityType;
    else known = true;
  }
  return known || assumed === undefined ? { price: best } : { price: best, assumed };
}

/** One replacement, narrowed to the instance types (and capacity type) that keep the savings. */
export function narrowPlan(
  plan: NodeClaimPlan,
  types: ReadonlyMap<string, InstanceType>,
  capacityTypes: ReadonlySet<string>,
  capPerHour: number,
  spotToSpotSingle: boolean,
): { plan: NodeClaimPlan; cheapest: number; cheapestAssumed?: string } | string {
  const assumedOf = new Map<string, string>();
  const priced = plan.instanceTypes
    .flatMap((c) => {
      const type = types.get(c.name);
      const { price, assumed } =
        type === undefined
          ? { price: Number.POSITIVE_INFINITY, assumed: undefined }
          : priceFor(type, plan.requirements, capacityTypes);
      if (!Number.isFinite(price) || price > capPerHour) return [];
      if (assumed !== undefined) assumedOf.set(c.name, assumed);
      return [{ name: c.name, priceUsdPerHour: price }];
    })
    .sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour || a.name.localeCompare(b.name));
  if (priced.length === 0) return "can't replace with a cheaper node";
  if (spotToSpotSingle && priced.length < SPOT_TO_SPOT_MIN_TYPES) {
    return `spot-to-spot consolidation needs at least ${SPOT_TO_SPOT_MIN_TYPES} cheaper instance types, found ${priced.length}`;
  }
  const kept = spotToSpotSingle ? priced.slice(0, SPOT_TO_SPOT_MIN_TYPES) : priced;
  let requirements = withValues(
    plan.requirements,
    Label.instanceType,
    kept.map((t) => t.name),
  );
  requirements = withValues(requirements, Label.capacityType, [...capacityTypes].sort());
  const cheapestAssumed = kept[0] === undefined ? undefined : assumedOf.get(kept[0].name);
  return {
    plan: { ...plan, requirements, instanceTypes: kept },
    cheapest: kept[0]?.priceUsdPerHour ?? Number.POSITIVE_INFINITY,
    ...(cheapestAssumed === undefined ? {} : { cheapestAssumed }),
  };
}
