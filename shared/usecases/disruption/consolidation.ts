import {
  type InstanceType,
  Label,
  type NodeClaimPlan,
  type NodeSelectorRequirement,
  type Offering,
} from '../../core/index.ts';
import { isConditionTrue } from '../../ports/cluster.ts';
import { CONSOLIDATABLE_CONDITION } from './emptiness.ts';
import type {
  DisruptionCandidate,
  DisruptionCommand,
  DisruptionMethod,
  MethodContext,
  SimulateScheduling,
} from './method.ts';

// Consolidation, as Karpenter v1 (multi-node, then single-node; each a delete when the pods fit
// elsewhere, or a replace when one cheaper node takes them), with one change that Flotilla makes
// on purpose: no command saves less than the NodePool's minimum savings
// (`flotilla.io/consolidation-min-savings`, default 10% of the candidates' $/hour), so nodes are
// not replaced for a few cents.
// Pure: the simulation and the prices come in as arguments.

/** The NodePool annotation with the least a consolidation command must save, `10%` or `0.1`. */
export const MIN_SAVINGS_ANNOTATION = 'flotilla.io/consolidation-min-savings';
export const DEFAULT_MIN_SAVINGS = 0.1;
/** Karpenter's MinInstanceTypesForSpotToSpotConsolidation. */
export const SPOT_TO_SPOT_MIN_TYPES = 15;
/** Karpenter's cap on multi-node candidates. */
export const MULTI_NODE_MAX_CANDIDATES = 100;
/** Simulations single-node consolidation runs per pass; the next pass goes on from there. */
export const SINGLE_NODE_MAX_SIMULATIONS = 20;
/** The least saving a command makes, even with a minimum of 0%. */
const STRICT_SAVING_USD_PER_HOUR = 1e-6;
/** Karpenter v1.14's `Balanced` threshold: savings fraction / disruption fraction ≥ 1/k, k = 2. */
export const BALANCED_MIN_SCORE = 0.5;

/** The NodePool's minimum savings as a fraction in [0, 1), or the default when unset or unreadable. */
export function minSavings(annotations: Readonly<Record<string, string>> | undefined): number {
  const raw = annotations?.[MIN_SAVINGS_ANNOTATION]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_MIN_SAVINGS;
  const value = raw.endsWith('%') ? Number(raw.slice(0, -1)) / 100 : Number(raw);
  return Number.isFinite(value) && value >= 0 && value < 1 ? value : DEFAULT_MIN_SAVINGS;
}

/** Whether consolidation (not only emptiness) may act on the candidate's NodePool. */
function underutilizedAllowed(candidate: DisruptionCandidate): boolean {
  const { consolidationPolicy, consolidateAfter } = candidate.nodePool.disruption;
  return consolidationPolicy !== 'WhenEmpty' && consolidateAfter !== 'Never';
}

function shouldConsolidate(candidate: DisruptionCandidate): boolean {
  return (
    underutilizedAllowed(candidate) &&
    // Empty nodes are emptiness's.
    candidate.reschedulablePods.length > 0 &&
    candidate.blockers.length === 0 &&
    // Without a price there is nothing to compare.
    candidate.pricePerHour !== undefined &&
    isConditionTrue(candidate.nodeClaim.status.conditions, CONSOLIDATABLE_CONDITION)
  );
}

const priceOf = (c: DisruptionCandidate) => c.pricePerHour ?? 0;
const capacityTypeOf = (c: DisruptionCandidate) => c.nodeClaim.labels[Label.capacityType];

/** Karpenter's order: the most $/hour saved per unit of disruption first. */
export function byConsolidationOrder(a: DisruptionCandidate, b: DisruptionCandidate): number {
  const ratio = (c: DisruptionCandidate) => priceOf(c) / Math.max(c.disruptionCost, 1e-9);
  return ratio(b) - ratio(a) || a.nodeClaim.name.localeCompare(b.nodeClaim.name);
}

function allowedValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
): Set<string> | undefined {
  const r = requirements.find((x) => x.key === key && x.operator === 'In');
  return r === undefined ? undefined : new Set(r.values ?? []);
}

function withValues(
  requirements: readonly NodeSelectorRequirement[],
  key: string,
  values: readonly string[],
): NodeSelectorRequirement[] {
  return [...requirements.filter((r) => r.key !== key), { key, operator: 'In', values: [...values] }];
}

/** The cheapest offering of `type` the requirements allow with capacity type `capacityType`. */
function priceFor(
  type: InstanceType,
  requirements: readonly NodeSelectorRequirement[],
  capacityTypes: ReadonlySet<string>,
): number {
  const zones = allowedValues(requirements, Label.zone);
  let best = Number.POSITIVE_INFINITY;
  for (const o of type.offerings as readonly Offering[]) {
    if (!o.available || !capacityTypes.has(o.capacityType)) continue;
    if (zones !== undefined && !zones.has(o.zone)) continue;
    if (o.priceUsdPerHour < best) best = o.priceUsdPerHour;
  }
  return best;
}

/** Why a set of candidates cannot be consolidated, or the command that consolidates it. */
export type Evaluation =
  | { readonly kind: 'command'; readonly command: DisruptionCommand; readonly savingsPerHour: number }
  | { readonly kind: 'invalid'; readonly why: string };

/** One replacement, narrowed to the instance types (and capacity type) that keep the savings. */
function narrowPlan(
  plan: NodeClaimPlan,
  types: ReadonlyMap<string, InstanceType>,
  capacityTypes: ReadonlySet<string>,
  capPerHour: number,
  spotToSpotSingle: boolean,
): { plan: NodeClaimPlan; cheapest: number } | string {
  const priced = plan.instanceTypes
    .flatMap((c) => {
      const type = types.get(c.name);
      const price =
        type === undefined ? Number.POSITIVE_INFINITY : priceFor(type, plan.requirements, capacityTypes);
      return Number.isFinite(price) && price <= capPerHour ? [{ name: c.name, priceUsdPerHour: price }] : [];
    })
    .sort((a, b) => a.priceUsdPerHour - b.priceUsdPerHour || a.name.localeCompare(b.name));
  if (priced.length === 0) return "can't replace with a cheaper node";
  if (spotToSpotSingle && priced.length < SPOT_TO_SPOT_MIN_TYPES) {
    return `spot-to-spot consolidation needs at least ${SPOT_TO_SPOT_MIN_TYPES} cheaper instance types, found ${priced.length}`;
  }
  const kept = spotToSpotSingle ? priced.slice(0, SPOT_TO_SPOT_MIN_TYPES) : priced;
  let requirements = withValues(
    plan.requirements,
    Label.instanceType,
    kept.map((t) => t.name),
  );
  requirements = withValues(requirements, Label.capacityType, [...capacityTypes].sort());
  return {
    plan: { ...plan, requirements, instanceTypes: kept },
    cheapest: kept[0]?.priceUsdPerHour ?? Number.POSITIVE_INFINITY,
  };
}

/**
 * Whether removing `candidates` (all of one method's reason) is a valid consolidation command,
 * and the command: every pod must have a place; no new NodeClaim means delete; otherwise the
 * replacements must cost at most (1 − the NodePool's minimum savings) of the candidates, on-demand
 * candidates are replaced by spot where the NodePool allows spot, and a single spot node is
 * replaced by spot only with at least 15 cheaper instance types (the 15 cheapest are kept).
 * Under `Balanced`, savings / disruption (each as a fraction of the NodePool's) must reach 0.5.
 */
export function evaluateConsolidation(
  method: 'multi-node' | 'single-node',
  candidates: readonly DisruptionCandidate[],
  simulate: SimulateScheduling,
  context: MethodContext,
): Evaluation {
  const result = simulate(candidates);
  if (result.unschedulable.length > 0) {
    return { kind: 'invalid', why: `${result.unschedulable.length} pods would have no place` };
  }
  const before = candidates.reduce((sum, c) => sum + priceOf(c), 0);
  const threshold = Math.max(...candidates.map((c) => minSavings(c.nodePool.annotations)));
  // Strictly cheaper whatever the minimum (0% included): a same-price move is churn.
  const budget = Math.min(before * (1 - threshold), before - STRICT_SAVING_USD_PER_HOUR);
  const replacements: NodeClaimPlan[] = [];
  let after = 0;
  if (result.nodeClaims.length > 0) {
    // As Karpenter: one replacement at most. With more, a command could replace a node by an
    // identical one as part of a package whose savings come from another node.
    if (result.nodeClaims.length > 1) {
      return { kind: 'invalid', why: `the pods need ${result.nodeClaims.length} new nodes` };
    }
    const allOnDemand = candidates.every((c) => capacityTypeOf(c) === 'on-demand');
    const allSpot = candidates.every((c) => capacityTypeOf(c) === 'spot');
    // A first pass prices each plan at its cheapest allowed offering; the slack left under the
    // budget is shared out so that whatever type is launched keeps the savings.
    const narrowed: {
      plan: NodeClaimPlan;
      types: Map<string, InstanceType>;
      capacityTypes: Set<string>;
      cheapest: number;
    }[] = [];
    let cheapestTotal = 0;
    for (const plan of result.nodeClaims) {
      const types = new Map(context.instanceTypes(plan.nodeClassName).map((t) => [t.name, t]));
      const allowed = allowedValues(plan.requirements, Label.capacityType) ?? new Set(['on-demand', 'spot']);
      // On-demand candidates go to spot where the NodePool allows it (so a spot shortage does not
      // become a pricier on-demand node); spot candidates stay on spot.
      const capacityTypes =
        (allOnDemand || allSpot) && allowed.has('spot') ? new Set(['spot']) : new Set(allowed);
      capacityTypes.delete('reserved');
      const first = narrowPlan(plan, types, capacityTypes, Number.POSITIVE_INFINITY, false);
      if (typeof first === 'string') return { kind: 'invalid', why: first };
      cheapestTotal += first.cheapest;
      narrowed.push({ plan, types, capacityTypes, cheapest: first.cheapest });
    }
    if (cheapestTotal > budget) {
      return {
        kind: 'invalid',
        why: `replacements cost $${cheapestTotal.toFixed(4)}/h, more than ${(100 * (1 - threshold)).toFixed(0)}% of $${before.toFixed(4)}/h`,
      };
    }
    const slack = (budget - cheapestTotal) / narrowed.length;
    const spotToSpotSingle = method === 'single-node' && allSpot;
    for (const n of narrowed) {
      const kept = narrowPlan(n.plan, n.types, n.capacityTypes, n.cheapest + slack, spotToSpotSingle);
      if (typeof kept === 'string') return { kind: 'invalid', why: kept };
      replacements.push(kept.plan);
      after += kept.cheapest;
    }
  }
  const savings = before - after;
  const policy = candidates[0]?.nodePool.disruption.consolidationPolicy ?? 'WhenEmptyOrUnderutilized';
  if (policy === 'Balanced') {
    const pool = candidates[0]?.nodePool.pool.name ?? '';
    const totals = context.poolTotals.get(pool);
    const savingsFraction =
      totals === undefined || totals.pricePerHour <= 0 ? 0 : savings / totals.pricePerHour;
    const cost = candidates.reduce((sum, c) => sum + c.disruptionCost, 0);
    const disruptionFraction =
      totals === undefined || totals.disruptionCost <= 0 ? 1 : cost / totals.disruptionCost;
    const score = disruptionFraction <= 0 ? Number.POSITIVE_INFINITY : savingsFraction / disruptionFraction;
    if (score < BALANCED_MIN_SCORE) {
      return { kind: 'invalid', why: `Balanced score ${score.toFixed(2)} is below ${BALANCED_MIN_SCORE}` };
    }
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
    },
  };
}

/** Candidates in consolidation order, each NodePool's within its budget. */
function withinBudget(
  candidates: readonly DisruptionCandidate[],
  allowed: ReadonlyMap<string, number>,
): DisruptionCandidate[] {
  const left = new Map(allowed);
  const out: DisruptionCandidate[] = [];
  for (const c of [...candidates].sort(byConsolidationOrder)) {
    const pool = c.nodePool.pool.name;
    const room = left.get(pool) ?? 0;
    if (room < 1) continue;
    left.set(pool, room - 1);
    out.push(c);
  }
  return out;
}

/**
 * Multi-node consolidation: the largest prefix (at most 100, in consolidation order, within budgets)
 * that consolidates, found by binary search as Karpenter does; candidates of one NodePool only when
 * that pool is `Balanced` (its score is per pool).
 */
export const multiNodeConsolidation: DisruptionMethod = {
  name: 'multi-node',
  reason: 'Underutilized',
  disruptionClass: 'graceful',
  shouldDisrupt: shouldConsolidate,
  computeCommands(candidates, allowed, simulate, context): readonly DisruptionCommand[] {
    if (context === undefined) return [];
    const ordered = withinBudget(candidates, allowed).slice(0, MULTI_NODE_MAX_CANDIDATES);
    const first = ordered[0];
    const pool =
      first?.nodePool.disruption.consolidationPolicy === 'Balanced'
        ? ordered.filter((c) => c.nodePool.pool.name === first.nodePool.pool.name)
        : ordered.filter((c) => c.nodePool.disruption.consolidationPolicy !== 'Balanced');
    if (pool.length < 2) return [];
    let lo = 2;
    let hi = pool.length;
    let best: DisruptionCommand | undefined;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      const evaluation = evaluateConsolidation('multi-node', pool.slice(0, mid), simulate, context);
      if (evaluation.kind === 'command') {
        best = evaluation.command;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return best === undefined ? [] : [best];
  },
};

/**
 * Single-node consolidation: the first candidate, in consolidation order within budgets, that
 * consolidates. At most SINGLE_NODE_MAX_SIMULATIONS a pass; a larger set starts where the pass's
 * minute puts it, so every candidate is looked at over a few passes.
 */
export const singleNodeConsolidation: DisruptionMethod = {
  name: 'single-node',
  reason: 'Underutilized',
  disruptionClass: 'graceful',
  shouldDisrupt: shouldConsolidate,
  computeCommands(candidates, allowed, simulate, context): readonly DisruptionCommand[] {
    if (context === undefined) return [];
    const ordered = withinBudget(candidates, allowed);
    if (ordered.length === 0) return [];
    const start =
      ordered.length <= SINGLE_NODE_MAX_SIMULATIONS
        ? 0
        : (Math.floor(context.nowMs / 60_000) * SINGLE_NODE_MAX_SIMULATIONS) % ordered.length;
    const tries = Math.min(ordered.length, SINGLE_NODE_MAX_SIMULATIONS);
    for (let i = 0; i < tries; i++) {
      const candidate = ordered[(start + i) % ordered.length];
      if (candidate === undefined) continue;
      const evaluation = evaluateConsolidation('single-node', [candidate], simulate, context);
      if (evaluation.kind === 'command') return [evaluation.command];
    }
    return [];
  },
};
