import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { makeMemoryLeaseStore } from '../../../../shared/adapters/memory/lease.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { holdLease } from '../../../../shared/usecases/disruption/pass-lease.ts';

const TTL_SECONDS = 45;

/**
 * A pass blocked in one long call (a DescribeInstances that takes 100 s of the clock), while
 * another pass tries to take the lease; returns whether it could and whether the pass still holds it.
 */
async function longCall(heartbeatMs: number) {
  const leases = makeMemoryLeaseStore();
  const clock = makeManualClock();
  const logger = makeLogger({}, { sink: () => {} });
  const first = await leases.acquire('disruption', 'pass-1', clock.now(), TTL_SECONDS);
  if (first === undefined) throw new Error('the lease is free at the start');
  const held = holdLease({ leases, clock, logger }, first, TTL_SECONDS, { heartbeatMs });
  let takenByOther = false;
  for (let i = 0; i < 10; i++) {
    clock.advance(10_000);
    await sleep(60);
    if ((await leases.acquire('disruption', 'pass-2', clock.now(), TTL_SECONDS)) !== undefined) {
      takenByOther = true;
      break;
    }
  }
  const stillHeld = await held.confirm();
  await held.stop();
  return { takenByOther, stillHeld, lost: held.lost() };
}

describe('the disruption pass lease', () => {
  it('is renewed on a heartbeat while the pass waits on one long call', async () => {
    expect(await longCall(15)).toEqual({ takenByOther: false, stillHeld: true, lost: false });
  });

  it('runs out under a pass blocked that long without the heartbeat', async () => {
    expect(await longCall(0)).toEqual({ takenByOther: true, stillHeld: false, lost: true });
  });

  it('shares one renewal among callers that ask at once', async () => {
    const inner = makeMemoryLeaseStore();
    let renewals = 0;
    const leases = {
      ...inner,
      renew: async (...args: Parameters<typeof inner.renew>) => {
        renewals += 1;
        await sleep(20);
        return inner.renew(...args);
      },
    };
    const clock = makeManualClock();
    const first = await leases.acquire('disruption', 'pass-1', clock.now(), TTL_SECONDS);
    if (first === undefined) throw new Error('the lease is free at the start');
    const held = holdLease(
      { leases, clock, logger: makeLogger({}, { sink: () => {} }) },
      first,
      TTL_SECONDS,
      {
        heartbeatMs: 0,
      },
    );
    clock.advance(5_000);
    await Promise.all([held.renew(), held.renew(), held.renew()]);
    expect(renewals).toBe(1);
    expect(held.current().expiresAtMs).toBe(clock.now().getTime() + TTL_SECONDS * 1000);
    await held.stop();
  });
});
