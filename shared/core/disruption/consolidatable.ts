import { parseGoDurationMs } from '../duration.ts';

// The `Consolidatable` condition, as Karpenter v1 keeps it: a NodeClaim may be consolidated once
// it is initialized and `consolidateAfter` has passed since the last pod was scheduled to or
// removed from its node (or since it initialized, when no pod event is known).

export type ConsolidatableVerdict =
  | { readonly kind: 'consolidatable'; readonly sinceMs: number }
  | { readonly kind: 'notYet'; readonly atMs: number }
  /** `consolidateAfter: Never`, or the NodeClaim has not initialized. */
  | { readonly kind: 'no'; readonly why: string }
  | { readonly kind: 'invalid'; readonly problem: string };

export function consolidatable(input: {
  readonly consolidateAfter: string;
  /** When the NodeClaim initialized (epoch ms); undefined when it has not. */
  readonly initializedAtMs: number | undefined;
  /** `status.lastPodEventTime` (epoch ms), when known. */
  readonly lastPodEventMs: number | undefined;
  readonly nowMs: number;
}): ConsolidatableVerdict {
  if (input.consolidateAfter === 'Never') return { kind: 'no', why: 'consolidateAfter is Never' };
  const afterMs = parseGoDurationMs(input.consolidateAfter);
  if (afterMs === undefined) {
    return {
      kind: 'invalid',
      problem: `consolidateAfter "${input.consolidateAfter}" is neither a duration nor Never`,
    };
  }
  if (input.initializedAtMs === undefined) return { kind: 'no', why: 'the NodeClaim has not initialized' };
  const from = Math.max(input.initializedAtMs, input.lastPodEventMs ?? 0);
  const at = from + afterMs;
  return at <= input.nowMs ? { kind: 'consolidatable', sinceMs: at } : { kind: 'notYet', atMs: at };
}
