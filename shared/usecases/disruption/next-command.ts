import { commandMoves } from './balanced.ts';
import type { CandidateSet } from './candidates.ts';
import { lookedAt, methodContextFor } from './candidates.ts';
import { memoSimulation, mostSaving } from './choose.ts';
import type { ConsolidationMemo, ConsolidationState } from './consolidated.ts';
import type {
  ConsolidationMove,
  DisruptionCandidate,
  DisruptionCommand,
  DisruptionMethod,
} from './method.ts';
import { methodsAsked } from './methods.ts';
import { type AllowedByPool, allowedByPool, type PassRead } from './pass-candidates.ts';
import { simulateWithout } from './simulation.ts';

// Which command a disruption pass starts next, from its candidates: the methods in the
// controller's order (methods.ts), each on the candidates it accepts, within each NodePool's
// budgets for the method's reason. By default, as Karpenter does, the first method that has a
// command acts and no later method is asked, and repack is not among the methods. With repack
// switched on (`repackConsolidation`, Flotilla's own), repack joins them and the first commands of
// the consolidation methods (policy `mostSaving`) compete: the one that saves most is taken; a
// method whose policy is `first` still acts at once. The controller and `flotilla explain node`
// both ask here, so what explain says a pass does is what a pass does. Pure.

export interface NextCommandInput extends PassRead {
  /** The pass's candidates (passCandidates). */
  readonly set: CandidateSet;
  /** Karpenter's `SpotToSpotConsolidation` feature gate. @default false */
  readonly spotToSpotConsolidation?: boolean;
  /**
   * Flotilla's repack consolidation (`repackConsolidation`): repack is asked, and the consolidation
   * methods' first commands compete on savings. Off, Karpenter's methods alone, first that acts.
   * @default false
   */
  readonly repackConsolidation?: boolean;
  /**
   * Ask every method that accepts a candidate, also past the one whose command is taken (what
   * `explain` shows of a node); the command taken is the same either way. @default false
   */
  readonly everyMethod?: boolean;
  /**
   * NodePools whose drift replacements wait on their alarms (rollout-hold.ts): drift and static
   * drift leave their candidates alone. @default none
   */
  readonly rolloutHeld?: ReadonlyMap<string, string>;
  /**
   * Karpenter's consolidated memo (consolidated.ts) and the state this call decides on
   * (`consolidationStateKey`, built only once a consolidation method has candidates): a method
   * that found nothing in the same state and five-minute epoch is not asked again. @default every
   * method asked
   */
  readonly consolidated?: { readonly memo: ConsolidationMemo; readonly state: () => string };
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
  /** The consolidation moves weighed, as Karpenter's Balanced evaluator counts them. */
  readonly moves: readonly ConsolidationMove[];
}

/** The command a pass starts next (see the file's comment), with what each method answered. */
export function nextCommand(input: NextCommandInput): NextCommand {
  const { set, nowMs } = input;
  const stays = new Map<string, string>();
  const moves: ConsolidationMove[] = [];
  // Whether the method being asked looked at only some of its candidates (MethodContext.partial).
  let partial = false;
  const context = {
    ...methodContextFor(set, input.input, nowMs, input.spotToSpotConsolidation === true),
    unconsolidatable: (candidate: DisruptionCandidate, why: string) =>
      stays.set(candidate.nodeClaim.name, why),
    move: (move: ConsolidationMove) => moves.push(move),
    partial: () => {
      partial = true;
    },
  };
  // One state for every method of this call: a set two methods both try is simulated once.
  const simulate = memoSimulation((candidates, options) =>
    simulateWithout(input.input, input.state, input.claims, candidates, options),
  );
  const looks: MethodLook[] = [];
  const firsts: DisruptionCommand[] = [];
  let state: ConsolidationState | undefined;
  const stateOf = (memoed: NonNullable<NextCommandInput['consolidated']>) =>
    (state ??= memoed.memo.state(memoed.state(), nowMs));
  const repack = input.repackConsolidation === true;
  for (const method of methodsAsked(repack)) {
    if (input.everyMethod !== true && isSettled(firsts, repack)) break;
    const looked = lookedAt(method, set);
    const held = method.reason === 'Drifted' ? input.rolloutHeld : undefined;
    const accepted = looked.filter(
      (c) => method.shouldDisrupt(c, nowMs) && held?.has(c.nodePool.pool.name) !== true,
    );
    if (accepted.length === 0) continue;
    const budgets = allowedByPool(set, input.pools, method.reason, nowMs);
    const budgetBlocked = new Set<string>();
    for (const c of accepted) {
      const pool = c.nodePool.pool.name;
      if ((budgets.allowed.get(pool) ?? 0) < 1) budgetBlocked.add(`${pool}/${method.reason}`);
    }
    const memoed = method.consolidation === undefined ? undefined : input.consolidated;
    const look = memoed === undefined ? undefined : lookKey(accepted, budgets.allowed);
    const settled =
      memoed !== undefined &&
      look !== undefined &&
      memoed.memo.isConsolidated(method.name, look, stateOf(memoed));
    partial = false;
    const commands = settled ? [] : method.computeCommands(accepted, budgets.allowed, simulate, context);
    // As Karpenter: a look a budget held back, or one cut short, is not a look that found nothing.
    const foundNothing = !settled && commands.length === 0 && budgetBlocked.size === 0 && !partial;
    if (memoed !== undefined && look !== undefined && foundNothing)
      memoed.memo.markConsolidated(method.name, look, stateOf(memoed));
    looks.push({ method, accepted, budgets, budgetBlocked: [...budgetBlocked], commands });
    const [first] = commands;
    if (first !== undefined && method.consolidation !== undefined && first.candidates.length > 1) {
      moves.push(...commandMoves(first));
    }
    if (first !== undefined) firsts.push(first);
  }
  return { command: pickCommand(firsts, repack), looks, stays, moves };
}

/** What a consolidation method's look adds to the cluster's state: its candidates and budgets. */
function lookKey(accepted: readonly DisruptionCandidate[], allowed: ReadonlyMap<string, number>): string {
  const names = accepted.map((c) => c.nodeClaim.name).join(',');
  const budgets = [...allowed].map(([pool, n]) => `${pool}=${n}`).join(',');
  return `${names}\n${budgets}`;
}

/** Whether the methods asked so far already decide the command: no later method can change it. */
function isSettled(firsts: readonly DisruptionCommand[], repack: boolean): boolean {
  const [head] = firsts;
  return head !== undefined && (!repack || head.method.policy.pick === 'first');
}

/**
 * The command a pass takes from the methods' first commands, in the methods' order. By default
 * (Karpenter's rule) the first of them: a later method never overrides an earlier one, whatever it
 * saves. With repack on, a method whose policy is `first` still wins at once; otherwise the
 * consolidation commands compete and the one that saves most is taken (the earlier on a tie).
 */
export function pickCommand(
  firsts: readonly DisruptionCommand[],
  repack: boolean,
): DisruptionCommand | undefined {
  const [head] = firsts;
  if (head === undefined || isSettled(firsts, repack)) return head;
  return mostSaving(firsts.filter((c) => c.method.policy.pick === 'mostSaving'));
}
