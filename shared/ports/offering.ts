import type { CapacityType } from '../core/index.ts';

// The unit of EC2 capacity the ports and their errors speak of.

/** One (instance type × zone × capacity type), the unit EC2 runs out of. */
export interface OfferingKey {
  readonly instanceType: string;
  readonly zone: string;
  readonly capacityType: CapacityType;
}

/** `<capacityType>:<instanceType>:<zone>`, Karpenter's ICE-cache key. */
export function offeringKeyString(key: OfferingKey): string {
  return `${key.capacityType}:${key.instanceType}:${key.zone}`;
}
