import { describe, expect, it } from 'vitest';
import { expiration, lifetimeRemaining } from '../../../shared/core/index.ts';

const created = Date.parse('2026-11-01T00:00:00Z');
const HOUR = 3_600_000;

describe('expiration', () => {
  it.each([
    ['720h', created + 720 * HOUR - 1, { kind: 'notYet', expiresAtMs: created + 720 * HOUR }],
    ['720h', created + 720 * HOUR, { kind: 'expired', expiredAtMs: created + 720 * HOUR }],
    ['5m', created + 10 * 60_000, { kind: 'expired', expiredAtMs: created + 5 * 60_000 }],
    ['1h30m', created + HOUR, { kind: 'notYet', expiresAtMs: created + 1.5 * HOUR }],
    ['Never', created + 10_000 * HOUR, { kind: 'never' }],
  ] as const)('expireAfter %s, checked at %i: %o', (expireAfter, nowMs, verdict) => {
    expect(expiration(created, expireAfter, nowMs)).toEqual(verdict);
  });

  it("takes the CRD's 720h when the NodeClaim does not say", () => {
    expect(expiration(created, undefined, created + 719 * HOUR)).toMatchObject({ kind: 'notYet' });
    expect(expiration(created, undefined, created + 720 * HOUR)).toMatchObject({ kind: 'expired' });
  });

  it('skips a NodeClaim it cannot judge, with the reason', () => {
    expect(expiration(created, 'thirty days', created)).toEqual({
      kind: 'invalid',
      problem: 'expireAfter "thirty days" is neither a duration such as 720h nor Never',
    });
    expect(expiration(undefined, '1h', created)).toEqual({
      kind: 'invalid',
      problem: 'it has no creationTimestamp',
    });
  });
});

describe('lifetimeRemaining: the share of expireAfter a NodeClaim has left', () => {
  it.each([
    ['just created', '720h', 0, 1],
    ['a quarter through', '720h', 180 * HOUR, 0.75],
    ['half through', '10h', 5 * HOUR, 0.5],
    ['past expiry', '10h', 11 * HOUR, 0],
    ['the default 720h', undefined, 360 * HOUR, 0.5],
    ['Never', 'Never', 10_000 * HOUR, 1],
    ['an expireAfter that does not parse (not lowered)', 'soon', 5 * HOUR, 1],
  ] as const)('%s', (_, expireAfter, ageMs, expected) => {
    expect(lifetimeRemaining(created, expireAfter, created + ageMs)).toBeCloseTo(expected, 10);
  });

  it('is 1 without a creation time', () => {
    expect(lifetimeRemaining(undefined, '1h', created)).toBe(1);
  });
});
