import { beforeEach, describe, expect, it } from 'vitest';
import type { LeaseStore } from '../../shared/ports/lease.ts';

const t0 = new Date('2026-05-01T12:00:00Z');
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

/**
 * What every LeaseStore promises (shared/ports/lease.ts), run against the DynamoDB store on moto
 * and the simulator's in-memory one. `makeStore` gives an empty store for every test.
 */
export function describeLeaseContract(name: string, makeStore: () => Promise<LeaseStore>): void {
  describe(`LeaseStore contract: ${name}`, () => {
    let store: LeaseStore;

    beforeEach(async () => {
      store = await makeStore();
    });

    it('lets exactly one of ten concurrent invocations take the lease', async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.acquire('provisioner', `invocation-${i}`, t0, 30)),
      );
      const winners = results.filter((lease) => lease !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ name: 'provisioner', token: 1, expiresAtMs: at(30).getTime() });
    });

    it('hands an expired lease to the next invocation with a new fencing token', async () => {
      const first = await store.acquire('provisioner', 'a', t0, 30);
      expect(first?.token).toBe(1);
      expect(await store.acquire('provisioner', 'b', at(29), 30)).toBeUndefined();
      const second = await store.acquire('provisioner', 'b', at(31), 30);
      expect(second).toMatchObject({ holder: 'b', token: 2 });
      if (!first || !second) throw new Error('unreachable');
      // The first holder has lost it: no renewal, and its fencing check fails.
      expect(await store.isHeld(first, at(32))).toBe(false);
      expect(await store.renew(first, at(32), 30)).toBeUndefined();
      expect(await store.isHeld(second, at(32))).toBe(true);
    });

    it('renews a held lease and reports it not held once it expires', async () => {
      const lease = await store.acquire('provisioner', 'a', t0, 30);
      if (!lease) throw new Error('no lease');
      const renewed = await store.renew(lease, at(20), 30);
      expect(renewed).toMatchObject({ token: 1, expiresAtMs: at(50).getTime() });
      if (!renewed) throw new Error('no renewal');
      expect(await store.isHeld(renewed, at(49))).toBe(true);
      expect(await store.isHeld(renewed, at(51))).toBe(false);
    });

    it('releases early so the next invocation need not wait, but never releases a lease it lost', async () => {
      const a = await store.acquire('provisioner', 'a', t0, 30);
      if (!a) throw new Error('no lease');
      await store.release(a);
      const b = await store.acquire('provisioner', 'b', at(1), 30);
      expect(b).toMatchObject({ holder: 'b', token: 2 });
      if (!b) throw new Error('no lease');
      await store.release(a);
      expect(await store.isHeld(b, at(2))).toBe(true);
    });

    it('tells the next holder until when the previous one held the lease: its release, else its expiry', async () => {
      const a = await store.acquire('disruption', 'a', t0, 30);
      expect(a?.previousUntilMs).toBeUndefined();
      if (!a) throw new Error('no lease');
      await store.release(a, at(12));
      const b = await store.acquire('disruption', 'b', at(20), 30);
      expect(b).toMatchObject({ holder: 'b', token: 2, previousUntilMs: at(12).getTime() });
      // b dies holding it: c learns when b's lease ran out.
      const c = await store.acquire('disruption', 'c', at(60), 30);
      expect(c).toMatchObject({ holder: 'c', token: 3, previousUntilMs: at(50).getTime() });
    });

    it('hands the last mark a holder left on release to every later holder, until another is left', async () => {
      const a = await store.acquire('disruption', 'a', t0, 30);
      expect(a?.previousMarkMs).toBeUndefined();
      if (!a) throw new Error('no lease');
      await store.release(a, at(10), at(5).getTime());
      const b = await store.acquire('disruption', 'b', at(20), 30);
      expect(b).toMatchObject({ token: 2, previousMarkMs: at(5).getTime() });
      if (!b) throw new Error('no lease');
      // b leaves no mark (its work did not get that far): c goes on from a's.
      await store.release(b, at(25));
      const c = await store.acquire('disruption', 'c', at(30), 30);
      expect(c).toMatchObject({ token: 3, previousMarkMs: at(5).getTime() });
      if (!c) throw new Error('no lease');
      await store.release(c, at(40), at(35).getTime());
      // A lost lease leaves no mark.
      await store.release(b, at(41), at(99).getTime());
      const d = await store.acquire('disruption', 'd', at(45), 30);
      expect(d).toMatchObject({ token: 4, previousMarkMs: at(35).getTime() });
    });

    it('keeps leases of different names apart', async () => {
      expect(await store.acquire('provisioner', 'a', t0, 30)).toBeDefined();
      expect(await store.acquire('disruption', 'b', t0, 30)).toBeDefined();
    });
  });
}
