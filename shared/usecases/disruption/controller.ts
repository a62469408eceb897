import type { CloudInstance, EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { Lease } from '../../ports/lease.ts';
import { SUMMARY_MAX_AGE_MS } from '../../ports/summary.ts';
import { writeDecision, writeDecisions } from '../decisions/decision.ts';
import type { DisruptDecision } from '../decisions/disruption.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import { commandsInFlight } from '../state/command-record.ts';
import { reportBlocked } from './blocked.ts';
import { type CandidateSet, methodContextFor } from './candidates.ts';
import { type CommandPass, carryOut } from './carry-out.ts';
import { type ConditionContext, claimConditions, claimViews } from './claim-view.ts';
import {
  type ConditionWriteCounts,
  type ConditionWrites,
  settleConditionWrites,
  startConditionWrites,
} from './condition-writes.ts';
import { Confirmation } from './confirm.ts';
import { consolidationStateKey } from './consolidated.ts';
import { doNotDisruptEvents, recordAll } from './events.ts';
import { expireNodeClaims } from './expiration.ts';
import { progressCommands, removeStaleMarks } from './in-flight.ts';
import type { ConsolidationMove, DisruptionCommand, MethodContext } from './method.ts';
import { nextCommand } from './next-command.ts';
import { observeCluster } from './observe.ts';
import { passCandidates } from './pass-candidates.ts';
import { startedInFlight, withoutStarted } from './pass-end.ts';
import { type HeldLease, holdLease } from './pass-lease.ts';
import { PassPhases } from './pass-phases.ts';
import { readForPass } from './pass-read.ts';
import { leaseHeldDecision, passDecision } from './pass-summary.ts';
import type { PassView } from './pass-view.ts';
import { propose } from './propose.ts';
import { rolloutHolds } from './rollout-hold.ts';
import { reportUnconsolidatable } from './unconsolidatable.ts';

// The disruption controller: one pass per invocation of the disruption Lambda, under the
// disruption lease (one disruption decision at a time per cluster). A pass keeps the NodeClaim
// conditions (Drifted, Consolidatable), expires NodeClaims past expireAfter, moves the commands in
// flight on (delete the candidates once every replacement is initialized, or undo them), removes
// stale `karpenter.sh/disrupted` taints, and then asks the methods in Karpenter's order (with
// Flotilla's repack between multi-node and single-node consolidation) for new commands, within
// each NodePool's budgets: emptiness, then static drift (static NodePools' nodes), then drift, then
// the consolidation command that saves most.

/** The disruption lease's TTL: what a pass that dies keeps the next ones waiting, at most. */
export const DEFAULT_LEASE_TTL_SECONDS = 45;

/** Time a command needs after it starts, besides its validation wait: reads, writes, margin. */
const COMMAND_MARGIN_MS = 20_000;

/**
 * The share of the time from its start to its deadline in which a pass plans its work: no command
 * starts that would not be done by then, and no condition write starts after it. The rest is for
 * calls slower than planned; what is left over goes to the next pass, half a minute later.
 */
export const WORK_SHARE = 0.5;

/** Karpenter's commandValidationDelay: graceful commands are checked again after this wait. */
export const VALIDATION_MS = 15_000;
export { COMMAND_TIMEOUT_MS } from './in-flight.ts';
export { METHODS } from './methods.ts';

import type { DisruptionOptions, DisruptionPassResult, DisruptionPorts } from './pass-options.ts';

export type { DisruptionOptions, DisruptionPassResult, DisruptionPorts } from './pass-options.ts';

/**
 * One disruption pass. Safe to run concurrently (all but one skip on the lease) and to repeat:
 * commands are recorded on their NodeClaims, so a pass that dies is finished or undone by the next.
 * @throws ClusterApiError / CloudApiError / CatalogUnavailableError when state cannot be read.
 */
export async function disrupt(
  ports: DisruptionPorts,
  options: DisruptionOptions,
): Promise<DisruptionPassResult> {
  const logger = ports.logger.child({ holder: options.holder });
  const leaseName = options.leaseName ?? 'disruption';
  const ttl = options.leaseTtlSeconds ?? DEFAULT_LEASE_TTL_SECONDS;
  const lease = await ports.leases.acquire(leaseName, options.holder, ports.clock.now(), ttl);
  if (lease === undefined) {
    writeDecision({ logger, metrics: ports.metrics }, leaseHeldDecision());
    return { kind: 'skipped', decisions: [], inFlight: 0 };
  }
  const held = holdLease(ports, lease, ttl);
  const pass = new Pass({ ...ports, logger }, options, lease, held);
  try {
    return await pass.run();
  } finally {
    await held.stop();
    // The end of its pod-startup window, for the next pass to go on from (kept when it has none).
    await ports.leases.release(held.current(), ports.clock.now(), pass.observedUntilMs);
  }
}

class Pass {
  private state!: ClusterState;
  private claims: ClusterNodeClaim[] = [];
  private input: SchedulingInput | undefined;
  private readonly decisions: DisruptDecision[] = [];
  /** Candidates of this pass's commands that failed their validation (Karpenter's failed validations). */
  private failedValidations = 0;
  private readonly pools = new Map<string, ClusterNodePool>();
  private readonly classes = new Map<string, EC2NodeClass>();
  /** The instances EC2 listed as the pass began (the drift checks compare with them). */
  private instances: Promise<ReadonlyMap<string, CloudInstance>> | undefined;
  private instancesRead: ReadonlyMap<string, CloudInstance> = new Map();
  /** The condition writes of the first read, running while the pass goes on. */
  private writes: ConditionWrites | undefined;
  private phases!: PassPhases;
  /** When the pass began (epoch ms). */
  private startedMs = 0;
  /** When the pass last read the cluster (epoch ms), and how long that read took. */
  private readAtMs = 0;
  private readMs = 0;
  /** The end of the pod-startup window the pass observed, once it has. */
  observedUntilMs: number | undefined;
  /** Why consolidation keeps the nodes it looked at, by NodeClaim name (the latest look). */
  private readonly stays = new Map<string, string>();
  /** The consolidation moves the pass weighed. */
  private readonly moves: ConsolidationMove[] = [];
  /** NodePools whose drift and expiration replacements wait on their alarms, with why. */
  private rolloutHeld: ReadonlyMap<string, string> = new Map();

  constructor(
    private readonly ports: DisruptionPorts,
    private readonly options: DisruptionOptions,
    private readonly lease: Lease,
    private readonly held: HeldLease,
  ) {}

  /**
   * Why no new command may start now, or after `beforeMs` more (a read): the work time is near its
   * end, or the lease was lost.
   */
  private mustStop(beforeMs = 0): 'deadline' | 'lease lost' | undefined {
    if (this.held.lost() === true) return 'lease lost';
    return this.nearDeadline(beforeMs) ? 'deadline' : undefined;
  }

  private now(): number {
    return this.ports.clock.now().getTime();
  }

  /** What the pass's steps read: the cluster as last read, and where decisions go. */
  private view(): PassView {
    return {
      ports: this.ports,
      state: this.state,
      claims: this.claims,
      input: this.input,
      pools: this.pools,
      classes: this.classes,
      leaseToken: this.lease.token,
      nowMs: this.now(),
      rolloutHeld: this.rolloutHeld,
      record: (decision) => this.record(decision),
      confirmation: () => this.confirmation(),
    };
  }

  async run(): Promise<DisruptionPassResult> {
    this.startedMs = this.now();
    this.phases = new PassPhases(() => this.now());
    // EC2's list of the instances is asked for beside the cluster reads, not after them.
    this.instances = this.listInstances();
    this.instances.catch(() => undefined); // thrown where it is awaited
    await this.refresh(this.options.shadow !== true);
    this.phases.end('read');
    try {
      return await this.act();
    } finally {
      await this.writesDone();
    }
  }

  /** Waits for the condition writes: they end before the pass does (and gives up its lease). */
  private async writesDone(): Promise<ConditionWriteCounts | undefined> {
    const writes = this.writes;
    this.writes = undefined;
    return settleConditionWrites(writes, this.ports.logger);
  }

  /** Everything after the first read: expiry, commands in flight, new commands. */
  private async act(): Promise<DisruptionPassResult> {
    await this.held.renew();
    // A shadow pass leaves expiry and the commands in flight to the live autoscaler (expireAfter
    // is the NodePool's: both would expire the same NodeClaims).
    const live = this.options.shadow !== true;
    // Alarms the NodePools name hold their drift and expiration replacements (rollout-hold.ts).
    this.rolloutHeld = await rolloutHolds(this.ports, this.pools.values(), live);
    const expired = live ? await expireNodeClaims(this.view()) : 0;
    if (expired > 0) await this.refresh(false);
    if (live && (await progressCommands(this.view())) > 0) await this.refresh(false);
    if (live) await removeStaleMarks(this.view());
    this.phases.end('inFlight');

    let commands = 0;
    let set = this.candidates();
    const budgetBlocked = new Set<string>();
    let stopped: 'deadline' | 'lease lost' | undefined;
    const maxCommands = this.options.maxCommands ?? 10;
    /** Where the last command's decisions begin, when the pass ends without reading after it. */
    let unreadFrom: number | undefined;
    while (commands < maxCommands) {
      await this.held.renew();
      stopped = this.mustStop();
      if (stopped !== undefined) break;
      const command = this.chooseCommand(set, budgetBlocked);
      const step = live ? carryOut : propose;
      const decisions = this.decisions.length;
      if (command === undefined || !(await step(this.commandPass(), command))) break;
      commands += 1;
      // With no time for a read and another command, the pass ends on the read it has (pass-end.ts).
      const done = commands >= maxCommands;
      stopped = done ? undefined : this.mustStop(this.readMs);
      if (done || stopped !== undefined) {
        unreadFrom = decisions;
        set = withoutStarted(set, this.decisions.slice(decisions));
        break;
      }
      await this.refresh(false);
      set = this.candidates();
    }
    this.phases.end('commands');
    await reportBlocked(this.ports, set, budgetBlocked, this.now(), this.methodContext(set));
    await reportUnconsolidatable(this.view(), set, this.stays);
    const nowMs = this.now();
    await recordAll(
      this.ports.cluster,
      doNotDisruptEvents([...set.candidates, ...(set.staticCandidates ?? []), ...set.excluded], nowMs),
    );
    this.phases.end('report');
    const conditionWrites = await this.writesDone();
    this.phases.end('writes');
    const inFlight =
      commandsInFlight(this.claims).commands.size +
      (unreadFrom === undefined ? 0 : startedInFlight(this.decisions.slice(unreadFrom)));
    const summary = passDecision({
      stopped,
      commands,
      set,
      budgetBlocked,
      expired,
      failedValidations: this.failedValidations,
      inFlight,
      moves: this.moves,
      pools: this.pools,
      claims: this.claims,
      nowMs,
      ...(conditionWrites === undefined ? {} : { conditionWrites }),
      phasesMs: this.phases.values(),
    });
    // Pod startups from where the last observing pass's window ended up to what this pass's read
    // surely holds (its data may be a summary up to a minute old), so each start counts once.
    const sinceMs = this.lease.previousMarkMs;
    const untilMs = Math.max(this.readAtMs - SUMMARY_MAX_AGE_MS, sinceMs ?? Number.NEGATIVE_INFINITY);
    // The summary and the observation together: their metrics share EMF lines.
    writeDecisions(this.ports, [
      summary,
      observeCluster({
        nodes: this.state.nodes.filter((n) => n.nodePoolName !== undefined && this.pools.has(n.nodePoolName)),
        claims: this.claims,
        pools: this.pools,
        nodeClasses: [...this.classes.values()],
        input: this.input,
        ...(sinceMs === undefined ? {} : { sinceMs }),
        untilMs,
        readAtMs: this.readAtMs,
      }),
    ]);
    this.observedUntilMs = untilMs;
    return { kind: 'pass', decisions: this.decisions, inFlight };
  }

  /** Reads the cluster; on the first read also writes the NodeClaim conditions it computes. */
  private async refresh(updateConditions: boolean): Promise<void> {
    this.readAtMs = this.now();
    const read = await readForPass(this.ports, this.options, this.lease, () => this.now());
    this.state = read.state;
    this.input = read.input;
    // The same maps, filled again: a command's pass (commandPass) holds them.
    this.pools.clear();
    for (const [name, pool] of read.pools) this.pools.set(name, pool);
    this.classes.clear();
    for (const [name, c] of read.classes) this.classes.set(name, c);
    this.claims = [...this.state.nodeClaims];
    await this.updateConditions(updateConditions);
    this.readMs = this.now() - this.readAtMs;
  }

  /**
   * The NodeClaims as this pass's conditions make them (pure): every pass decides from the
   * conditions it computes, written or not. On the pass's first read the changes also go to the
   * API server, in the background (condition-writes.ts), while the commands start.
   */
  private async updateConditions(write: boolean): Promise<void> {
    this.instances ??= this.listInstances();
    this.instancesRead = await this.instances;
    const views = claimViews(this.conditionContext(), this.claims, this.state.nodes);
    this.claims = views.claims;
    if (!write) return;
    if (views.problems.size > 0)
      this.ports.logger.warn('consolidation skipped', { problems: [...views.problems].slice(0, 10) });
    this.writes = startConditionWrites(this.ports, views.writes, {
      deadlineMs: () => this.options.deadlineMs?.(),
      workEndMs: () => this.workEndMs(),
      nowMs: () => this.now(),
      stopped: () => this.held.lost() === true,
    });
  }

  private conditionContext(): ConditionContext {
    return {
      pools: this.pools,
      classes: this.classes,
      instances: this.instancesRead,
      input: this.input,
      nowMs: this.now(),
    };
  }

  /** A confirmation of what a step acts on against the API server, over the pass's read (confirm.ts). */
  private confirmation(): Confirmation {
    return new Confirmation(
      this.ports.cluster,
      { state: this.state, claims: this.claims, input: this.input },
      claimConditions(this.conditionContext()),
      {
        nowMs: this.now(),
        ...(this.options.solveOptions === undefined ? {} : { solveOptions: this.options.solveOptions }),
      },
    );
  }

  private async listInstances(): Promise<ReadonlyMap<string, CloudInstance>> {
    const instances = new Map<string, CloudInstance>();
    for (const instance of await this.ports.cloud.list()) instances.set(instance.providerId, instance);
    return instances;
  }

  /** Whether the work time left (after `beforeMs`) is too short for a command and its validation. */
  private nearDeadline(beforeMs: number): boolean {
    const end = this.workEndMs();
    const need = beforeMs + (this.options.validationMs ?? VALIDATION_MS) + COMMAND_MARGIN_MS;
    return end !== undefined && end - this.now() < need;
  }

  /** When the pass's work is to be done (WORK_SHARE of its time to the deadline), if it has one. */
  private workEndMs(): number | undefined {
    const deadline = this.options.deadlineMs?.();
    return deadline === undefined ? undefined : this.startedMs + (deadline - this.startedMs) * WORK_SHARE;
  }

  // --- new commands ------------------------------------------------------------------------

  private candidates(): CandidateSet {
    return passCandidates({
      state: this.state,
      claims: this.claims,
      pools: this.pools,
      input: this.input,
      nowMs: this.now(),
    });
  }

  private warnBudgetProblems(problems: readonly string[]): void {
    if (problems.length > 0) {
      this.ports.logger.warn('disruption budgets ignored', { problems: problems.slice(0, 10) });
    }
  }

  /** The command to start next (next-command.ts), noting the budgets that blocked and why consolidation keeps nodes. */
  private chooseCommand(set: CandidateSet, budgetBlocked: Set<string>): DisruptionCommand | undefined {
    const next = nextCommand({
      state: this.state,
      claims: this.claims,
      pools: this.pools,
      input: this.input,
      nowMs: this.now(),
      set,
      spotToSpotConsolidation: this.options.spotToSpotConsolidation === true,
      repackConsolidation: this.options.repackConsolidation === true,
      rolloutHeld: this.rolloutHeld,
      ...(this.options.consolidationMemo === undefined
        ? {}
        : {
            consolidated: {
              memo: this.options.consolidationMemo,
              state: () => consolidationStateKey({ state: this.state, claims: this.claims }),
            },
          }),
    });
    for (const look of next.looks) {
      this.warnBudgetProblems(look.budgets.problems);
      for (const blocked of look.budgetBlocked) budgetBlocked.add(blocked);
    }
    for (const [name, why] of next.stays) this.stays.set(name, why);
    this.moves.push(...next.moves);
    return next.command;
  }

  private methodContext(set: CandidateSet): MethodContext {
    return {
      ...methodContextFor(set, this.input, this.now(), this.options.spotToSpotConsolidation === true),
      unconsolidatable: (candidate, why) => this.stays.set(candidate.nodeClaim.name, why),
    };
  }

  /** What carrying a command out needs of the pass (carry-out.ts). */
  private commandPass(): CommandPass {
    return {
      ports: this.ports,
      pools: this.pools,
      classes: this.classes,
      leaseToken: this.lease.token,
      held: this.held,
      runawayGuard: this.options.runawayGuard !== false,
      state: () => this.state,
      input: () => this.input,
      now: () => this.now(),
      claims: () => this.claims,
      candidates: () => this.candidates(),
      readAgain: () => this.readAgain(),
      confirmation: () => this.confirmation(),
      failed: (count) => {
        this.failedValidations += count;
      },
      record: (decision) => this.record(decision),
    };
  }

  /** Waits the validation period and reads the cluster again; false when the lease was lost. */
  private async readAgain(): Promise<boolean> {
    await this.ports.sleep(this.options.validationMs ?? VALIDATION_MS);
    await this.held.renew();
    if (this.held.lost() === true) return false;
    await this.refresh(false);
    return true;
  }

  private record(decision: DisruptDecision): void {
    this.decisions.push(decision);
    writeDecision(this.ports, decision);
  }
}
