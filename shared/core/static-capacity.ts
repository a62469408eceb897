import type { NodePool } from './node-pool.ts';
import { Resource } from './resources.ts';

// Static capacity (Karpenter's alpha `spec.replicas`): how many NodeClaims a static NodePool
// launches or removes to hold exactly `replicas` nodes. Pure.

/** A NodeClaim of a static NodePool that is not being deleted. */
export interface StaticMember {
  readonly nodeClaim: string;
  /** Reschedulable pods on its node; 0 for a NodeClaim whose node has not joined. */
  readonly pods: number;
  /** Karpenter's disruption cost of those pods. */
  readonly disruptionCost: number;
}

export interface StaticPoolInput {
  readonly pool: Pick<NodePool, 'name' | 'replicas' | 'limits'>;
  /** The pool's NodeClaims not being deleted, in flight or running. */
  readonly members: readonly StaticMember[];
  /** How many of the pool's NodeClaims are being deleted: they still count against `limits.nodes`. */
  readonly deleting: number;
}

/** What a static NodePool needs now. `current`: its NodeClaims not being deleted. */
export type StaticDecision =
  | {
      readonly kind: 'launch';
      readonly count: number;
      readonly replicas: number;
      readonly current: number;
      /** Set when `limits.nodes` allowed fewer than replicas asks for. */
      readonly limitedBy?: 'limits.nodes';
    }
  | {
      readonly kind: 'delete';
      /** The surplus, least disruptive first. */
      readonly nodeClaims: readonly string[];
      readonly replicas: number;
      readonly current: number;
    }
  | {
      /** Short of replicas, but `limits.nodes` leaves no room. */
      readonly kind: 'atLimit';
      readonly replicas: number;
      readonly current: number;
      readonly limit: number;
    }
  | { readonly kind: 'steady'; readonly replicas: number; readonly current: number };

/**
 * What a static NodePool must do to hold `replicas` NodeClaims: launch the shortfall, capped so the
 * pool's NodeClaims (deleting ones included) never exceed `limits.nodes`; or remove the surplus,
 * NodeClaims without pods first, then the fewest pods, the lowest disruption cost, and the name
 * (so repeated decisions over the same cluster pick the same ones). A scale-down is the user's
 * request, not voluntary disruption: budgets do not gate it, as in Karpenter.
 * @throws RangeError for a pool that is not static.
 */
export function computeStaticDecision(input: StaticPoolInput): StaticDecision {
  const { pool, members } = input;
  const replicas = pool.replicas;
  if (replicas === undefined)
    throw new RangeError(`nodePool "${pool.name}" is not static (no spec.replicas)`);
  const current = members.length;
  if (current > replicas) {
    const surplus = [...members]
      .sort(
        (a, b) =>
          Number(a.pods > 0) - Number(b.pods > 0) ||
          a.pods - b.pods ||
          a.disruptionCost - b.disruptionCost ||
          (a.nodeClaim < b.nodeClaim ? -1 : a.nodeClaim > b.nodeClaim ? 1 : 0),
      )
      .slice(0, current - replicas)
      .map((m) => m.nodeClaim);
    return { kind: 'delete', nodeClaims: surplus, replicas, current };
  }
  const wanted = replicas - current;
  if (wanted === 0) return { kind: 'steady', replicas, current };
  const limit = pool.limits?.[Resource.nodes];
  if (limit === undefined) return { kind: 'launch', count: wanted, replicas, current };
  const room = Math.max(0, Math.floor(limit) - current - input.deleting);
  if (room === 0) return { kind: 'atLimit', replicas, current, limit };
  return room < wanted
    ? { kind: 'launch', count: room, replicas, current, limitedBy: 'limits.nodes' }
    : { kind: 'launch', count: wanted, replicas, current };
}
