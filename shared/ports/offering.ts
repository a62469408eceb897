import type { CapacityType } from '../core/index.ts';

// The unit of EC2 capacity the ports and their errors speak of.

/**
 * One (instance type × zone × capacity type), the unit EC2 runs out of; a reserved offering is
 * one capacity reservation's, so its key names the reservation too.
 */
export interface OfferingKey {
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
  /** The capacity reservation of a reserved offering. */
  readonly reservationId?: string;
}

/**
 * `<capacityType>:<instanceType>:<zone>[:<reservationId>]`, Karpenter's ICE-cache key: a full
 * reservation backs off that reservation only, not the other reservations of its type and zone.
 */
export function offeringKeyString(key: OfferingKey): string {
  const base = `${key.capacityType}:${key.instanceType}:${key.zone}`;
  return key.reservationId === undefined ? base : `${base}:${key.reservationId}`;
}
