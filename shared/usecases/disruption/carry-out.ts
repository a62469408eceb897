import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { DecisionOutput } from '../decisions/decision.ts';
import type { DisruptDecision } from '../decisions/disruption.ts';
import { reconcileLaunchBackoff } from '../runaway-guard/index.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import type { CommandRecord } from '../state/command-record.ts';
import type { CandidateSet } from './candidates.ts';
import type { Confirmation } from './confirm.ts';
import { confirmCommand } from './confirm-command.ts';
import { decisionForCommand } from './describe.ts';
import {
  createReplacements,
  deleteCandidates,
  digest,
  type EffectPorts,
  markCandidates,
  replacementNames,
} from './effects.ts';
import {
  consolidationChosen,
  consolidationRejected,
  disruptionLaunching,
  disruptionWaitingReadiness,
  recordAll,
} from './events.ts';
import type { DisruptionCommand } from './method.ts';
import { allowedByPool } from './pass-candidates.ts';
import type { HeldLease } from './pass-lease.ts';
import { simulateWithout } from './simulation.ts';
import { type Validation, validateCommand } from './validation.ts';

// A new command of a disruption pass carried out: validated after its wait (graceful methods),
// decided again on the API server's objects (every method: confirm-command.ts), the lease
// confirmed, then its writes: the replacements, the marks, the deletes. Each step follows the
// rules of the command's method (its disruption class, its validation policy, whether it
// consolidates); its record names the method.

/** What carrying a command out needs of its pass (read when asked: a validation reads again). */
export interface CommandPass {
  readonly ports: EffectPorts & DecisionOutput;
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  readonly leaseToken: number;
  readonly held: HeldLease;
  /** Flotilla's runaway guard (the stack's `runawayGuard`); off, reclaimed nodes are not judged. */
  readonly runawayGuard: boolean;
  state(): ClusterState;
  input(): SchedulingInput | undefined;
  now(): number;
  claims(): readonly ClusterNodeClaim[];
  candidates(): CandidateSet;
  /** Waits the validation period and reads the cluster again; false when the lease was lost. */
  readAgain(): Promise<boolean>;
  confirmation(): Confirmation;
  /** Counts candidates that failed validation. */
  failed(count: number): void;
  record(decision: DisruptDecision): void;
}

/** A new command's id (from its method, the lease, its start and its candidates) and start time. */
export function commandIdentity(
  pass: Pick<CommandPass, 'leaseToken' | 'now'>,
  command: DisruptionCommand,
): { readonly id: string; readonly startedAt: string } {
  const startedAt = new Date(pass.now()).toISOString();
  const names = command.candidates.map((c) => c.nodeClaim.name).sort();
  return { id: digest([command.method.name, String(pass.leaseToken), startedAt, ...names]), startedAt };
}

/** Carries a new command out; false when it was abandoned (the pass stops starting commands). */
export async function carryOut(pass: CommandPass, proposed: DisruptionCommand): Promise<boolean> {
  let command = proposed;
  const { method } = proposed;
  const { id, startedAt } = commandIdentity(pass, proposed);
  const names = command.candidates.map((c) => c.nodeClaim.name);
  let dropped: string | undefined;
  let droppedCount = 0;
  const consolidating = method.consolidation !== undefined;
  if (consolidating) await recordAll(pass.ports.cluster, consolidationChosen(command));
  if (method.disruptionClass === 'graceful') {
    const checked = await revalidate(pass, command);
    if (checked.kind === 'invalid') {
      if (consolidating) await recordAll(pass.ports.cluster, consolidationRejected(command, checked.why));
      pass.failed(checked.failed);
      pass.record(
        failedAt(decisionForCommand(command, pass.input(), id, [], 'abandoned', checked.why), checked.failed),
      );
      return false;
    }
    command = checked.command;
    pass.failed(checked.dropped.length);
    droppedCount = checked.dropped.length;
    const [first] = checked.dropped;
    if (first !== undefined) {
      dropped = `${checked.dropped.length} candidates dropped at validation (nodeClaim ${first.nodeClaim} ${first.why})`;
    }
  }
  // Whatever the method, decided again on the API server's objects (confirm-command.ts): the
  // command was decided on a read that may be the cluster summary, untrusted.
  const confirmed = await confirmCommand({
    confirmation: pass.confirmation(),
    command,
    pools: pass.pools,
    nowMs: pass.now(),
  });
  if (confirmed.kind === 'abandoned') {
    if (consolidating) await recordAll(pass.ports.cluster, consolidationRejected(command, confirmed.why));
    pass.failed(confirmed.failed);
    pass.record(
      failedAt(
        decisionForCommand(command, pass.input(), id, [], 'abandoned', confirmed.why),
        droppedCount + confirmed.failed,
      ),
    );
    return false;
  }
  command = confirmed.command;
  // The lease, read consistently: a pass whose lease ran out writes nothing.
  if (!(await pass.held.confirm())) {
    pass.record(
      decisionForCommand(command, pass.input(), id, [], 'abandoned', 'the disruption lease was lost'),
    );
    return false;
  }
  const record: CommandRecord = {
    id,
    method: method.name,
    reason: command.reason,
    candidates: names,
    replacements: replacementNames(id, command.replacements),
    startedAt,
  };
  const candidates = command.candidates.map((c) => c.nodeClaim);
  if (command.replacements.length === 0) {
    await markCandidates(pass.ports, candidates, record);
    await deleteCandidates(pass.ports, candidates, command.reason);
    pass.record(
      failedAt(decisionForCommand(command, pass.input(), id, [], 'deleted', dropped), droppedCount),
    );
    if (command.reason === 'Empty' && pass.runawayGuard) {
      await judgeReclaimed(pass, candidates, confirmed.world.state.nodes);
    }
    return true;
  }
  await createReplacements(
    pass.ports,
    command.replacements,
    record,
    pass.pools,
    pass.classes,
    command.replacementAnnotations,
  );
  await markCandidates(pass.ports, candidates, record);
  // Launched and, just created, not initialized: the command waits on them from now on.
  await recordAll(
    pass.ports.cluster,
    record.replacements.flatMap((name) => [
      disruptionLaunching(name, command.reason),
      disruptionWaitingReadiness(name),
    ]),
  );
  pass.record(
    failedAt(decisionForCommand(command, pass.input(), id, record.replacements, 'started'), droppedCount),
  );
  return true;
}

/** The decision with the candidates that failed the command's validation, when any did. */
function failedAt(decision: DisruptDecision, failedValidations: number): DisruptDecision {
  return failedValidations === 0 ? decision : { ...decision, failedValidations };
}

/** Waits the validation period, reads the cluster again and checks the command on that read (validation.ts). */
async function revalidate(pass: CommandPass, command: DisruptionCommand): Promise<Validation> {
  if (!(await pass.readAgain())) return { kind: 'invalid', why: 'the disruption lease was lost', failed: 0 };
  const fresh = pass.candidates();
  const nowMs = pass.now();
  const { allowed, problems } = allowedByPool(fresh, pass.pools, command.reason, nowMs);
  if (problems.length > 0)
    pass.ports.logger.warn('disruption budgets ignored', { problems: problems.slice(0, 10) });
  const [state, claims, input] = [pass.state(), pass.claims(), pass.input()];
  return validateCommand({
    command,
    fresh,
    allowed,
    simulate: (candidates, options) => simulateWithout(input, state, claims, candidates, options),
    nowMs,
  });
}

/**
 * The runaway guard on the empty nodes this pass reclaimed, judged with their Nodes as the pass
 * confirmed them (the guard's `reclaimedEmpty` trigger). A failure it counts here the provisioner does
 * not count again (the NodePool's state remembers it). The command is done whatever happens
 * here: an error is logged, and the provisioner's own judgement still stands.
 */
async function judgeReclaimed(
  pass: CommandPass,
  reclaimed: readonly ClusterNodeClaim[],
  confirmedNodes: readonly ClusterNode[],
): Promise<void> {
  const state = pass.state();
  try {
    await reconcileLaunchBackoff(
      { cluster: pass.ports.cluster, logger: pass.ports.logger, metrics: pass.ports.metrics },
      {
        kind: 'reclaimedEmpty',
        reclaimed,
        pools: state.nodePools,
        claims: state.nodeClaims,
        // The Nodes as the command's confirmation read them: a reclaimed node's taints are the API
        // server's, and the guard does not read the reclaimed NodeClaims again.
        nodes: confirmedNodes,
        pendingPods: state.pendingPods,
        nowMs: pass.now(),
      },
    );
  } catch (error) {
    pass.ports.logger.warn('launch backoff not judged for the reclaimed nodes', {
      nodeClaims: reclaimed.map((c) => c.name),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
