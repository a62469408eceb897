import {
  type InstanceType,
  isConditionTrue,
  Label,
  NodeClaimConditionType,
  type NodeClaimPlan,
} from '../../core/index.ts';
import { assumedPriceNote, candidatesAssumed } from './assumed-price.ts';
import { balancedRejectionOf, balancedVerdicts, isEmptyCandidate, singleMove } from './balanced.ts';
import type {
  ConsolidationMethod,
  DisruptionCandidate,
  DisruptionCommand,
  MethodContext,
  SimulateScheduling,
} from './method.ts';
import { minSavings, parseMinSavings } from './min-savings.ts';
import { replacementCapacity, SPOT_FAILED_ANNOTATION, SPOT_RETRY_AFTER_MS } from './replacement-capacity.ts';
import { allowedValues, CANT_REPLACE, narrowPlan } from './replacement-plan.ts';
import { leftoverWhy } from './simulation.ts';

// Consolidation, as Karpenter v1 (multi-node, then single-node; each a delete when the pods fit
// elsewhere, or a replace when one strictly cheaper node takes them), with two additions of
// Flotilla's own: a NodePool may ask for a minimum saving (`flotilla.io/consolidation-min-savings`,
// a fraction of the candidates' $/hour; unset, any strictly cheaper replacement does, as in
// Karpenter), so nodes are not replaced for a few cents; and a third method, repack, between the
// two: it re-solves the pods of a budget's worth of the nodes that pay most beyond what their pods
// need onto the new nodes the cheapest plan for those pods needs (several replacements), the steps
// by which the cluster moves towards what a from-scratch solve of its pods would launch.
// Karpenter's methods stop where no single node and no set replaced by one node saves enough,
// which after a large scale-down leaves many part-full nodes. Consolidation counts only on
// offerings it may launch (none backed off after insufficient capacity), and pins replacements to
// spot only while spot is there (replacement-capacity.ts).
// Pure: the simulation and the prices come in as arguments.

export { DEFAULT_MIN_SAVINGS, MIN_SAVINGS_ANNOTATION, minSavings, parseMinSavings } from './min-savings.ts';
export { SPOT_TO_SPOT_MIN_TYPES } from './replacement-plan.ts';
/** Karpenter's cap on multi-node candidates; repack takes at most as many. */
export const MULTI_NODE_MAX_CANDIDATES = 100;
/** The least saving a command makes, even with a minimum of 0%. */
const STRICT_SAVING_USD_PER_HOUR = 1e-6;

/**
 * The most nodes may cost per hour to replace nodes costing `before` under a minimum savings of
 * `threshold`: cheaper by that fraction, and strictly cheaper even when the threshold is 0.
 */
function mostAfter(before: number, threshold: number): number {
  return Math.min(before * (1 - threshold), before - STRICT_SAVING_USD_PER_HOUR);
}

/** Whether consolidation (not only emptiness) may act on the candidate's NodePool. */
function underutilizedAllowed(candidate: DisruptionCandidate): boolean {
  const { consolidationPolicy, consolidateAfter } = candidate.nodePool.disruption;
  return consolidationPolicy !== 'WhenEmpty' && consolidateAfter !== 'Never';
}

/** Whether a consolidation method looks at the candidate at all. */
export function shouldConsolidate(candidate: DisruptionCandidate): boolean {
  return (
    underutilizedAllowed(candidate) &&
    // A minimum savings that cannot be read is not taken for none.
    parseMinSavings(candidate.nodePool.annotations).kind === 'ok' &&
    // Empty nodes (no pod whose eviction costs anything) are emptiness's.
    !isEmptyCandidate(candidate) &&
    candidate.blockers.length === 0 &&
    // Without a price there is nothing to compare.
    candidate.pricePerHour !== undefined &&
    isConditionTrue(candidate.nodeClaim.status.conditions, NodeClaimConditionType.consolidatable)
  );
}

const priceOf = (c: DisruptionCandidate) => c.pricePerHour ?? 0;
const SPOT: ReadonlySet<string> = new Set(['spot']);
/** A candidate's capacity type, as its NodeClaim is labelled. */
export const capacityTypeOf = (c: DisruptionCandidate) => c.nodeClaim.labels[Label.capacityType];
const instanceTypeOf = (c: DisruptionCandidate) => c.nodeClaim.labels[Label.instanceType];

/**
 * The most a replacement may cost when it could be of the same instance type as a candidate: less
 * than that candidate by the minimum savings (the cheapest such candidate counts). A package that
 * replaces a node by an identical one moves its pods for nothing, its savings coming from the
 * other candidates; without that type the package is a smaller one, or keeps the node (as
 * Karpenter's multi-node consolidation leaves out a candidate's own type). Infinite when no
 * candidate shares a type with the plan.
 */
function sameTypeCap(
  plan: NodeClaimPlan,
  candidates: readonly DisruptionCandidate[],
  threshold: number,
): number {
  const options = new Set(plan.instanceTypes.map((t) => t.name));
  let cap = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const type = instanceTypeOf(c);
    if (type === undefined || !options.has(type)) continue;
    cap = Math.min(cap, mostAfter(priceOf(c), threshold));
  }
  return cap;
}

/**
 * Karpenter v1.14's order: the most $/hour per unit of disruption first (a node's price over its
 * disruption cost, which is at least 1 and has no lifetime factor), then by name.
 */
export function byConsolidationOrder(a: DisruptionCandidate, b: DisruptionCandidate): number {
  const ratio = (c: DisruptionCandidate) => priceOf(c) / Math.max(c.disruptionCost, 1);
  return ratio(b) - ratio(a) || a.nodeClaim.name.localeCompare(b.nodeClaim.name);
}

/** Why a set of candidates cannot be consolidated, or the command that consolidates it. */
export type Evaluation =
  | { readonly kind: 'command'; readonly command: DisruptionCommand; readonly savingsPerHour: number }
  | { readonly kind: 'invalid'; readonly why: string };

/**
 * The first NodePool whose candidates in a package would be replaced by nodes of its own that do
 * not cost less by its minimum savings: those candidates' pods would move for nothing, the
 * package's savings coming from other NodePools' nodes. Undefined when every NodePool saves.
 */
function poolSavingNothing(
  candidates: readonly DisruptionCandidate[],
  replacements: readonly NodeClaimPlan[],
): string | undefined {
  const pools = new Map<string, { before: number; threshold: number }>();
  for (const c of candidates) {
    const name = c.nodePool.pool.name;
    const entry = pools.get(name) ?? { before: 0, threshold: minSavings(c.nodePool.annotations) };
    entry.before += priceOf(c);
    pools.set(name, entry);
  }
  for (const [name, { before, threshold }] of [...pools.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const mine = replacements.filter((r) => r.nodePoolName === name);
    if (mine.length === 0) continue;
    const after = mine.reduce((sum, r) => sum + (r.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
    if (after > mostAfter(before, threshold)) return name;
  }
  return undefined;
}

/**
 * Whether removing `candidates` (all of one method's reason) is a valid consolidation command,
 * and the command: every pod must have a place; no new NodeClaim means delete; otherwise the
 * replacements must cost at most (1 − the NodePool's minimum savings) of the candidates, none may
 * be of a candidate's instance type unless it costs that much less than the candidate (repack
 * aside), the replacements in each NodePool must save its minimum on its candidates, on-demand
 * candidates are replaced by spot where the NodePool allows spot, and a single spot node is
 * replaced by spot only with at least 15 cheaper instance types (the 15 cheapest are kept).
 * Under `Balanced`, savings / disruption (each as a fraction of the whole NodePool's) must reach 0.5.
 */
export function evaluateConsolidation(
  method: ConsolidationMethod,
  candidates: readonly DisruptionCandidate[],
  simulate: SimulateScheduling,
  context: MethodContext,
): Evaluation {
  const result = simulate(candidates);
  if (result.unschedulable.length > 0) {
    return { kind: 'invalid', why: `${result.unschedulable.length} pods would have no place` };
  }
  // New nodes only pending pods need count as replacements the command would need: it cannot take
  // the room those pods were about to get (their nodes are the provisioner's to launch).
  const forPending = result.pendingOnlyNodeClaims ?? 0;
  if (forPending > 0) return { kind: 'invalid', why: `pending pods would need ${forPending} new nodes` };
  const before = candidates.reduce((sum, c) => sum + priceOf(c), 0);
  const beforeAssumed = candidatesAssumed(candidates);
  /** The capacity types of the replacements' assumed prices, first as priced, then as kept. */
  const firstAssumed = new Set<string>();
  const replacementsAssumed = new Set<string>();
  const threshold = Math.max(...candidates.map((c) => minSavings(c.nodePool.annotations)));
  // Strictly cheaper whatever the minimum (0% included): a same-price move is churn.
  const budget = mostAfter(before, threshold);
  const replacements: NodeClaimPlan[] = [];
  let after = 0;
  /** Set when a replacement goes on-demand for want of spot: since when spot has been short. */
  let spotShortSinceMs: number | undefined;
  if (result.nodeClaims.length > 0) {
    const rules = method.consolidation;
    if (result.nodeClaims.length > rules.maxReplacements) {
      return { kind: 'invalid', why: `the pods need ${result.nodeClaims.length} new nodes` };
    }
    const allSpot = candidates.every((c) => capacityTypeOf(c) === 'spot');
    // A first pass prices each plan at its cheapest allowed offering; the slack left under the
    // budget is shared out so that whatever type is launched keeps the savings.
    const narrowed: {
      plan: NodeClaimPlan;
      types: Map<string, InstanceType>;
      capacityTypes: ReadonlySet<string>;
      cheapest: number;
      cap: number;
    }[] = [];
    let cheapestTotal = 0;
    for (const plan of result.nodeClaims) {
      const types = new Map(
        context.instanceTypes(plan.nodePoolName, plan.nodeClassName).map((t) => [t.name, t]),
      );
      const cap = rules.capSameType ? sameTypeCap(plan, candidates, threshold) : Number.POSITIVE_INFINITY;
      // Spot is there to pin to when a cheaper spot offering is available (none backed off after
      // insufficient capacity) and no replacement of the NodePool failed lately.
      const failedAtMs = context.spotFailedAtMs?.get(plan.nodePoolName);
      const failedLately = failedAtMs !== undefined && context.nowMs - failedAtMs < SPOT_RETRY_AFTER_MS;
      const spotAvailable =
        !failedLately && typeof narrowPlan(plan, types, SPOT, Math.min(cap, budget), false) !== 'string';
      const choice = replacementCapacity({
        allowed: allowedValues(plan.requirements, Label.capacityType) ?? new Set(['on-demand', 'spot']),
        candidates: candidates.map(capacityTypeOf),
        spotToSpot: context.spotToSpot === true,
        spotAvailable,
      });
      if (choice.kind === 'invalid') return choice;
      const capacityTypes = choice.capacityTypes;
      if (!spotAvailable && !capacityTypes.has('spot')) {
        spotShortSinceMs = failedLately ? failedAtMs : context.nowMs;
      }
      const first = narrowPlan(plan, types, capacityTypes, cap, false);
      if (typeof first === 'string') {
        return {
          kind: 'invalid',
          why:
            Number.isFinite(cap) && first === CANT_REPLACE
              ? 'a replacement would be no cheaper than the candidate of its type'
              : first,
        };
      }
      cheapestTotal += first.cheapest;
      if (first.cheapestAssumed !== undefined) firstAssumed.add(first.cheapestAssumed);
      narrowed.push({ plan, types, capacityTypes, cheapest: first.cheapest, cap });
    }
    if (cheapestTotal > budget) {
      return {
        kind: 'invalid',
        why: `replacements cost $${cheapestTotal.toFixed(4)}/h${assumedPriceNote(firstAssumed)}, more than ${(100 * (1 - threshold)).toFixed(0)}% of $${before.toFixed(4)}/h${assumedPriceNote(beforeAssumed)}`,
      };
    }
    const slack = (budget - cheapestTotal) / narrowed.length;
    for (const n of narrowed) {
      const cap = Math.min(n.cheapest + slack, n.cap);
      const flexible = rules.spotToSpotFlexibility && allSpot && n.capacityTypes.has('spot');
      const kept = narrowPlan(n.plan, n.types, n.capacityTypes, cap, flexible);
      if (typeof kept === 'string') return { kind: 'invalid', why: kept };
      replacements.push(kept.plan);
      after += kept.cheapest;
      if (kept.cheapestAssumed !== undefined) replacementsAssumed.add(kept.cheapestAssumed);
    }
    const idle = poolSavingNothing(candidates, replacements);
    if (idle !== undefined) return { kind: 'invalid', why: `nodePool ${idle} would save nothing` };
  }
  // Last, as it costs a second simulation: where kube-scheduler would bind the pods instead.
  const spread = leftoverWhy(result.kubeSchedulerLeftovers?.() ?? []);
  if (spread !== undefined) return { kind: 'invalid', why: spread };
  const savings = before - after;
  const policy = candidates[0]?.nodePool.disruption.consolidationPolicy ?? 'WhenEmptyOrUnderutilized';
  const balanced = balancedVerdicts(candidates, savings, context.poolTotals);
  const rejected = balancedRejectionOf(balanced);
  // Karpenter counts each single-candidate move it weighs; a multi-node command once decided.
  const [only] = candidates;
  if (candidates.length === 1 && only !== undefined) context.move?.(singleMove(only, balanced));
  if (rejected !== undefined) {
    // The score's savings rest on the prices of both sides.
    const assumed = new Set([...beforeAssumed, ...replacementsAssumed]);
    return { kind: 'invalid', why: `${rejected}${assumedPriceNote(assumed)}` };
  }
  return {
    kind: 'command',
    savingsPerHour: savings,
    command: {
      method,
      reason: 'Underutilized',
      candidates,
      replacements,
      policy: `${policy}, min savings ${(100 * threshold).toFixed(0)}%`,
      podsMoved: candidates.reduce((n, c) => n + c.reschedulablePods.length, 0),
      ...(balanced.length === 0 ? {} : { balanced }),
      ...(replacementsAssumed.size === 0 ? {} : { replacementsAssumed: [...replacementsAssumed].sort() }),
      // Replacements launched on-demand for want of spot remember it, so that they are not tried
      // on spot again before SPOT_RETRY_AFTER_MS.
      ...(spotShortSinceMs === undefined
        ? {}
        : { replacementAnnotations: { [SPOT_FAILED_ANNOTATION]: new Date(spotShortSinceMs).toISOString() } }),
    },
  };
}

/** Candidates in `order` (consolidation order by default), each NodePool's within its budget. */
export function withinBudget(
  candidates: readonly DisruptionCandidate[],
  allowed: ReadonlyMap<string, number>,
  order: (a: DisruptionCandidate, b: DisruptionCandidate) => number = byConsolidationOrder,
): DisruptionCandidate[] {
  const left = new Map(allowed);
  const out: DisruptionCandidate[] = [];
  for (const c of [...candidates].sort(order)) {
    const pool = c.nodePool.pool.name;
    const room = left.get(pool) ?? 0;
    if (room < 1) continue;
    left.set(pool, room - 1);
    out.push(c);
  }
  return out;
}

/** The candidates a multi-candidate method looks at: one NodePool's when that pool is `Balanced`. */
export function samePolicy(ordered: readonly DisruptionCandidate[]): DisruptionCandidate[] {
  const first = ordered[0];
  return first?.nodePool.disruption.consolidationPolicy === 'Balanced'
    ? ordered.filter((c) => c.nodePool.pool.name === first.nodePool.pool.name)
    : ordered.filter((c) => c.nodePool.disruption.consolidationPolicy !== 'Balanced');
}

/**
 * The largest prefix of `ordered` that consolidates, by binary search as Karpenter's multi-node
 * consolidation does (validity is not monotone in the prefix, so this is a heuristic), of at
 * least `smallest` candidates.
 */
export function largestPrefix(
  method: ConsolidationMethod,
  smallest: number,
  ordered: readonly DisruptionCandidate[],
  simulate: SimulateScheduling,
  context: MethodContext,
): DisruptionCommand | undefined {
  let lo = smallest;
  let hi = ordered.length;
  let best: DisruptionCommand | undefined;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    const evaluation = evaluateConsolidation(method, ordered.slice(0, mid), simulate, context);
    if (evaluation.kind === 'command') {
      best = evaluation.command;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}
