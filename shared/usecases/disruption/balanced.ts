import { podEvictionCost } from '../../core/index.ts';
import type { DisruptionCandidate } from './method.ts';

// The `Balanced` consolidation policy, as Karpenter v1 scores a move: the $/hour it saves as a
// fraction of its NodePool's $/hour, over the disruption it causes as a fraction of its NodePool's
// disruption, must reach 1/k (k = 2). Both totals are over the whole NodePool. Disruption here is
// Karpenter's per-node base of 1 plus the eviction cost of each pod that moves (never below 0),
// without the lifetime factor that orders candidates. Pure.

/** Karpenter's default `consolidationThreshold` k: a move is approved at a score of 1/k or more. */
export const BALANCED_K = 2;
export const BALANCED_MIN_SCORE = 1 / BALANCED_K;

/** Karpenter's disruption cost of a node for the Balanced score: 1, plus its pods' eviction costs. */
export function balancedDisruption(pods: DisruptionCandidate['reschedulablePods']): number {
  return 1 + pods.reduce((sum, p) => sum + Math.max(0, podEvictionCost(p)), 0);
}

/** A NodePool's totals: the $/hour of its priced nodes and their Balanced disruption cost. */
export interface PoolTotals {
  readonly pricePerHour: number;
  readonly disruptionCost: number;
}

/** The score of a move in one NodePool and whether it is approved, with Karpenter's guards. */
export function balancedScore(
  savingsPerHour: number,
  disruption: number,
  totals: PoolTotals | undefined,
): { readonly approved: boolean; readonly score: number } {
  // A NodePool that costs nothing cannot save; a move that saves nothing is never worth it.
  if (totals === undefined || totals.pricePerHour <= 0 || savingsPerHour <= 0) {
    return { approved: false, score: 0 };
  }
  // Nothing to disrupt in the whole NodePool: any saving is approved.
  if (totals.disruptionCost <= 0) return { approved: true, score: Number.POSITIVE_INFINITY };
  const score = savingsPerHour / totals.pricePerHour / (disruption / totals.disruptionCost);
  return { approved: score >= BALANCED_MIN_SCORE, score };
}

/**
 * Why the Balanced NodePools among `candidates` reject a move saving `savingsPerHour`, or
 * undefined when each approves (NodePools under other policies are not asked). With candidates of
 * several NodePools, each is credited with the savings in proportion to its candidates' $/hour.
 */
export function balancedRejection(
  candidates: readonly DisruptionCandidate[],
  savingsPerHour: number,
  totals: ReadonlyMap<string, PoolTotals>,
): string | undefined {
  const byPool = new Map<string, DisruptionCandidate[]>();
  for (const c of candidates) {
    if (c.nodePool.disruption.consolidationPolicy !== 'Balanced') continue;
    const list = byPool.get(c.nodePool.pool.name) ?? [];
    list.push(c);
    byPool.set(c.nodePool.pool.name, list);
  }
  const price = (cs: readonly DisruptionCandidate[]) => cs.reduce((s, c) => s + (c.pricePerHour ?? 0), 0);
  const all = price(candidates);
  const several = new Set(candidates.map((c) => c.nodePool.pool.name)).size > 1;
  for (const [name, mine] of [...byPool.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const savings = several && all > 0 ? savingsPerHour * (price(mine) / all) : savingsPerHour;
    const disruption = mine.reduce((s, c) => s + balancedDisruption(c.reschedulablePods), 0);
    const { approved, score } = balancedScore(savings, disruption, totals.get(name));
    if (!approved) {
      return `nodePool ${name}: Balanced score ${score.toFixed(2)} is below ${BALANCED_MIN_SCORE}`;
    }
  }
  return undefined;
}
