import type { Clock } from '../../ports/clock.ts';
import type { Lease, LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';

/** The pass's lease, renewed as the pass goes on; `lost` once a renewal found it taken. */
export interface HeldLease {
  current(): Lease;
  lost(): boolean;
  /** Extends the lease by its TTL from now (the pass calls it before each step that may take long). */
  renew(): Promise<void>;
  /** Whether the lease is still this pass's, read consistently (before the effects of a command). */
  confirm(): Promise<boolean>;
}

/** A renewal that fails when the lease has less than this left counts as the lease lost. */
const LEASE_MARGIN_MS = 10_000;

export function holdLease(
  ports: { readonly leases: LeaseStore; readonly clock: Clock; readonly logger: Logger },
  first: Lease,
  ttl: number,
): HeldLease {
  let lease = first;
  let lost = false;
  const renew = async () => {
    if (lost) return;
    try {
      const renewed = await ports.leases.renew(lease, ports.clock.now(), ttl);
      if (renewed === undefined) lost = true;
      else lease = renewed;
    } catch (error) {
      // A renewal that fails leaves the lease as it was; the next one tries again, unless it is
      // about to run out, when another pass may take it.
      if (lease.expiresAtMs - ports.clock.now().getTime() < LEASE_MARGIN_MS) lost = true;
      ports.logger.warn('disruption lease not renewed', { error, lost });
    }
  };
  return {
    current: () => lease,
    lost: () => lost,
    renew,
    async confirm() {
      await renew();
      if (lost) return false;
      if (!(await ports.leases.isHeld(lease, ports.clock.now()))) lost = true;
      return !lost;
    },
  };
}
