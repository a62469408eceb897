import { parseGoDurationMs } from '../duration.ts';

// Expiration, as Karpenter v1 decides it: a NodeClaim whose `creationTimestamp + expireAfter` has
// passed is deleted at once, forcefully (no budget; its terminationGracePeriod bounds the drain).

export type ExpirationVerdict =
  | { readonly kind: 'expired'; readonly expiredAtMs: number }
  | { readonly kind: 'notYet'; readonly expiresAtMs: number }
  /** `expireAfter: Never`. */
  | { readonly kind: 'never' }
  /** The NodeClaim is skipped, with the reason; the others are not affected. */
  | { readonly kind: 'invalid'; readonly problem: string };

/** Whether a NodeClaim created at `createdAtMs` with `expireAfter` has expired at `nowMs`. */
export function expiration(
  createdAtMs: number | undefined,
  expireAfter: string | undefined,
  nowMs: number,
): ExpirationVerdict {
  const value = expireAfter ?? '720h';
  if (value === 'Never') return { kind: 'never' };
  const afterMs = parseGoDurationMs(value);
  if (afterMs === undefined) {
    return {
      kind: 'invalid',
      problem: `expireAfter "${value}" is neither a duration such as 720h nor Never`,
    };
  }
  if (createdAtMs === undefined) return { kind: 'invalid', problem: 'it has no creationTimestamp' };
  const at = createdAtMs + afterMs;
  return at <= nowMs ? { kind: 'expired', expiredAtMs: at } : { kind: 'notYet', expiresAtMs: at };
}

/**
 * Karpenter's lifetime remaining: the fraction of `expireAfter` a NodeClaim created at
 * `createdAtMs` has left at `nowMs`, in [0, 1]. 1 when it never expires, and when its expiry
 * cannot be read (expiration reports that NodeClaim; its disruption cost is not lowered for it).
 */
export function lifetimeRemaining(
  createdAtMs: number | undefined,
  expireAfter: string | undefined,
  nowMs: number,
): number {
  const value = expireAfter ?? '720h';
  if (value === 'Never' || createdAtMs === undefined) return 1;
  const lifetimeMs = parseGoDurationMs(value);
  if (lifetimeMs === undefined || lifetimeMs <= 0) return 1;
  return Math.min(1, Math.max(0, (lifetimeMs - (nowMs - createdAtMs)) / lifetimeMs));
}
