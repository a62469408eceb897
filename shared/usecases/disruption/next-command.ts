import type { CandidateSet } from './candidates.ts';
import { methodContextFor } from './candidates.ts';
import { memoSimulation, mostSaving } from './choose.ts';
import type { DisruptionCandidate, DisruptionCommand, DisruptionMethod } from './method.ts';
import { METHODS } from './methods.ts';
import { type AllowedByPool, allowedByPool, type PassRead } from './pass-candidates.ts';
import { simulateWithout } from './simulation.ts';

// Which command a disruption pass starts next, from its candidates: the methods in the
// controller's order (methods.ts), each on the candidates it accepts, within each NodePool's
// budgets for the method's reason. The first command of a method whose policy is `first` is taken
// at once (no later method is asked); otherwise the consolidation methods' first commands compete
// and the one that saves most is taken. The controller and `flotilla explain node` both ask here,
// so what explain says a pass does is what a pass does. Pure.

export interface NextCommandInput extends PassRead {
  /** The pass's candidates (passCandidates). */
  readonly set: CandidateSet;
  /** Karpenter's `SpotToSpotConsolidation` feature gate. @default false */
  readonly spotToSpotConsolidation?: boolean;
  /**
   * Ask every method that accepts a candidate, also past the one whose command is taken (what
   * `explain` shows of a node); the command taken is the same either way. @default false
   */
  readonly everyMethod?: boolean;
}

/** What one method was asked and answered. */
export interface MethodLook {
  readonly method: DisruptionMethod;
  /** The candidates the method accepts now (its shouldDisrupt), in the candidates' order. */
  readonly accepted: readonly DisruptionCandidate[];
  /** What each NodePool's budgets allow for the method's reason, and which budget said so. */
  readonly budgets: AllowedByPool;
  /** `<nodePool>/<reason>` for each NodePool of an accepted candidate whose budget allows none now. */
  readonly budgetBlocked: readonly string[];
  /** The method's commands, the one a pass would take first at the head. */
  readonly commands: readonly DisruptionCommand[];
}

export interface NextCommand {
  /** The command a pass starts now, if any. */
  readonly command: DisruptionCommand | undefined;
  /**
   * The methods asked, in order; those that accept no candidate are left out (they are never
   * asked for commands, nor their budgets computed).
   */
  readonly looks: readonly MethodLook[];
  /** Why consolidation keeps the candidates it looked at in vain, by NodeClaim name (Unconsolidatable). */
  readonly stays: ReadonlyMap<string, string>;
}

/** The command a pass starts next (see the file's comment), with what each method answered. */
export function nextCommand(input: NextCommandInput): NextCommand {
  const { set, nowMs } = input;
  const stays = new Map<string, string>();
  const context = {
    ...methodContextFor(set, input.input, nowMs, input.spotToSpotConsolidation === true),
    unconsolidatable: (candidate: DisruptionCandidate, why: string) =>
      stays.set(candidate.nodeClaim.name, why),
  };
  // One state for every method of this call: a set two methods both try is simulated once.
  const simulate = memoSimulation((candidates, options) =>
    simulateWithout(input.input, input.state, input.claims, candidates, options),
  );
  const looks: MethodLook[] = [];
  const consolidation: DisruptionCommand[] = [];
  let taken: DisruptionCommand | undefined;
  for (const method of METHODS) {
    if (taken !== undefined && input.everyMethod !== true) break;
    const looked = method.staticNodePools === true ? (set.staticCandidates ?? []) : set.candidates;
    const accepted = looked.filter((c) => method.shouldDisrupt(c, nowMs));
    if (accepted.length === 0) continue;
    const budgets = allowedByPool(set, input.pools, method.reason, nowMs);
    const budgetBlocked = new Set<string>();
    for (const c of accepted) {
      const pool = c.nodePool.pool.name;
      if ((budgets.allowed.get(pool) ?? 0) < 1) budgetBlocked.add(`${pool}/${method.reason}`);
    }
    const commands = method.computeCommands(accepted, budgets.allowed, simulate, context);
    looks.push({ method, accepted, budgets, budgetBlocked: [...budgetBlocked], commands });
    const [first] = commands;
    if (first === undefined || taken !== undefined) continue;
    if (method.policy.pick === 'first') taken = first;
    else consolidation.push(first);
  }
  return { command: taken ?? mostSaving(consolidation), looks, stays };
}
