import {
  largestPrefix,
  MULTI_NODE_MAX_CANDIDATES,
  samePolicy,
  shouldConsolidate,
  withinBudget,
} from './consolidation.ts';
import { consolidationMethod, type DisruptionCommand } from './method.ts';

// Karpenter's multi-node consolidation: several nodes deleted, or replaced by one cheaper node,
// in one command. Its rules and search; the evaluation is consolidation.ts's. Pure.

/**
 * Multi-node consolidation: the largest prefix (at most 100, in consolidation order, within budgets)
 * that consolidates, found by binary search as Karpenter does; candidates of one NodePool only when
 * that pool is `Balanced` (its score is per pool).
 */
export const multiNodeConsolidation = consolidationMethod({
  name: 'multi-node',
  reason: 'Underutilized',
  order: 30,
  policy: { pick: 'mostSaving', validation: 'simulateAgain' },
  disruptionClass: 'graceful',
  // As Karpenter: one replacement at most. With more, a command could replace a node by an
  // identical one as part of a package whose savings come from another node.
  consolidation: { maxReplacements: 1, capSameType: true, spotToSpotFlexibility: false },
  shouldDisrupt: shouldConsolidate,
  computeCommands(candidates, allowed, simulate, context): readonly DisruptionCommand[] {
    if (context === undefined) return [];
    const pool = samePolicy(withinBudget(candidates, allowed).slice(0, MULTI_NODE_MAX_CANDIDATES));
    if (pool.length < 2) return [];
    const best = largestPrefix(multiNodeConsolidation, 2, pool, simulate, context);
    return best === undefined ? [] : [best];
  },
});
