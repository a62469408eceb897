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

/**
 * `requirements` with `key` required to be one of `values` (any other requirement on it dropped),
 * asking for `minValues` of them when given.
 */
export function withValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
  values: readonly string[],
  minValues?: number,
): NodeSelectorRequirement[] {
  return [
    ...requirements.filter((r) => r.key !== key),
    { key, operator: 'In', values: [...values], ...(minValues === undefined ? {} : { minValues }) },
  ];
}

/** Why a consolidation finds no replacement among the types cheaper than its candidates. */
export const CANT_REPLACE = "can't replace with a cheaper node";

/**
 * How many of `types` (cheapest first) it takes to offer every requirement's `minValues` distinct
 * values (zones and capacity types among the offerings they may launch with), or why they cannot.
 */
function typesForMinValues(
  requirements: readonly NodeSelectorRequirement[],
  types: readonly InstanceType[],
  capacityTypes: ReadonlySet<string>,
): number | string {
  let needed = 0;
  for (const r of requirements) {
    if (r.minValues === undefined) continue;
    const seen = new Set<string>();
    let at = 0;
    for (; at < types.length && seen.size < r.minValues; at++) {
      for (const v of valuesOf(types[at] as InstanceType, r.key, requirements, capacityTypes)) seen.add(v);
    }
    if (seen.size < r.minValues) {
      return `Filtering by price: minValues of ${r.key} is ${r.minValues}, the cheaper instance types offer ${seen.size}`;
    }
    needed = Math.max(needed, at);
  }
  return needed;
}

/** The values of `key` a node of `type` may have under `requirements`: an offering's for zone and capacity type. */
function valuesOf(
  type: InstanceType,
  key: string,
  requirements: readonly NodeSelectorRequirement[],
  capacityTypes: ReadonlySet<string>,
): string[] {
  if (key !== Label.zone && key !== Label.capacityType) {
    const v = type.labels[key];
    return v === undefined ? [] : [v];
  }
  const zones = allowedValues(requirements, Label.zone);
  return (type.offerings as readonly Offering[]).flatMap((o) =>
    launchable(o, zones, capacityTypes) ? [key === Label.zone ? o.zone : o.capacityType] : [],
  );
}

/** Whether a replacement may launch with `o`: available, in an allowed zone and capacity type. */
function launchable(
  o: Offering,
  zones: ReadonlySet<string> | undefined,
  capacityTypes: ReadonlySet<string>,
): boolean {
  return o.available && capacityTypes.has(o.capacityType) && (zones === undefined || zones.has(o.zone));
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
    if (!launchable(o, zones, capacityTypes) || o.priceUsdPerHour > best) continue;
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
  if (priced.length === 0) return CANT_REPLACE;
  // The cheaper types must still offer every minValues of the plan (Karpenter's price filter).
  const typed = priced.map((c) => types.get(c.name) as InstanceType);
  const needed = typesForMinValues(plan.requirements, typed, capacityTypes);
  if (typeof needed === 'string') return needed;
  if (spotToSpotSingle && priced.length < SPOT_TO_SPOT_MIN_TYPES) {
    return `spot-to-spot consolidation needs at least ${SPOT_TO_SPOT_MIN_TYPES} cheaper instance types, found ${priced.length}`;
  }
  // Spot to spot launches from the cheapest 15, or as many as its minValues need.
  const kept = spotToSpotSingle ? priced.slice(0, Math.max(SPOT_TO_SPOT_MIN_TYPES, needed)) : priced;
  const minValuesOf = (key: string) => plan.requirements.find((r) => r.key === key)?.minValues;
  let requirements = withValues(
    plan.requirements,
    Label.instanceType,
    kept.map((t) => t.name),
    minValuesOf(Label.instanceType),
  );
  requirements = withValues(
    requirements,
    Label.capacityType,
    [...capacityTypes].sort(),
    minValuesOf(Label.capacityType),
  );
  const cheapestAssumed = kept[0] === undefined ? undefined : assumedOf.get(kept[0].name);
  return {
    plan: { ...plan, requirements, instanceTypes: kept },
    cheapest: kept[0]?.priceUsdPerHour ?? Number.POSITIVE_INFINITY,
    ...(cheapestAssumed === undefined ? {} : { cheapestAssumed }),
  };
}
