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
      /**
       * Set when fewer launch than replicas asks for: `limits.nodes` leaves no more room, or the
       * runaway guard lets one NodeClaim (a probe) launch after a pause.
       */
      readonly limitedBy?: 'limits.nodes' | 'launchBackoff';
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

/** A static NodePool's NodeClaims as StaticDrift counts them. */
export interface StaticPoolCounts {
  /** NodeClaims not being deleted, in flight or running (replacements included). */
  readonly members: number;
  /** Of those, the candidates of disruption commands in flight: they go once replaced. */
  readonly leaving: number;
  /** NodeClaims being deleted: they still count against `limits.nodes`. */
  readonly deleting: number;
}

/** How many drifted nodes of a static NodePool may be replaced now, or why none. */
export type StaticDriftRoom =
  | { readonly kind: 'replace'; readonly count: number }
  /** More NodeClaims stay than replicas ask for: a scale-down goes first. */
  | { readonly kind: 'scalingDown'; readonly staying: number; readonly replicas: number }
  /** `limits.nodes` leaves no room for a replacement beside the node it replaces. */
  | { readonly kind: 'atLimit'; readonly limit: number }
  | { readonly kind: 'none' };

/**
 * Karpenter's StaticDrift limits for one static NodePool: nothing while a scale-down is pending
 * (more NodeClaims stay than `replicas`); else at most the budget allows (`allowed`, for the
 * `Drifted` reason) and there are drifted candidates (`drifted`), and never so many that the
 * replacements, launched before the nodes they replace go, would take the pool's NodeClaims
 * (deleting ones included) past `limits.nodes`.
 * @throws RangeError for a pool that is not static.
 */
export function computeStaticDriftRoom(input: {
  readonly pool: Pick<NodePool, 'name' | 'replicas' | 'limits'>;
  readonly counts: StaticPoolCounts;
  readonly allowed: number;
  readonly drifted: number;
}): StaticDriftRoom {
  const { pool, counts } = input;
  if (pool.replicas === undefined)
    throw new RangeError(`nodePool "${pool.name}" is not static (no spec.replicas)`);
  const staying = counts.members - counts.leaving;
  if (staying > pool.replicas) return { kind: 'scalingDown', staying, replicas: pool.replicas };
  const wanted = Math.max(0, Math.min(input.allowed, input.drifted));
  if (wanted === 0) return { kind: 'none' };
  const limit = pool.limits?.[Resource.nodes];
  if (limit === undefined) return { kind: 'replace', count: wanted };
  const room = Math.floor(limit) - counts.members - counts.deleting;
  if (room <= 0) return { kind: 'atLimit', limit };
  return { kind: 'replace', count: Math.min(wanted, room) };
}
