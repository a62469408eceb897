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
  /** Ends the heartbeat (before the lease is released); waits for a renewal in flight. */
  stop(): Promise<void>;
}

/** A renewal that fails when the lease has less than this left counts as the lease lost. */
const LEASE_MARGIN_MS = 10_000;

export interface HoldLeaseOptions {
  /**
   * Renew every this many ms while the pass runs, whatever it is waiting on (a slow AWS or API
   * call must not let the lease run out under a live pass). Default: a third of the TTL; 0: none.
   */
  readonly heartbeatMs?: number;
}

export function holdLease(
  ports: { readonly leases: LeaseStore; readonly clock: Clock; readonly logger: Logger },
  first: Lease,
  ttl: number,
  options: HoldLeaseOptions = {},
): HeldLease {
  let lease = first;
  let lost = false;
  let inFlight: Promise<void> | undefined;
  const renewOnce = async () => {
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
  // One renewal at a time: a caller that asks while one is in flight shares it.
  const renew = (): Promise<void> => {
    if (lost) return Promise.resolve();
    inFlight ??= renewOnce().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const heartbeatMs = options.heartbeatMs ?? Math.floor((ttl * 1000) / 3);
  const timer =
    heartbeatMs > 0
      ? setInterval(() => {
          if (lost) clearInterval(timer);
          else void renew();
        }, heartbeatMs)
      : undefined;
  // The heartbeat never keeps a process alive on its own.
  timer?.unref();
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
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await inFlight;
    },
  };
}
