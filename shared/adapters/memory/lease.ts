import type { Lease, LeaseStore } from '../../ports/lease.ts';

/**
 * Leases held in memory, for the simulator: the same contract as the DynamoDB store. Each
 * acquisition bumps the fencing token; a release expires the lease but keeps its token, so the
 * next holder's token is larger still.
 */
export function makeMemoryLeaseStore(): LeaseStore {
  const leases = new Map<string, Lease>();
  const releasedAt = new Map<string, number>();
  const marks = new Map<string, number>();
  const held = (current: Lease | undefined, lease: Lease) =>
    current !== undefined && current.holder === lease.holder && current.token === lease.token;
  return {
    async acquire(name, holder, now, ttlSeconds) {
      const current = leases.get(name);
      if (current !== undefined && current.expiresAtMs >= now.getTime() && current.holder !== holder) {
        return undefined;
      }
      const previousUntilMs =
        current === undefined ? undefined : (releasedAt.get(name) ?? current.expiresAtMs);
      const previousMarkMs = marks.get(name);
      const lease: Lease = {
        name,
        holder,
        token: (current?.token ?? 0) + 1,
        expiresAtMs: now.getTime() + ttlSeconds * 1000,
        ...(previousUntilMs === undefined ? {} : { previousUntilMs }),
        ...(previousMarkMs === undefined ? {} : { previousMarkMs }),
      };
      leases.set(name, lease);
      releasedAt.delete(name);
      return lease;
    },
    async renew(lease, now, ttlSeconds) {
      const current = leases.get(lease.name);
      if (!held(current, lease) || (current?.expiresAtMs ?? 0) < now.getTime()) return undefined;
      const renewed: Lease = { ...lease, expiresAtMs: now.getTime() + ttlSeconds * 1000 };
      leases.set(lease.name, renewed);
      return renewed;
    },
    async isHeld(lease, now) {
      const current = leases.get(lease.name);
      return held(current, lease) && (current?.expiresAtMs ?? 0) >= now.getTime();
    },
    async release(lease, now, markMs) {
      const current = leases.get(lease.name);
      if (current !== undefined && held(current, lease)) {
        leases.set(lease.name, { ...current, expiresAtMs: 0 });
        if (now !== undefined) releasedAt.set(lease.name, now.getTime());
        if (markMs !== undefined) marks.set(lease.name, markMs);
      }
    },
  };
}
