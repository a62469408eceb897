import { type OfferingKey, offeringKeyString } from '../../ports/cloud.ts';
import type { UnavailableOffering, UnavailableOfferings } from '../../ports/state.ts';

/**
 * ICE back-offs held in memory, for the simulator: the same contract as the DynamoDB table
 * (expiry checked on read against the given instant, re-marking extends the back-off).
 */
export function makeMemoryUnavailableOfferings(): UnavailableOfferings {
  const entries = new Map<string, UnavailableOffering>();
  return {
    async mark(offerings: readonly OfferingKey[], reason: string, now: Date, ttlSeconds: number) {
      const untilMs = now.getTime() + ttlSeconds * 1000;
      for (const o of offerings) {
        entries.set(offeringKeyString(o), {
          instanceType: o.instanceType,
          zone: o.zone,
          capacityType: o.capacityType,
          ...(o.reservationId === undefined ? {} : { reservationId: o.reservationId }),
          ...(o.placementGroupId === undefined ? {} : { placementGroupId: o.placementGroupId }),
          ...(o.partition === undefined ? {} : { partition: o.partition }),
          untilMs,
          reason,
        });
      }
    },
    async list(now: Date) {
      const out = new Map<string, UnavailableOffering>();
      for (const [key, entry] of entries) {
        if (entry.untilMs > now.getTime()) out.set(key, entry);
        else entries.delete(key);
      }
      return out;
    },
  };
}
