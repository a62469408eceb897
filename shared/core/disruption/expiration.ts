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
