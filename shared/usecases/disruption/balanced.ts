import { podEvictionCost } from '../../core/index.ts';
import type {
  BalancedScore,
  BalancedVerdict,
  ConsolidationMove,
  DisruptionCandidate,
  DisruptionCommand,
} from './method.ts';

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

/**
 * Karpenter v1.14's empty node: no reschedulable pod whose eviction cost is above 0 (none at all, or
 * only pods whose deletion cost or priority brings their cost to 0 or below), so its disruption
 * cost is the node's base of 1.
 */
export function isEmptyCandidate(candidate: Pick<DisruptionCandidate, 'reschedulablePods'>): boolean {
  return balancedDisruption(candidate.reschedulablePods) <= 1;
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
): BalancedScore {
  // A NodePool that costs nothing cannot save; a move that saves nothing is never worth it.
  if (totals === undefined || totals.pricePerHour <= 0 || savingsPerHour <= 0) {
    return { approved: false, score: 0, savingsFraction: 0, disruptionFraction: 0 };
  }
  const savingsFraction = savingsPerHour / totals.pricePerHour;
  // Nothing to disrupt in the whole NodePool: any saving is approved.
  if (totals.disruptionCost <= 0) {
    return { approved: true, score: Number.POSITIVE_INFINITY, savingsFraction, disruptionFraction: 0 };
  }
  const disruptionFraction = disruption / totals.disruptionCost;
  const score = savingsFraction / disruptionFraction;
  return { approved: score >= BALANCED_MIN_SCORE, score, savingsFraction, disruptionFraction };
}

/**
 * The verdict of each Balanced NodePool among `candidates` on a move saving `savingsPerHour`, by
 * NodePool name (NodePools under other policies are not asked). With candidates of several
 * NodePools, each is credited with the savings in proportion to its candidates' $/hour.
 */
export function balancedVerdicts(
  candidates: readonly DisruptionCandidate[],
  savingsPerHour: number,
  totals: ReadonlyMap<string, PoolTotals>,
): BalancedVerdict[] {
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
  return [...byPool.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([nodePool, mine]) => {
      const savings = several && all > 0 ? savingsPerHour * (price(mine) / all) : savingsPerHour;
      const disruption = mine.reduce((s, c) => s + balancedDisruption(c.reschedulablePods), 0);
      return { nodePool, ...balancedScore(savings, disruption, totals.get(nodePool)) };
    });
}

const percent = (fraction: number) => `${(100 * fraction).toFixed(1)}%`;

/**
 * A verdict in words, as the `ConsolidationApproved` and `ConsolidationRejected` Events and the
 * decision lines tell it: the score, the threshold, k, and the two fractions.
 */
export function describeBalanced(v: BalancedScore): string {
  const against = v.approved ? 'reaches' : 'is below';
  return (
    `Balanced score ${v.score.toFixed(2)} ${against} the threshold ${BALANCED_MIN_SCORE.toFixed(2)} ` +
    `(k ${BALANCED_K}): it saves ${percent(v.savingsFraction)} of the NodePool's $/hour ` +
    `for ${percent(v.disruptionFraction)} of its disruption`
  );
}

/** How a reason from balancedRejection reads, wherever it is quoted. */
const REJECTION = /nodePool \S+: Balanced score \S+ is below the threshold/;

/** Whether a reason a node stays for is a Balanced NodePool's rejection of the move (balancedRejection). */
export function isBalancedRejection(why: string): boolean {
  return REJECTION.test(why);
}

/** Why the first NodePool of `verdicts` that rejects the move does, or undefined when each approves. */
export function balancedRejectionOf(verdicts: readonly BalancedVerdict[]): string | undefined {
  const rejected = verdicts.find((v) => !v.approved);
  return rejected === undefined ? undefined : `nodePool ${rejected.nodePool}: ${describeBalanced(rejected)}`;
}

/**
 * Why the Balanced NodePools among `candidates` reject a move saving `savingsPerHour`, or
 * undefined when each approves (NodePools under other policies are not asked).
 */
export function balancedRejection(
  candidates: readonly DisruptionCandidate[],
  savingsPerHour: number,
  totals: ReadonlyMap<string, PoolTotals>,
): string | undefined {
  return balancedRejectionOf(balancedVerdicts(candidates, savingsPerHour, totals));
}

/** The move of one candidate, as Karpenter's Balanced evaluator counts it: its pool's verdict, if Balanced. */
export function singleMove(
  candidate: DisruptionCandidate,
  verdicts: readonly BalancedVerdict[],
): ConsolidationMove {
  const nodePool = candidate.nodePool.pool.name;
  const verdict = verdicts.find((v) => v.nodePool === nodePool);
  return {
    nodePool,
    policy: candidate.nodePool.disruption.consolidationPolicy,
    decision: verdict === undefined || verdict.approved ? 'approved' : 'rejected',
    ...(verdict === undefined ? {} : { score: verdict.score }),
  };
}

/** The moves of a multi-candidate command decided: one per NodePool of its candidates, approved. */
export function commandMoves(command: DisruptionCommand): ConsolidationMove[] {
  const pools = new Map(command.candidates.map((c) => [c.nodePool.pool.name, c.nodePool] as const));
  return [...pools].map(([nodePool, pool]) => {
    const verdict = command.balanced?.find((v) => v.nodePool === nodePool);
    return {
      nodePool,
      policy: pool.disruption.consolidationPolicy,
      decision: 'approved' as const,
      ...(verdict === undefined ? {} : { score: verdict.score }),
    };
  });
}
