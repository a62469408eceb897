import type { InstanceType, Offering } from './instance-type.ts';
import { Label, type Labels } from './labels.ts';
import { type NodeSelectorRequirement, Requirements } from './requirements.ts';
import type { ResourceList } from './resources.ts';

// NodeOverlays (karpenter.sh/v1alpha1): what users change on the instance types the scheduling
// simulation sees. Overlays are taken in weight order; for each NodePool, instance type and
// offering they select, the first price change wins and extended resources are added to the
// type's capacity. An overlay that would change the same offering price, or the same resource, as
// an earlier one of equal weight conflicts: it is applied nowhere. Pure.

/** A change to an offering's price (USD per hour). */
export type PriceChange =
  /** `spec.price`: the price, in place of the catalog's. */
  | { readonly kind: 'price'; readonly usd: number }
  /** `spec.priceAdjustment` `+0.1` / `-0.5`: added to the price. */
  | { readonly kind: 'delta'; readonly usd: number }
  /** `spec.priceAdjustment` `+10%` / `-15%`: a percentage of the price added to it. */
  | { readonly kind: 'percent'; readonly percent: number };

/** A NodeOverlay as the core applies it (one that passed validation). */
export interface NodeOverlay {
  readonly name: string;
  /** `spec.weight`; 0 when unset. Higher is applied first. */
  readonly weight: number;
  readonly requirements: readonly NodeSelectorRequirement[];
  readonly price?: PriceChange;
  /** Extended resources added to the capacity of the types selected (never cpu, memory, pods, storage). */
  readonly capacity?: ResourceList;
}

/** A NodePool as overlays see it: its name (`karpenter.sh/nodepool`) and its template labels. */
export interface OverlayPool {
  readonly name: string;
  readonly labels?: Labels;
}

/** What the overlays change on one instance type of one NodePool. */
export interface InstanceTypeOverlay {
  /** By offering key (offeringOverlayKey): the price change applied to that offering. */
  readonly prices: ReadonlyMap<string, PriceChange>;
  /** Resources added to (or replaced in) the type's capacity. */
  readonly capacity: ResourceList;
}

/** The overlays resolved against the NodePools and their instance types. */
export interface OverlayResolution {
  /** NodePool name → instance type name → what changes. */
  readonly updates: ReadonlyMap<string, ReadonlyMap<string, InstanceTypeOverlay>>;
  /** Overlays left out because they conflict with an earlier one of the same weight. */
  readonly conflicts: ReadonlySet<string>;
}

/** No overlay: nothing changes. */
export const NO_OVERLAYS: OverlayResolution = { updates: new Map(), conflicts: new Set() };

/** Resources an overlay may not set: the node's own, which Flotilla computes. */
export const OVERLAY_RESTRICTED_RESOURCES: ReadonlySet<string> = new Set([
  'cpu',
  'memory',
  'ephemeral-storage',
  'pods',
]);

const PRICE = /^\d+(\.\d+)?$/;
const ADJUSTMENT = /^(([+-]\d*\.?\d+)|(\+\d*\.?\d+%)|(-\d{1,2}(\.\d+)?%)|(-100%))$/;

/**
 * Reads `spec.price` / `spec.priceAdjustment` (at most one may be set).
 * @returns the change, undefined when neither is set, or a sentence saying what is wrong.
 */
export function parsePriceChange(
  price: string | undefined,
  adjustment: string | undefined,
): PriceChange | undefined | { readonly problem: string } {
  if (price !== undefined && adjustment !== undefined) {
    return { problem: "cannot set both 'price' and 'priceAdjustment'" };
  }
  if (price !== undefined) {
    if (!PRICE.test(price))
      return { problem: `price ${JSON.stringify(price)} is not a non-negative decimal` };
    return { kind: 'price', usd: Number(price) };
  }
  if (adjustment === undefined) return undefined;
  if (!ADJUSTMENT.test(adjustment)) {
    return {
      problem: `priceAdjustment ${JSON.stringify(adjustment)} is neither a signed amount (+0.1, -0.5) nor a signed percentage (+10%, -15%, at most -100%)`,
    };
  }
  return adjustment.endsWith('%')
    ? { kind: 'percent', percent: Number(adjustment.slice(0, -1)) }
    : { kind: 'delta', usd: Number(adjustment) };
}

/** The price after a change, floored at 0 (as Karpenter adjusts offering prices). */
export function adjustPrice(priceUsdPerHour: number, change: PriceChange): number {
  const next =
    change.kind === 'price'
      ? change.usd
      : change.kind === 'delta'
        ? priceUsdPerHour + change.usd
        : priceUsdPerHour * (1 + change.percent / 100);
  return next >= 0 ? next : 0;
}

/** Overlays in the order they apply: weight descending, then name descending (as Karpenter). */
export function orderNodeOverlays<O extends Pick<NodeOverlay, 'name' | 'weight'>>(
  overlays: readonly O[],
): O[] {
  return [...overlays].sort(
    (a, b) => b.weight - a.weight || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0),
  );
}

/** The key an offering's price change is kept under: capacity type, zone, reservation. */
export function offeringOverlayKey(
  offering: Pick<Offering, 'capacityType' | 'zone' | 'reservationId'>,
): string {
  return `${offering.capacityType}/${offering.zone}/${offering.reservationId ?? ''}`;
}

/** The labels a type has in a pool, apart from its offerings' (zone, capacity type). */
function typeLabels(pool: OverlayPool, type: InstanceType): Labels {
  return { ...type.labels, ...(pool.labels ?? {}), [Label.nodePool]: pool.name };
}

/** An overlay's requirements, split into those on a type's labels and those on an offering's. */
function splitRequirements(overlay: NodeOverlay): { type: Requirements; offering: Requirements } {
  const reqs = Requirements.parse(overlay.requirements, {
    object: `nodeOverlay "${overlay.name}"`,
    field: 'spec.requirements',
  });
  const onOffering = [...reqs.values()].filter((r) => r.key === Label.zone || r.key === Label.capacityType);
  return { type: reqs.without(Label.zone, Label.capacityType), offering: Requirements.of(onOffering) };
}

interface Tracked {
  /** Offering key → the price applied and the weight of the last overlay that selected it. */
  readonly prices: Map<string, { change: PriceChange; lastWeight: number }>;
  readonly capacity: Record<string, number>;
  /** The weight and resources of the last overlay that set capacity on the type. */
  lastCapacity?: { weight: number; resources: readonly string[] };
}

/**
 * Resolves overlays (valid ones; any order) against NodePools and their instance types, as
 * Karpenter's NodeOverlay controller does: in weight order, an overlay selects, per NodePool, the
 * offerings whose labels (the type's, the NodePool's template labels, `karpenter.sh/nodepool`,
 * zone and capacity type) satisfy its requirements. A price change applies to an offering no
 * earlier overlay priced; capacity adds the resources no earlier overlay set. An overlay whose
 * price selects an offering last selected by an overlay of the same weight, or whose capacity
 * shares a resource with the last one of the same weight on a type, conflicts in every pool and
 * applies nowhere.
 */
export function resolveNodeOverlays(
  overlays: readonly NodeOverlay[],
  pools: readonly OverlayPool[],
  typesOf: (pool: OverlayPool) => readonly InstanceType[],
): OverlayResolution {
  if (overlays.length === 0) return NO_OVERLAYS;
  const state = new Map<string, Map<string, Tracked>>();
  const conflicts = new Set<string>();
  const types = new Map(pools.map((p) => [p.name, typesOf(p)]));
  for (const overlay of orderNodeOverlays(overlays)) {
    const reqs = splitRequirements(overlay);
    // Every selection first, then the conflict check, then the writes: an overlay is all or nothing.
    const selections: { pool: string; type: string; offerings: string[] }[] = [];
    for (const pool of pools) {
      for (const type of types.get(pool.name) ?? []) {
        if (!reqs.type.matchesLabels(typeLabels(pool, type))) continue;
        const offerings = type.offerings
          .filter((o) =>
            reqs.offering.matchesLabels({ [Label.zone]: o.zone, [Label.capacityType]: o.capacityType }),
          )
          .map(offeringOverlayKey);
        if (offerings.length > 0) selections.push({ pool: pool.name, type: type.name, offerings });
      }
    }
    const tracked = (pool: string, type: string): Tracked | undefined => state.get(pool)?.get(type);
    const conflicting = selections.some(({ pool, type, offerings }) => {
      const t = tracked(pool, type);
      if (t === undefined) return false;
      if (
        overlay.price !== undefined &&
        offerings.some((k) => t.prices.get(k)?.lastWeight === overlay.weight)
      ) {
        return true;
      }
      const resources = Object.keys(overlay.capacity ?? {});
      return (
        t.lastCapacity !== undefined &&
        t.lastCapacity.weight === overlay.weight &&
        resources.some((r) => t.lastCapacity?.resources.includes(r))
      );
    });
    if (conflicting) {
      conflicts.add(overlay.name);
      continue;
    }
    for (const { pool, type, offerings } of selections) {
      if (overlay.price === undefined && overlay.capacity === undefined) continue;
      const byType = state.get(pool) ?? new Map<string, Tracked>();
      state.set(pool, byType);
      const t: Tracked = byType.get(type) ?? { prices: new Map(), capacity: {} };
      byType.set(type, t);
      if (overlay.price !== undefined) {
        for (const key of offerings) {
          const seen = t.prices.get(key);
          t.prices.set(key, { change: seen?.change ?? overlay.price, lastWeight: overlay.weight });
        }
      }
      if (overlay.capacity !== undefined) {
        // Higher weight takes precedence: a resource an earlier overlay set keeps its amount.
        for (const [resource, amount] of Object.entries(overlay.capacity)) {
          if (!(resource in t.capacity)) t.capacity[resource] = amount;
        }
        t.lastCapacity = { weight: overlay.weight, resources: Object.keys(overlay.capacity) };
      }
    }
  }
  const updates = new Map<string, Map<string, InstanceTypeOverlay>>();
  for (const [pool, byType] of state) {
    const out = new Map<string, InstanceTypeOverlay>();
    for (const [type, t] of byType) {
      out.set(type, {
        prices: new Map([...t.prices].map(([k, v]) => [k, v.change])),
        capacity: { ...t.capacity },
      });
    }
    updates.set(pool, out);
  }
  return { updates, conflicts };
}

/**
 * A NodePool's instance types with the resolved overlays applied: offering prices changed (and
 * marked `priceOverlaid`), extended resources added to capacity (so to allocatable). Types the
 * overlays do not touch are returned as they are.
 */
export function applyNodeOverlays(
  resolution: OverlayResolution,
  poolName: string,
  types: readonly InstanceType[],
): readonly InstanceType[] {
  const byType = resolution.updates.get(poolName);
  if (byType === undefined) return types;
  return types.map((type) => {
    const update = byType.get(type.name);
    if (update === undefined) return type;
    const offerings =
      update.prices.size === 0
        ? type.offerings
        : type.offerings.map((o) => {
            const change = update.prices.get(offeringOverlayKey(o));
            return change === undefined
              ? o
              : { ...o, priceUsdPerHour: adjustPrice(o.priceUsdPerHour, change), priceOverlaid: true };
          });
    const capacity =
      Object.keys(update.capacity).length === 0 ? type.capacity : { ...type.capacity, ...update.capacity };
    return { ...type, capacity, offerings };
  });
}
