import type { InstanceType, Offering } from '../instance-type.ts';
import { INSTANCE_TYPE_LABEL_KEYS, Label, type Labels, OFFERING_LABEL_KEYS } from '../labels.ts';
import { Requirement, type Requirements } from '../requirements.ts';
import type { ResourceList } from '../resources.ts';
import type { Vec } from './vectors.ts';

/** An instance type compiled for one NodePool: DaemonSet overhead and allowed offerings applied. */
export interface TType {
  readonly it: InstanceType;
  readonly labels: Labels;
  /** allocatable − DaemonSet overhead. */
  readonly alloc: Vec;
  readonly daemon: Vec;
  readonly capacity: ResourceList;
  /** Available offerings the NodePool allows. */
  readonly offerings: readonly Offering[];
  readonly basePrice: number;
}

export interface TypeFilter {
  readonly labelReqs: readonly Requirement[];
  readonly zone: Requirement | undefined;
  readonly capacityType: Requirement | undefined;
  /** A placement-group partition requirement, matched per offering. */
  readonly partition: Requirement | undefined;
  /** A `capacity-reservation-interruptible` requirement, matched per offering. */
  readonly interruptible: Requirement | undefined;
}

const typeFilterCache = new WeakMap<Requirements, TypeFilter>();

export function typeFilterOf(reqs: Requirements): TypeFilter {
  let f = typeFilterCache.get(reqs);
  if (f !== undefined) return f;
  const labelReqs: Requirement[] = [];
  for (const r of reqs.values()) {
    if (r.key === Label.zone || r.key === Label.capacityType || r.isAny()) continue;
    if (OFFERING_LABEL_KEYS.has(r.key)) continue;
    if (INSTANCE_TYPE_LABEL_KEYS.has(r.key)) labelReqs.push(r);
  }
  const zone = reqs.get(Label.zone);
  const capacityType = reqs.get(Label.capacityType);
  const partition = reqs.get(Label.placementGroupPartition);
  const interruptible = reqs.get(Label.capacityReservationInterruptible);
  f = {
    labelReqs,
    zone: zone?.isAny() ? undefined : zone,
    capacityType: capacityType?.isAny() ? undefined : capacityType,
    partition: partition?.isAny() ? undefined : partition,
    interruptible: interruptible?.isAny() ? undefined : interruptible,
  };
  typeFilterCache.set(reqs, f);
  return f;
}

export function offeringAllowed(o: Offering, f: TypeFilter): boolean {
  return (
    o.available &&
    (f.zone === undefined || f.zone.has(o.zone)) &&
    (f.capacityType === undefined || f.capacityType.has(o.capacityType)) &&
    (f.partition === undefined || f.partition.admits(o.partition)) &&
    (f.interruptible === undefined || f.interruptible.admits(interruptibleValue(o)))
  );
}

/** A reserved offering's `capacity-reservation-interruptible` (`true`/`false`); none for others. */
function interruptibleValue(o: Offering): string | undefined {
  return o.capacityType === 'reserved' ? String(o.reservationInterruptible === true) : undefined;
}

/**
 * The value an offering gives an offering label key (zone, capacity type, partition, whether its
 * reservation is interruptible).
 */
export function offeringValue(o: Offering, key: string): string | undefined {
  switch (key) {
    case Label.zone:
      return o.zone;
    case Label.capacityType:
      return o.capacityType;
    case Label.capacityReservationInterruptible:
      return interruptibleValue(o);
    default:
      return o.partition;
  }
}

export function typeMatches(t: TType, f: TypeFilter): boolean {
  for (const r of f.labelReqs) if (!r.admits(t.labels[r.key])) return false;
  if (
    f.zone === undefined &&
    f.capacityType === undefined &&
    f.partition === undefined &&
    f.interruptible === undefined
  )
    return t.offerings.length > 0;
  for (const o of t.offerings) if (offeringAllowed(o, f)) return true;
  return false;
}

export function cheapestPrice(t: TType, f: TypeFilter): number {
  let best = Number.POSITIVE_INFINITY;
  for (const o of t.offerings)
    if (o.priceUsdPerHour < best && offeringAllowed(o, f)) best = o.priceUsdPerHour;
  return best;
}

export type Merge =
  | { readonly ok: true; readonly reqs: Requirements }
  | { readonly ok: false; readonly reason: string };

/**
 * Narrows a node template's requirements by a pod's. On the node side a key the template does
 * not mention is absent on the node, unless the instance type supplies it.
 */
export function mergeRequirements(node: Requirements, pod: Requirements, what: string): Merge {
  if (pod.size === 0) return { ok: true, reqs: node };
  const changed: Requirement[] = [];
  for (const p of pod.values()) {
    if (p.isAny()) continue;
    const n = node.get(p.key);
    const base = n ?? (INSTANCE_TYPE_LABEL_KEYS.has(p.key) ? undefined : Requirement.absent(p.key));
    const merged = base === undefined ? p : base.intersect(p);
    if (merged.isEmpty()) {
      return {
        ok: false,
        reason: `pod requires ${p}, ${what} ${n === undefined ? `has no label ${p.key}` : `has ${n}`}`,
      };
    }
    if (n === undefined || merged.toString() !== n.toString() || merged.minValues !== n.minValues) {
      changed.push(merged);
    }
  }
  return { ok: true, reqs: node.replacing(changed) };
}

/** A readable minValues failure, or undefined when every minValues is met. */
export function minValuesShortfall(types: readonly TType[], reqs: Requirements): string | undefined {
  for (const r of reqs.values()) {
    if (r.minValues === undefined) continue;
    const n = distinctValues(types, r.key, reqs).size;
    if (n < r.minValues) {
      return `minValues: ${r.key} needs ${r.minValues} distinct values, the instance types that fit offer ${n}`;
    }
  }
  return undefined;
}

/**
 * Under the BestEffort minValues policy: each minValues the types do not meet lowered to the
 * distinct values they offer (none left when they offer none), as the NodeClaim records it: an
 * `In` requirement may not ask for more values than it lists.
 */
export function relaxMinValues(reqs: Requirements, types: readonly TType[]): Requirements {
  const lowered: Requirement[] = [];
  for (const r of reqs.values()) {
    if (r.minValues === undefined) continue;
    const n = distinctValues(types, r.key, reqs).size;
    if (n < r.minValues) lowered.push(r.withMinValues(n > 0 ? n : undefined));
  }
  return lowered.length === 0 ? reqs : reqs.replacing(lowered);
}

function distinctValues(types: readonly TType[], key: string, reqs: Requirements): Set<string> {
  const out = new Set<string>();
  const f = typeFilterOf(reqs);
  for (const t of types) {
    if (OFFERING_LABEL_KEYS.has(key)) {
      for (const o of t.offerings) {
        const v = offeringValue(o, key);
        if (v !== undefined && offeringAllowed(o, f)) out.add(v);
      }
    } else {
      const v = t.labels[key];
      if (v !== undefined) out.add(v);
    }
  }
  return out;
}

/** Cheapest first, at most maxTypes, keeping enough types to meet every minValues. */
export function truncate<T extends { readonly t: TType }>(
  priced: readonly T[],
  reqs: Requirements,
  maxTypes: number,
): T[] {
  if (priced.length <= maxTypes) return [...priced];
  const withMin = [...reqs.values()].filter((r) => r.minValues !== undefined);
  const f = typeFilterOf(reqs);
  const picked = new Set<number>();
  for (const r of withMin) {
    const seen = new Set<string>();
    priced.forEach((x, i) => {
      if (seen.size >= (r.minValues ?? 0)) return;
      const values =
        r.key === Label.zone || r.key === Label.capacityType
          ? x.t.offerings
              .filter((o) => offeringAllowed(o, f))
              .map((o) => (r.key === Label.zone ? o.zone : o.capacityType))
          : [x.t.labels[r.key]].filter((v): v is string => v !== undefined);
      if (values.some((v) => !seen.has(v))) {
        for (const v of values) seen.add(v);
        picked.add(i);
      }
    });
  }
  for (let i = 0; i < priced.length && picked.size < maxTypes; i++) picked.add(i);
  return [...picked].sort((a, b) => a - b).map((i) => priced[i] as T);
}
