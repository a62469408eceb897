import { describe, expect, it } from 'vitest';
import { expiration } from '../../../shared/core/index.ts';

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
