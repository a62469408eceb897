import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { DECISION_SAMPLE_SIZE } from '../decisions/decision.ts';
import type { DisruptionPassDecision } from '../decisions/disruption.ts';
import type { ConsolidationMoveTally } from '../decisions/observation.ts';
import type { CandidateSet } from './candidates.ts';
import type { ConditionWriteCounts } from './condition-writes.ts';
import { drift } from './drift.ts';
import { emptiness } from './emptiness.ts';
import type { ConsolidationMove } from './method.ts';
import { METHODS } from './methods.ts';
import { passFigures } from './observe.ts';

// The line a disruption pass ends with: what it looked at, what held it back, what it started. Pure.

export interface PassOutcome {
  /** Why the pass stopped starting commands early, if it did. */
  readonly stopped: 'deadline' | 'lease lost' | undefined;
  readonly commands: number;
  /** The candidates as last computed. */
  readonly set: CandidateSet;
  readonly budgetBlocked: ReadonlySet<string>;
  readonly expired: number;
  readonly failedValidations: number;
  readonly inFlight: number;
  /** The consolidation moves the pass weighed. @default none */
  readonly moves?: readonly ConsolidationMove[];
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly claims: readonly ClusterNodeClaim[];
  readonly nowMs: number;
  /** The condition writes' counts, once they are done. @default none */
  readonly conditionWrites?: ConditionWriteCounts;
  /** How long each phase took. @default none */
  readonly phasesMs?: DisruptionPassDecision['phasesMs'];
}

export function passDecision(outcome: PassOutcome): DisruptionPassDecision {
  const { stopped, commands, set, budgetBlocked, nowMs } = outcome;
  const looked = [...set.candidates, ...(set.staticCandidates ?? [])];
  const blocked = looked.filter((c) => c.blockers.length > 0).length + set.excluded.length;
  return {
    kind: 'disruptionPass',
    // A pass cut short says so, whether or not it started commands before.
    reason:
      stopped !== undefined
        ? stopped
        : commands > 0
          ? 'commands started'
          : looked.length === 0
            ? 'no candidates'
            : budgetBlocked.size > 0 || blocked > 0
              ? 'blocked'
              : 'nothing to do',
    candidates: looked.length,
    empty: set.candidates.filter((c) => emptiness.shouldDisrupt(c, nowMs)).length,
    drifted:
      set.candidates.filter((c) => drift.shouldDisrupt(c, nowMs)).length +
      (set.staticCandidates ?? []).length,
    expired: outcome.expired,
    blocked,
    budgetBlocked: [...budgetBlocked].sort(),
    ...(set.excluded.length === 0
      ? {}
      : {
          excluded: set.excluded
            .slice(0, DECISION_SAMPLE_SIZE)
            .map((e) => ({ nodeClaim: e.nodeClaim.name, node: e.node.name, why: e.why })),
        }),
    commands,
    failedValidations: outcome.failedValidations,
    inFlight: outcome.inFlight,
    ...moveTallies(outcome.moves ?? []),
    ...(outcome.conditionWrites === undefined ? {} : { conditionWrites: outcome.conditionWrites }),
    ...(outcome.phasesMs === undefined ? {} : { phasesMs: outcome.phasesMs }),
    ...passFigures({
      set,
      methods: METHODS,
      budgetBlocked: new Set(budgetBlocked),
      pools: outcome.pools,
      claims: outcome.claims,
      nowMs,
    }),
  };
}

/** The moves weighed, counted by NodePool, policy and verdict, with their finite scores. */
function moveTallies(
  moves: readonly ConsolidationMove[],
): Pick<DisruptionPassDecision, 'consolidationMoves'> {
  const byKey = new Map<string, ConsolidationMoveTally & { count: number; scores: number[] }>();
  for (const move of moves) {
    const key = JSON.stringify([move.nodePool, move.policy, move.decision]);
    const { nodePool, policy, decision } = move;
    const tally = byKey.get(key) ?? { nodePool, policy, decision, count: 0, scores: [] };
    byKey.set(key, tally);
    tally.count += 1;
    if (move.score !== undefined && Number.isFinite(move.score)) {
      tally.scores.push(Math.round(move.score * 1000) / 1000);
    }
  }
  return byKey.size === 0 ? {} : { consolidationMoves: [...byKey.values()] };
}

/** The line of a pass that did not run: another holds the disruption lease. */
export function leaseHeldDecision(): DisruptionPassDecision {
  return {
    kind: 'disruptionPass',
    reason: 'lease held',
    candidates: 0,
    empty: 0,
    drifted: 0,
    expired: 0,
    blocked: 0,
    budgetBlocked: [],
    commands: 0,
    failedValidations: 0,
    inFlight: 0,
    eligible: {},
    blockedBy: {},
    allowed: {},
  };
}
