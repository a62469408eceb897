import {
  byConsolidationOrder,
  capacityTypeOf,
  evaluateConsolidation,
  largestPrefix,
  MULTI_NODE_MAX_CANDIDATES,
  samePolicy,
  shouldConsolidate,
  withinBudget,
} from './consolidation.ts';
import { makeExcessShare } from './excess.ts';
import { consolidationMethod, type DisruptionCandidate, type DisruptionCommand } from './method.ts';

// Repack, Flotilla's third consolidation method, between multi-node and single-node. Its rules and
// search; the evaluation is consolidation.ts's. Pure.

/**
 * Where repack's search for the largest package starts. Smaller packages (two nodes, then one)
 * are tried only when no larger one consolidates: a node or two whose pods' cheapest plan is
 * several smaller nodes is neither multi-node's nor single-node's (one replacement each).
 */
export const REPACK_MIN_CANDIDATES = 3;

/**
 * Repack (Flotilla's own): the nodes whose price is furthest above what their pods need (the
 * largest share of it beyond their fair costs on the NodePool's instance types, excess.ts), a
 * budget's worth (at most 100) of them, re-solved together: their pods go where the provisioner's
 * simulation puts them (room on the other nodes, and new nodes chosen for exactly these pods) when
 * that saves the minimum on the whole package. The largest such prefix (of at least 3) is found by
 * binary search; without one, the first two nodes, then the first alone. Each command is one step
 * of the from-scratch plan for those pods; the budget bounds the step.
 */
export const repackConsolidation = consolidationMethod({
  name: 'repack',
  reason: 'Underutilized',
  order: 40,
  policy: { pick: 'mostSaving', validation: 'simulateAgain' },
  disruptionClass: 'graceful',
  // As many replacements as the cheapest plan for its pods needs (often more, smaller nodes than
  // it removes), of any type, its candidates' included: the minimum savings hold for the whole
  // package and for each NodePool in it, which keeps it from moving pods for nothing.
  consolidation: {
    maxReplacements: Number.POSITIVE_INFINITY,
    capSameType: false,
    spotToSpotFlexibility: false,
  },
  shouldDisrupt: shouldConsolidate,
  computeCommands(candidates, allowed, simulate, context): readonly DisruptionCommand[] {
    if (context === undefined) return [];
    // Its packages are replaced by spot where they can be: with spot-to-spot consolidation off,
    // spot nodes are left to the methods that may delete them.
    const eligible =
      context.spotToSpot === true ? candidates : candidates.filter((c) => capacityTypeOf(c) !== 'spot');
    const excess = makeExcessShare(context);
    const byExcess = (a: DisruptionCandidate, b: DisruptionCandidate) =>
      excess(b) - excess(a) || byConsolidationOrder(a, b);
    const pool = samePolicy(withinBudget(eligible, allowed, byExcess).slice(0, MULTI_NODE_MAX_CANDIDATES));
    let best = largestPrefix(repackConsolidation, REPACK_MIN_CANDIDATES, pool, simulate, context);
    for (
      let size = Math.min(REPACK_MIN_CANDIDATES - 1, pool.length);
      best === undefined && size > 0;
      size--
    ) {
      const evaluation = evaluateConsolidation(repackConsolidation, pool.slice(0, size), simulate, context);
      if (evaluation.kind === 'command') best = evaluation.command;
    }
    return best === undefined ? [] : [best];
  },
});
