import type { CapacityType } from '../core/index.ts';

// The unit of EC2 capacity the ports and their errors speak of.

/**
 * One (instance type × zone × capacity type), the unit EC2 runs out of; a reserved offering is
 * one capacity reservation's, so its key names the reservation too, and in a placement group the
 * group (and partition) are part of it.
 */
export interface OfferingKey {
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  /** The capacity reservation of a reserved offering. */
  readonly reservationId?: string;
  /** The placement group the launch went into: EC2 runs out of room in a group on its own. */
  readonly placementGroupId?: string;
  /** The partition of a `partition` placement group the launch targeted (`1`…N). */
  readonly partition?: string;
}

/**
 * `<capacityType>:<instanceType>:<zone>[:<reservationId>][:<placementGroupId>[:<partition>]]`,
 * Karpenter's ICE-cache key: a full reservation backs off that reservation only, not the other
 * reservations of its type and zone; a group (or partition) out of room backs off only there.
 */
export function offeringKeyString(key: OfferingKey): string {
  const base = `${key.capacityType}:${key.instanceType}:${key.zone}`;
  const reserved = key.reservationId === undefined ? base : `${base}:${key.reservationId}`;
  if (key.placementGroupId === undefined) return reserved;
  return key.partition === undefined
    ? `${reserved}:${key.placementGroupId}`
    : `${reserved}:${key.placementGroupId}:${key.partition}`;
}

/**
 * Whether an offering is backed off: its own key, or (in a placement group) the group-wide key
 * of a launch that let EC2 choose the partition.
 */
export function isBackedOff(unavailable: ReadonlySet<string>, key: OfferingKey): boolean {
  // Usually nothing is backed off: every offering of every type asks, so no key is built then.
  if (unavailable.size === 0) return false;
  if (unavailable.has(offeringKeyString(key))) return true;
  if (key.partition === undefined) return false;
  const { partition: _, ...groupWide } = key;
  return unavailable.has(offeringKeyString(groupWide));
}
