import type { NodeClaimPlan } from '../../core/index.ts';
import { type CandidateSet, lookedAt } from './candidates.ts';
import type { DisruptionCandidate, DisruptionCommand, SimulateScheduling } from './method.ts';
import { leftoverWhy } from './simulation.ts';

// The check a graceful command (emptiness, consolidation) passes after its validation wait, as
// Karpenter's validator, and every command on the API server's objects (confirm-command.ts), by its
// method's validation policy: its candidates, read again, must all still be candidates for the method
// (not deleted, not nominated, not blocked, within their NodePool's budget); a consolidation is
// simulated again on that read and must come out as the same command: a delete still a delete, as
// many new nodes as the command launches, and every instance type the command may launch still
// able to take the pods (the command launches with the options it was decided with). Emptiness
// keeps the candidates that are still empty and within budget and drops the others. Pure.

/** A candidate a validation dropped, and why. */
export interface DroppedCandidate {
  readonly nodeClaim: string;
  readonly why: string;
}

export type Validation =
  | {
      readonly kind: 'valid';
      /** The command to carry out: its candidates as read again (for emptiness, those still valid). */
      readonly command: DisruptionCommand;
      /** Emptiness: the candidates left out. */
      readonly dropped: readonly DroppedCandidate[];
    }
  | {
      readonly kind: 'invalid';
      readonly why: string;
      /** Candidates that failed validation (Karpenter counts every candidate of a failed command). */
      readonly failed: number;
    };

export interface ValidateInput {
  /** The command as decided; its method says how it is validated. */
  readonly command: DisruptionCommand;
  /** The candidates as the read after the wait makes them. */
  readonly fresh: CandidateSet;
  /** Per NodePool, how many nodes its budgets allow for the command's reason now. */
  readonly allowed: ReadonlyMap<string, number>;
  /** The disruption simulation on the read after the wait. */
  readonly simulate: SimulateScheduling;
  readonly nowMs: number;
}

/** Whether `command` still holds on the cluster as read again, and the command to carry out. */
export function validateCommand(input: ValidateInput): Validation {
  const { command } = input;
  const { validation } = command.method.policy;
  const checked = checkCandidates(input);
  const invalid = (why: string): Validation => ({ kind: 'invalid', why, failed: command.candidates.length });
  if (validation === 'keepValid') {
    if (checked.valid.length === 0) {
      const [first, ...more] = checked.dropped;
      if (first === undefined) return invalid('the command has no candidates');
      const others = more.length === 0 ? '' : ` (and ${more.length} more candidates no longer valid)`;
      return invalid(`nodeClaim ${first.nodeClaim} ${first.why}${others}`);
    }
    // A window's command keeps only the nodes the pool is still over its window's limits by.
    const needed = command.method.keepNeeded?.(checked.valid, input.fresh.windowExcess ?? new Map());
    if (needed !== undefined && needed.length < checked.valid.length) {
      const kept = new Set(needed);
      for (const c of checked.valid) {
        if (kept.has(c)) continue;
        checked.dropped.push({
          nodeClaim: c.nodeClaim.name,
          why: `is no longer needed to bring nodePool ${c.nodePool.pool.name} within its schedule's limits`,
        });
      }
      if (needed.length === 0) return invalid("its NodePools are within their schedules' limits now");
      return { kind: 'valid', command: { ...command, candidates: needed }, dropped: checked.dropped };
    }
    return { kind: 'valid', command: { ...command, candidates: checked.valid }, dropped: checked.dropped };
  }
  const first = checked.dropped[0];
  if (first !== undefined) return invalid(`nodeClaim ${first.nodeClaim} ${first.why}`);
  const fresh: DisruptionCommand = { ...command, candidates: checked.valid };
  if (validation !== 'simulateAgain') return { kind: 'valid', command: fresh, dropped: [] };
  // Simulated as the command was decided (a single node re-planned onto one new node stays so).
  const why = simulatedAgain(command, input.simulate(checked.valid, command.simulation));
  return why === undefined ? { kind: 'valid', command: fresh, dropped: [] } : invalid(why);
}

/** The command's candidates as read again, in its order, and those that no longer are. */
function checkCandidates(input: ValidateInput): {
  valid: DisruptionCandidate[];
  dropped: DroppedCandidate[];
} {
  const now = new Map(lookedAt(input.command.method, input.fresh).map((c) => [c.nodeClaim.name, c]));
  const excluded = new Map(input.fresh.excluded.map((e) => [e.nodeClaim.name, e.why]));
  const left = new Map(input.allowed);
  const valid: DisruptionCandidate[] = [];
  const dropped: DroppedCandidate[] = [];
  for (const c of input.command.candidates) {
    const name = c.nodeClaim.name;
    const candidate = now.get(name);
    const why = whyNot(input, candidate, excluded.get(name), left);
    if (why !== undefined || candidate === undefined) {
      dropped.push({ nodeClaim: name, why: why ?? 'is no longer a disruption candidate' });
      continue;
    }
    const pool = candidate.nodePool.pool.name;
    left.set(pool, (left.get(pool) ?? 0) - 1);
    valid.push(candidate);
  }
  return { valid, dropped };
}

function whyNot(
  input: ValidateInput,
  candidate: DisruptionCandidate | undefined,
  excluded: string | undefined,
  left: ReadonlyMap<string, number>,
): string | undefined {
  if (candidate === undefined) {
    // Deleted, in another command, tainted, or left out with a reason users see (nominated).
    return excluded === undefined
      ? 'is no longer a disruption candidate'
      : `is no longer a candidate: ${excluded}`;
  }
  const { method } = input.command;
  if (!method.shouldDisrupt(candidate, input.nowMs)) {
    const blocker = candidate.blockers[0];
    return blocker === undefined
      ? `is no longer a candidate for ${method.name}`
      : `is blocked now: ${blocker.why}`;
  }
  const pool = candidate.nodePool.pool.name;
  if ((left.get(pool) ?? 0) < 1) return `would exceed nodePool ${pool}'s disruption budget`;
  return undefined;
}

/** Why a command no longer holds on its simulation run again (as it was decided), if it does not. */
function simulatedAgain(
  command: DisruptionCommand,
  result: ReturnType<SimulateScheduling>,
): string | undefined {
  const [unplaced] = result.unschedulable;
  if (unplaced !== undefined) {
    return `${result.unschedulable.length} pods would have no place now (${unplaced.pod.namespace}/${unplaced.pod.name}: ${unplaced.message})`;
  }
  const needed = result.nodeClaims.length + (result.pendingOnlyNodeClaims ?? 0);
  const launches = command.replacements.length;
  if (launches === 0 && needed > 0) return `a delete became a replace: the pods need ${needed} new nodes now`;
  if (needed > launches) return `the pods need ${needed} new nodes now, the command launches ${launches}`;
  if (needed < launches) return `the pods need ${needed} new nodes now, fewer than the command's ${launches}`;
  return (
    typesStillFit(command.replacements, result.nodeClaims) ??
    leftoverWhy(result.kubeSchedulerLeftovers?.() ?? [])
  );
}

/**
 * Each replacement of the command matched to a distinct new node of the simulation in its NodePool
 * whose instance types include all of the replacement's: the command launches with its own
 * options, so each of them must still take the pods. Why not, if they do not.
 */
function typesStillFit(
  replacements: readonly NodeClaimPlan[],
  plans: readonly NodeClaimPlan[],
): string | undefined {
  const free = plans.map((p) => ({
    pool: p.nodePoolName,
    types: new Set(p.instanceTypes.map((t) => t.name)),
  }));
  for (const replacement of replacements) {
    const names = replacement.instanceTypes.map((t) => t.name);
    const match = free.findIndex(
      (p) => p.pool === replacement.nodePoolName && names.every((n) => p.types.has(n)),
    );
    if (match < 0) {
      const options = [...new Set(plans.flatMap((p) => p.instanceTypes.map((t) => t.name)))];
      return `the replacement's instance types [${names.slice(0, 10).join(', ')}] are not all among those that fit the pods now [${options.slice(0, 10).join(', ')}]`;
    }
    free.splice(match, 1);
  }
  return undefined;
}
