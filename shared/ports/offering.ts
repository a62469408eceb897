import type { CapacityType } from '../core/index.ts';

// The unit of EC2 capacity the ports and their errors speak of.

/** One (instance type × zone × capacity type), the unit EC2 runs out of. */
export interface OfferingKey {
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  /** The placement group the launch went into: EC2 runs out of room in a group on its own. */
  readonly placementGroupId?: string;
  /** The partition of a `partition` placement group the launch targeted (`1`…N). */
  readonly partition?: string;
}

/**
 * `<capacityType>:<instanceType>:<zone>[:<placementGroupId>[:<partition>]]`, Karpenter's
 * ICE-cache key.
 */
export function offeringKeyString(key: OfferingKey): string {
  const base = `${key.capacityType}:${key.instanceType}:${key.zone}`;
  if (key.placementGroupId === undefined) return base;
  return key.partition === undefined
    ? `${base}:${key.placementGroupId}`
    : `${base}:${key.placementGroupId}:${key.partition}`;
}

/**
 * Whether an offering is backed off: its own key, or (in a placement group) the group-wide key
 * of a launch that let EC2 choose the partition.
 */
export function isBackedOff(unavailable: ReadonlySet<string>, key: OfferingKey): boolean {
  if (unavailable.has(offeringKeyString(key))) return true;
  const { partition, ...groupWide } = key;
  return partition !== undefined && unavailable.has(offeringKeyString(groupWide));
}
