// Capacity reservations in a plan: each reservation takes only as many new NodeClaims as it has
// room for, and a NodeClaim that gets a place is pinned to it.
import { type InstanceType, type Offering, reservationPreference } from '../instance-type.ts';
import { Label } from '../labels.ts';
import { Requirement, Requirements } from '../requirements.ts';
import type { NodeClaimPlan, UnschedulablePod } from '../scheduling-types.ts';

/**
 * What a NodeClaim does when every capacity reservation it could use is already taken by the
 * plan's other NodeClaims: `strict` (provisioning, as Karpenter) leaves it out, and its pods wait
 * for the next loop (no fallback to other capacity or lower-weight NodePools in this one);
 * `fallback` (disruption's simulations) launches it on spot or on-demand instead.
 */
export type ReservedOfferingMode = 'strict' | 'fallback';

export interface ReservationResult {
  readonly nodeClaims: readonly NodeClaimPlan[];
  /** Pods of the NodeClaims left out in strict mode. */
  readonly unschedulable: readonly UnschedulablePod[];
}

const OFFERING_KEYS = [
  Label.zone,
  Label.capacityType,
  Label.capacityReservationId,
  Label.capacityReservationInterruptible,
  Label.placementGroupPartition,
] as const;

function offeringAllowed(o: Offering, reqs: Requirements): boolean {
  const labels: Record<string, string | undefined> = {
    [Label.zone]: o.zone,
    [Label.capacityType]: o.capacityType,
    [Label.capacityReservationId]: o.reservationId,
    [Label.capacityReservationInterruptible]:
      o.capacityType === 'reserved' ? String(o.reservationInterruptible === true) : undefined,
    [Label.placementGroupPartition]: o.partition,
  };
  return OFFERING_KEYS.every((key) => reqs.get(key)?.admits(labels[key]) ?? true);
}

interface Place {
  readonly type: string;
  readonly offering: Offering & { readonly reservationId: string };
}

/** Whether a list of instance types offers any capacity reservation, kept per list. */
const reservationsOffered = new WeakMap<readonly InstanceType[], boolean>();

function offersReservations(types: readonly InstanceType[]): boolean {
  let offered = reservationsOffered.get(types);
  if (offered === undefined) {
    offered = types.some((t) =>
      t.offerings.some((o) => o.capacityType === 'reserved' && o.reservationId !== undefined),
    );
    reservationsOffered.set(types, offered);
  }
  return offered;
}

/**
 * Gives each planned NodeClaim, in plan order, a place in the cheapest capacity reservation it is
 * compatible with that still has room (its offering's `reservationCapacity` less the NodeClaims
 * already given a place; of equal prices, as `reservationPreference` orders them), and pins it
 * there: capacity type `reserved`, the reservation's zone, `karpenter.k8s.aws/capacity-reservation-id`,
 * whether it is interruptible and its instance type. A NodeClaim compatible with
 * no available reservation is left as it is. One compatible only with reservations that are full
 * by now is handled per `mode`. Pure.
 */
export function assignReservations(
  plans: readonly NodeClaimPlan[],
  instanceTypes: ReadonlyMap<string, readonly InstanceType[]>,
  mode: ReservedOfferingMode,
): ReservationResult {
  if (plans.length === 0 || ![...instanceTypes.values()].some(offersReservations)) {
    return { nodeClaims: plans, unschedulable: [] };
  }
  const byClass = new Map(
    [...instanceTypes].map(([name, types]) => [name, new Map(types.map((t) => [t.name, t]))]),
  );
  const room = new Map<string, number>();
  const nodeClaims: NodeClaimPlan[] = [];
  const unschedulable: UnschedulablePod[] = [];
  for (const plan of plans) {
    const reqs = Requirements.parse(plan.requirements, {
      object: `nodeClaim "${plan.name}"`,
      field: 'spec.requirements',
    });
    const types = byClass.get(plan.nodeClassName) ?? new Map<string, InstanceType>();
    const places: Place[] = [];
    for (const candidate of plan.instanceTypes) {
      for (const o of types.get(candidate.name)?.offerings ?? []) {
        if (o.capacityType !== 'reserved' || !o.available || o.reservationId === undefined) continue;
        if (!offeringAllowed(o, reqs)) continue;
        if (!room.has(o.reservationId)) room.set(o.reservationId, o.reservationCapacity ?? 1);
        places.push({ type: candidate.name, offering: { ...o, reservationId: o.reservationId } });
      }
    }
    if (places.length === 0) {
      nodeClaims.push(plan);
      continue;
    }
    places.sort(
      (a, b) =>
        a.offering.priceUsdPerHour - b.offering.priceUsdPerHour ||
        reservationPreference(a.offering) - reservationPreference(b.offering) ||
        a.offering.reservationId.localeCompare(b.offering.reservationId),
    );
    const place = places.find((p) => (room.get(p.offering.reservationId) ?? 0) > 0);
    if (place !== undefined) {
      room.set(place.offering.reservationId, (room.get(place.offering.reservationId) ?? 0) - 1);
      nodeClaims.push(pinned(plan, reqs, place));
      continue;
    }
    const ids = [...new Set(places.map((p) => p.offering.reservationId))];
    const fallback = mode === 'fallback' ? withoutReserved(plan, reqs, types) : undefined;
    if (fallback !== undefined) {
      nodeClaims.push(fallback);
      continue;
    }
    const reason = `the capacity reservations it fits (${ids.join(', ')}) are taken by other new NodeClaims; its pods are planned again in the next loop`;
    for (const pod of plan.pods) {
      unschedulable.push({
        pod,
        reasons: [{ nodePool: plan.nodePoolName, reason }],
        message: `nodePool ${plan.nodePoolName}: ${reason}`,
      });
    }
  }
  return { nodeClaims, unschedulable };
}

function pinned(plan: NodeClaimPlan, reqs: Requirements, place: Place): NodeClaimPlan {
  const next = reqs.replacing([
    Requirement.in(Label.capacityType, ['reserved']),
    Requirement.in(Label.zone, [place.offering.zone]),
    Requirement.in(Label.capacityReservationId, [place.offering.reservationId]),
    Requirement.in(Label.capacityReservationInterruptible, [
      String(place.offering.reservationInterruptible === true),
    ]),
    Requirement.in(Label.instanceType, [place.type]),
  ]);
  return {
    ...plan,
    labels: { ...plan.labels, ...next.singleValuedLabels() },
    requirements: next.toSelectors(),
    instanceTypes: [{ name: place.type, priceUsdPerHour: place.offering.priceUsdPerHour }],
  };
}

/** The NodeClaim on its other capacity types, repriced; undefined when it has none left. */
function withoutReserved(
  plan: NodeClaimPlan,
  reqs: Requirements,
  types: ReadonlyMap<string, InstanceType>,
): NodeClaimPlan | undefined {
  const notReserved = Requirement.parse(
    { key: Label.capacityType, operator: 'NotIn', values: ['reserved'] },
    { object: `nodeClaim "${plan.name}"`, field: 'spec.requirements' },
  );
  const next = reqs.with(notReserved);
  const candidates = plan.instanceTypes.flatMap((c) => {
    let best = Number.POSITIVE_INFINITY;
    for (const o of types.get(c.name)?.offerings ?? []) {
      if (o.available && o.capacityType !== 'reserved' && offeringAllowed(o, next)) {
        best = Math.min(best, o.priceUsdPerHour);
      }
    }
    return Number.isFinite(best) ? [{ name: c.name, priceUsdPerHour: best }] : [];
  });
  if (candidates.length === 0) return undefined;
  candidates.sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour || a.name.localeCompare(b.name));
  const names = new Set(candidates.map((c) => c.name));
  const withTypes = next.replacing([Requirement.in(Label.instanceType, [...names])]);
  return {
    ...plan,
    labels: { ...plan.labels, ...withTypes.singleValuedLabels() },
    requirements: withTypes.toSelectors(),
    instanceTypes: candidates,
  };
}
