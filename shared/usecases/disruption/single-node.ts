import {
  type Evaluation,
  evaluateConsolidation,
  minSavings,
  shouldConsolidate,
  withinBudget,
} from './consolidation.ts';
import {
  consolidationMethod,
  type DisruptionCandidate,
  type MethodContext,
  type SimulateScheduling,
  type SimulationOptions,
} from './method.ts';

// Single-node consolidation: one candidate at a time, deleted when its pods fit elsewhere, or
// replaced by one cheaper node. Flotilla's provisioning simulation plans the cheapest set of new
// nodes for the pods, which for the pods of one big underused node is often two or three small
// ones; Karpenter's scheduler instead fills one new NodeClaim while any instance type still holds
// its pods. So when the cheapest plan needs several new nodes, the pods are planned again onto at
// most one, as Karpenter would, and that replacement is judged by the usual rules. Pure.

/** Simulations single-node consolidation runs per pass; the next pass goes on from there. */
export const SINGLE_NODE_MAX_SIMULATIONS = 20;

/** The re-plan of a single node's pods onto one new node. */
const ONE_NEW_NODE: SimulationOptions = { maxNewNodeClaims: 1 };

/**
 * Whether one candidate consolidates (see `evaluateConsolidation`): with the simulation as the
 * provisioner plans it, or, when that plan needs several new nodes, with the pods that fit no
 * other node all on one new NodeClaim (the cheapest instance type holding them under their
 * constraints and the NodePool's requirements).
 */
export function evaluateSingleNode(
  candidate: DisruptionCandidate,
  simulate: SimulateScheduling,
  context: MethodContext,
): Evaluation {
  let needed = 0;
  let planPerHour = 0;
  const counting: SimulateScheduling = (candidates, options) => {
    const result = simulate(candidates, options);
    needed = result.nodeClaims.length;
    planPerHour = result.nodeClaims.reduce((sum, c) => sum + (c.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
    return result;
  };
  const cheapest = evaluateConsolidation(singleNodeConsolidation, [candidate], counting, context);
  if (cheapest.kind === 'command' || needed <= 1) return cheapest;
  // One node costs at least what the cheapest plan does: when that plan saves too little, so would
  // the one node, and the second simulation is spared.
  const threshold = minSavings(candidate.nodePool.annotations);
  if (planPerHour >= (candidate.pricePerHour ?? 0) * (1 - threshold)) {
    return {
      kind: 'invalid',
      why: `${cheapest.why}, which would save less than ${(100 * threshold).toFixed(0)}%`,
    };
  }
  const onOne = evaluateConsolidation(
    singleNodeConsolidation,
    [candidate],
    (candidates) => simulate(candidates, ONE_NEW_NODE),
    context,
  );
  return onOne.kind === 'command'
    ? { ...onOne, command: { ...onOne.command, simulation: ONE_NEW_NODE } }
    : { kind: 'invalid', why: `${cheapest.why}, and on one new node: ${onOne.why}` };
}

/**
 * Single-node consolidation: the first candidate, in consolidation order within budgets, that
 * consolidates. At most SINGLE_NODE_MAX_SIMULATIONS a pass; a larger set starts where the pass's
 * minute puts it, so every candidate is looked at over a few passes. Each candidate looked at in
 * vain is reported to `context.unconsolidatable` with the reason.
 */
export const singleNodeConsolidation = consolidationMethod({
  name: 'single-node',
  reason: 'Underutilized',
  order: 50,
  policy: { pick: 'mostSaving', validation: 'simulateAgain' },
  disruptionClass: 'graceful',
  consolidation: { maxReplacements: 1, capSameType: true, spotToSpotFlexibility: true },
  shouldDisrupt: shouldConsolidate,
  computeCommands(candidates, allowed, simulate, context) {
    if (context === undefined) return [];
    const ordered = withinBudget(candidates, allowed);
    if (ordered.length === 0) return [];
    const start =
      ordered.length <= SINGLE_NODE_MAX_SIMULATIONS
        ? 0
        : (Math.floor(context.nowMs / 60_000) * SINGLE_NODE_MAX_SIMULATIONS) % ordered.length;
    const tries = Math.min(ordered.length, SINGLE_NODE_MAX_SIMULATIONS);
    if (tries < ordered.length) context.partial?.();
    for (let i = 0; i < tries; i++) {
      const candidate = ordered[(start + i) % ordered.length];
      if (candidate === undefined) continue;
      const evaluation = evaluateSingleNode(candidate, simulate, context);
      if (evaluation.kind === 'command') return [evaluation.command];
      context.unconsolidatable?.(candidate, evaluation.why);
    }
    return [];
  },
});
