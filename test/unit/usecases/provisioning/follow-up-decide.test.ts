import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideFollowUp,
  FOLLOW_UP_MAX_DELAY_SECONDS,
  followUpDelaySeconds,
} from '../../../../shared/usecases/provisioning/follow-up-decide.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const S = 1000;
const MIN = 60_000;

describe('followUpDelaySeconds', () => {
  it.each([
    [0, 5],
    [119 * S, 5],
    [2 * MIN, 10],
    [3 * MIN, 20],
    [4 * MIN, 40],
    [5 * MIN, 80],
    [6 * MIN, 160],
    [7 * MIN, 300],
    [14 * MIN, 300],
  ])('for a youngest NodeClaim %i ms old is %i s', (age, delay) => {
    expect(followUpDelaySeconds(age)).toBe(delay);
  });

  it('is monotone in the age, at least 5 s and at most 5 minutes', () => {
    fc.assert(
      fc.property(fc.nat(3_600_000), fc.nat(3_600_000), (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(followUpDelaySeconds(lo)).toBeLessThanOrEqual(followUpDelaySeconds(hi));
        expect(followUpDelaySeconds(lo)).toBeGreaterThanOrEqual(5);
        expect(followUpDelaySeconds(hi)).toBeLessThanOrEqual(FOLLOW_UP_MAX_DELAY_SECONDS);
      }),
    );
  });
});

describe('decideFollowUp', () => {
  it.each([
    ['nothing waits', [], { kind: 'none', why: 'nothing waiting' }],
    [
      'a NodeClaim just created',
      [{ name: 'a', createdAtMs: T0 - 10 * S }],
      { kind: 'followUp', nodeClaims: ['a'], delaySeconds: 5 },
    ],
    [
      'the youngest one sets the delay',
      [
        { name: 'old', createdAtMs: T0 - 10 * MIN },
        { name: 'new', createdAtMs: T0 - 3 * MIN },
      ],
      { kind: 'followUp', nodeClaims: ['old', 'new'], delaySeconds: 20 },
    ],
    [
      'NodeClaims past the registration timeout are left out',
      [
        { name: 'stuck', createdAtMs: T0 - 15 * MIN },
        { name: 'new', createdAtMs: T0 - 5 * S },
      ],
      { kind: 'followUp', nodeClaims: ['new'], delaySeconds: 5 },
    ],
    [
      'only NodeClaims past the registration timeout',
      [{ name: 'stuck', createdAtMs: T0 - 16 * MIN }],
      { kind: 'none', why: 'older than the registration timeout', stale: 1 },
    ],
    [
      'an unknown creation counts as new',
      [{ name: 'a' }],
      { kind: 'followUp', nodeClaims: ['a'], delaySeconds: 5 },
    ],
  ] as const)('%s', (_, waiting, decision) => {
    expect(decideFollowUp(waiting, T0)).toEqual(decision);
  });

  it('follows a NodeClaim that never initializes a bounded number of times', () => {
    // Each follow-up's invocation decides the next one, as the provisioner's chain does.
    const stuck = [{ name: 'stuck', createdAtMs: T0 }];
    let now = T0;
    let followUps = 0;
    for (let d = decideFollowUp(stuck, now); d.kind === 'followUp'; d = decideFollowUp(stuck, now)) {
      followUps += 1;
      now += d.delaySeconds * S;
    }
    expect(followUps).toBeLessThanOrEqual(40);
    expect(now - T0).toBeGreaterThanOrEqual(15 * MIN);
  });
});
