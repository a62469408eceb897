import { REGISTRATION_TIMEOUT_MS } from '../lifecycle/decide.ts';

// When the provisioner asks for its own follow-up invocation while NodeClaims have not
// initialized. Nodes usually join and initialize within a minute or two of the launch, so young
// NodeClaims are looked at every 5 s (the wait of pods bound for them); one that takes longer is
// looked at less and less often, and none once it is older than the registration timeout (the
// lifecycle deletes it then if it never registered; one that registered but never initializes,
// e.g. behind a startup taint nobody removes, is left to the pending-pods schedule). A NodeClaim
// stuck for a day thus costs a few dozen invocations, not one every 5 s. Pure.

/** The delay while the youngest NodeClaim is in its first minutes. */
export const FOLLOW_UP_MIN_DELAY_SECONDS = 5;
/** The longest delay. */
export const FOLLOW_UP_MAX_DELAY_SECONDS = 300;
/** NodeClaims younger than this are followed every FOLLOW_UP_MIN_DELAY_SECONDS. */
export const FOLLOW_UP_FAST_WINDOW_MS = 2 * 60_000;

/**
 * The follow-up's delay for the youngest waiting NodeClaim's age: 5 s in the first 2 minutes,
 * then doubling each further minute (10 s, 20, 40, 80, 160) up to 300 s. Monotone in the age.
 */
export function followUpDelaySeconds(youngestAgeMs: number): number {
  if (!(youngestAgeMs >= FOLLOW_UP_FAST_WINDOW_MS)) return FOLLOW_UP_MIN_DELAY_SECONDS;
  const minutes = Math.floor((youngestAgeMs - FOLLOW_UP_FAST_WINDOW_MS) / 60_000) + 1;
  return Math.min(FOLLOW_UP_MAX_DELAY_SECONDS, FOLLOW_UP_MIN_DELAY_SECONDS * 2 ** Math.min(minutes, 16));
}

/** A NodeClaim not initialized yet; an unknown creation time counts as just created. */
export interface WaitingNodeClaim {
  readonly name: string;
  readonly createdAtMs?: number;
}

export type FollowUpDecision =
  | { readonly kind: 'none'; readonly why: 'nothing waiting' }
  | {
      readonly kind: 'none';
      readonly why: 'older than the registration timeout';
      /** How many NodeClaims wait past it. */
      readonly stale: number;
    }
  | {
      readonly kind: 'followUp';
      /** The waiting NodeClaims younger than the registration timeout. */
      readonly nodeClaims: readonly string[];
      readonly delaySeconds: number;
    };

/**
 * Whether to ask for a follow-up and after how long: only for NodeClaims younger than the
 * registration timeout, with followUpDelaySeconds of the youngest one's age.
 */
export function decideFollowUp(waiting: readonly WaitingNodeClaim[], nowMs: number): FollowUpDecision {
  if (waiting.length === 0) return { kind: 'none', why: 'nothing waiting' };
  const ageOf = (c: WaitingNodeClaim) => Math.max(0, nowMs - (c.createdAtMs ?? nowMs));
  const young = waiting.filter((c) => ageOf(c) < REGISTRATION_TIMEOUT_MS);
  if (young.length === 0) {
    return { kind: 'none', why: 'older than the registration timeout', stale: waiting.length };
  }
  const youngest = Math.min(...young.map(ageOf));
  return {
    kind: 'followUp',
    nodeClaims: young.map((c) => c.name),
    delaySeconds: followUpDelaySeconds(youngest),
  };
}
