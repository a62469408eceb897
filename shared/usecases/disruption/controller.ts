import { createHash } from 'node:crypto';
import {
  allowedDisruptions,
  DISRUPTED_TAINT,
  type DisruptionReason,
  expiration,
  type NodeClaimPlan,
  type PdbLimit,
  solve,
} from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Cloud, CloudInstance, EC2NodeClass } from '../../ports/cloud.ts';
import {
  type Cluster,
  type ClusterNodeClaim,
  type ClusterNodePool,
  type EventSubject,
  isConditionTrue,
} from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Lease, LeaseStore } from '../../ports/lease.ts';
import type { TerminationQueue } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';
import {
  buildSchedulingInput,
  type ClusterState,
  readClusterState,
  type SchedulingInput,
} from '../cluster-state.ts';
import { writeDecision } from '../decision.ts';
import type { DisruptDecision, DisruptedNode, ReplacementNode } from '../disruption-decisions.ts';
import { toNewNodeClaim } from '../provision-plan.ts';
import { DISRUPTION_REASON_CONDITION } from '../termination-decide.ts';
import { buildCandidates, type CandidateSet, nodeOf } from './candidates.ts';
import { COMMAND_ANNOTATION, type CommandRecord, commandsInFlight, encodeCommand } from './command-record.ts';
import { computeClaimChanges } from './conditions.ts';
import { drift, driftBlocked } from './drift.ts';
import { emptiness } from './emptiness.ts';
import type {
  DisruptionCandidate,
  DisruptionCommand,
  DisruptionMethod,
  SimulateScheduling,
} from './method.ts';

// The disruption controller: one pass per invocation of the disruption Lambda, under the
// disruption lease (one disruption decision at a time per cluster). A pass keeps the NodeClaim
// conditions (Drifted, Consolidatable), expires NodeClaims past expireAfter, moves the commands in
// flight on (delete the candidates once every replacement is initialized, or undo them), removes
// stale `karpenter.sh/disrupted` taints, and then asks the methods in Karpenter's order for new
// commands, within each NodePool's budgets.

/** Voluntary methods in Karpenter's order; consolidation comes after drift. */
export const METHODS: readonly DisruptionMethod[] = [emptiness, drift];

/** Karpenter's commandValidationDelay: graceful commands are checked again after this wait. */
export const VALIDATION_MS = 15_000;
/** A command whose replacements have not initialized by then is undone (Karpenter's minimum). */
export const COMMAND_TIMEOUT_MS = 10 * 60_000;

export interface DisruptionPorts {
  readonly cluster: Cluster;
  readonly cloud: Pick<Cloud, 'instanceTypes' | 'list'>;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger: Logger;
  readonly terminationQueue: TerminationQueue;
  /** Asks the provisioner to launch these NodeClaims now (its launch path, its lease). */
  readonly requestLaunch: (nodeClaims: readonly string[]) => Promise<void>;
}

export interface DisruptionOptions {
  /** Who takes the lease: the invocation id. */
  readonly holder: string;
  /** @default 'disruption' */
  readonly leaseName?: string;
  /** @default 180 */
  readonly leaseTtlSeconds?: number;
  /** @default VALIDATION_MS */
  readonly validationMs?: number;
  /** New commands one pass may start. @default 10 */
  readonly maxCommands?: number;
}

export interface DisruptionPassResult {
  readonly kind: 'skipped' | 'pass';
  /** Commands started or carried out in this pass. */
  readonly decisions: readonly DisruptDecision[];
  /** Commands still waiting for replacements after the pass. */
  readonly inFlight: number;
}

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
  const lease = await ports.leases.acquire(
    leaseName,
    options.holder,
    ports.clock.now(),
    options.leaseTtlSeconds ?? 180,
  );
  if (lease === undefined) {
    writeDecision(logger, {
      kind: 'disruptionPass',
      reason: 'lease held',
      candidates: 0,
      empty: 0,
      drifted: 0,
      expired: 0,
      blocked: 0,
      budgetBlocked: [],
      commands: 0,
      inFlight: 0,
    });
    return { kind: 'skipped', decisions: [], inFlight: 0 };
  }
  try {
    return await new Pass({ ...ports, logger }, options, lease).run();
  } finally {
    await ports.leases.release(lease);
  }
}

/** A NodeClaim's running offering price, from the instance types of its class. */
function priceFrom(input: SchedulingInput | undefined, claim: ClusterNodeClaim): number | undefined {
  const types = input?.instanceTypes.get(claim.nodeClassRef.name);
  const type = types?.find((t) => t.name === claim.labels['node.kubernetes.io/instance-type']);
  return type?.offerings.find(
    (o) =>
      o.zone === claim.labels['topology.kubernetes.io/zone'] &&
      o.capacityType === claim.labels['karpenter.sh/capacity-type'],
  )?.priceUsdPerHour;
}

function describeNode(c: DisruptionCandidate): DisruptedNode {
  const type = c.nodeClaim.labels['node.kubernetes.io/instance-type'];
  const capacityType = c.nodeClaim.labels['karpenter.sh/capacity-type'];
  return {
    nodeClaim: c.nodeClaim.name,
    node: c.node.name,
    nodePool: c.nodePool.pool.name,
    ...(type === undefined ? {} : { instanceType: type }),
    ...(capacityType === 'spot' || capacityType === 'on-demand' || capacityType === 'reserved'
      ? { capacityType }
      : {}),
    ...(c.pricePerHour === undefined ? {} : { pricePerHour: c.pricePerHour }),
  };
}

function describeReplacement(name: string, plan: NodeClaimPlan): ReplacementNode {
  const cheapest = plan.instanceTypes[0];
  return {
    nodeClaim: name,
    nodePool: plan.nodePoolName,
    instanceTypes: plan.instanceTypes.slice(0, 3).map((t) => t.name),
    ...(cheapest === undefined ? {} : { pricePerHour: cheapest.priceUsdPerHour }),
  };
}

function sum(values: readonly (number | undefined)[]): number {
  return Math.round(values.reduce<number>((s, v) => s + (v ?? 0), 0) * 10_000) / 10_000;
}

function digest(parts: readonly string[], length = 10): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, length);
}

class Pass {
  private state!: ClusterState;
  private claims: ClusterNodeClaim[] = [];
  private input: SchedulingInput | undefined;
  private readonly decisions: DisruptDecision[] = [];
  private readonly pools = new Map<string, ClusterNodePool>();
  private readonly classes = new Map<string, EC2NodeClass>();

  constructor(
    private readonly ports: DisruptionPorts,
    private readonly options: DisruptionOptions,
    private readonly lease: Lease,
  ) {}

  private now(): number {
    return this.ports.clock.now().getTime();
  }

  async run(): Promise<DisruptionPassResult> {
    await this.refresh(true);
    const expired = await this.expire();
    await this.progressCommands();
    await this.removeStaleTaints();

    let commands = 0;
    let last = this.candidates();
    const budgetBlocked = new Set<string>();
    const maxCommands = this.options.maxCommands ?? 10;
    while (commands < maxCommands) {
      const command = this.nextCommand(last, budgetBlocked);
      if (command === undefined) break;
      const done = await this.execute(command);
      if (!done) break;
      commands += 1;
      await this.refresh(false);
      last = this.candidates();
    }
    await this.reportBlocked(last, budgetBlocked);
    const drifted = last.candidates.filter((c) => drift.shouldDisrupt(c, this.now())).length;
    const empty = last.candidates.filter((c) => emptiness.shouldDisrupt(c, this.now())).length;
    const blocked = last.candidates.filter((c) => c.blockers.length > 0).length + last.excluded.length;
    const stillInFlight = commandsInFlight(this.claims).commands.size;
    writeDecision(this.ports.logger, {
      kind: 'disruptionPass',
      reason:
        commands > 0
          ? 'commands started'
          : last.candidates.length === 0
            ? 'no candidates'
            : budgetBlocked.size > 0 || blocked > 0
              ? 'blocked'
              : 'nothing to do',
      candidates: last.candidates.length,
      empty,
      drifted,
      expired,
      blocked,
      budgetBlocked: [...budgetBlocked].sort(),
      commands,
      inFlight: stillInFlight,
    });
    return { kind: 'pass', decisions: this.decisions, inFlight: stillInFlight };
  }

  /** Reads the cluster; on the first read also brings the NodeClaim conditions up to date. */
  private async refresh(updateConditions: boolean): Promise<void> {
    this.state = await readClusterState(this.ports.cluster, this.ports.logger, {
      podDisruptionBudgets: true,
    });
    this.pools.clear();
    for (const p of this.state.nodePools) this.pools.set(p.pool.name, p);
    this.classes.clear();
    for (const c of this.state.nodeClasses) this.classes.set(c.name, c);
    this.input = await buildSchedulingInput(this.state, this.ports.cloud, { nowMs: this.now() });
    this.claims = [...this.state.nodeClaims];
    if (updateConditions) await this.updateConditions();
  }

  private async updateConditions(): Promise<void> {
    const { cluster, logger } = this.ports;
    const nodesByName = new Map(this.state.nodes.map((n) => [n.name, n]));
    const nodesByProvider = new Map(
      this.state.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
    );
    const instances = new Map<string, CloudInstance>();
    for (const instance of await this.ports.cloud.list()) instances.set(instance.providerId, instance);
    const problems: string[] = [];
    const next: ClusterNodeClaim[] = [];
    for (const claim of this.claims) {
      if (claim.deleting) {
        next.push(claim);
        continue;
      }
      const pool = this.pools.get(claim.nodePoolName);
      const changes = computeClaimChanges({
        claim,
        node: nodeOf(claim, nodesByName, nodesByProvider),
        pool,
        nodeClass: this.classes.get(claim.nodeClassRef.name),
        instance: claim.status.providerId === undefined ? undefined : instances.get(claim.status.providerId),
        nowMs: this.now(),
      });
      if (changes.problem !== undefined)
        problems.push(`nodePool "${claim.nodePoolName}": ${changes.problem}`);
      if (changes.metadata !== undefined) {
        await ignoreNotFound(cluster.patchNodeClaimMetadata(claim.name, changes.metadata));
      }
      if (changes.status !== undefined) {
        await ignoreNotFound(cluster.patchNodeClaimStatus(claim.name, changes.status));
      }
      if (changes.drifted !== undefined) {
        writeDecision(logger, {
          kind: 'drifted',
          reason: changes.drifted.reason,
          nodeClaim: claim.name,
          nodePool: claim.nodePoolName,
          message: changes.drifted.message,
        });
      }
      next.push(changes.view);
    }
    if (problems.length > 0)
      logger.warn('consolidation skipped', { problems: [...new Set(problems)].slice(0, 10) });
    this.claims = next;
  }

  // --- expiration (forceful: no budget, no validation) -------------------------------------

  private async expire(): Promise<number> {
    const nowMs = this.now();
    const problems: string[] = [];
    let expired = 0;
    const nodesByName = new Map(this.state.nodes.map((n) => [n.name, n]));
    const nodesByProvider = new Map(
      this.state.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
    );
    for (const claim of this.claims) {
      if (claim.deleting) continue;
      const verdict = expiration(claim.createdAtMs, claim.expireAfter, nowMs);
      if (verdict.kind === 'invalid') {
        problems.push(`nodeClaim "${claim.name}": ${verdict.problem}`);
        continue;
      }
      if (verdict.kind !== 'expired') continue;
      const pool = this.pools.get(claim.nodePoolName);
      const node = nodeOf(claim, nodesByName, nodesByProvider);
      const pods = node?.pods ?? [];
      const candidate: DisruptionCandidate | undefined =
        node === undefined || pool === undefined
          ? undefined
          : {
              nodeClaim: claim,
              node,
              nodePool: pool,
              disruptionCost: 0,
              reschedulablePods: pods.filter(
                (p) => p.daemonSetName === undefined && p.disruption?.mirror !== true,
              ),
              blockers: [],
            };
      // Replacements for the pods that will need a place, launched now; the drain does not wait.
      const result =
        candidate === undefined || candidate.reschedulablePods.length === 0
          ? undefined
          : this.simulate([candidate]);
      const replacements = result?.nodeClaims ?? [];
      const id = digest(['expiration', claim.name, String(this.lease.token)]);
      const names = await this.createReplacements(id, replacements, {
        id,
        method: 'expiration',
        reason: 'Expired',
        candidates: [claim.name],
        replacements: [],
        startedAt: new Date(nowMs).toISOString(),
      });
      await this.ports.cluster.patchNodeClaimStatus(claim.name, {
        conditions: [
          {
            type: DISRUPTION_REASON_CONDITION,
            status: 'True',
            reason: 'Expired',
            message: `expireAfter ${claim.expireAfter ?? '720h'} passed`,
          },
        ],
      });
      await this.ports.cluster.deleteNodeClaim(claim.name);
      await this.ports.terminationQueue.enqueue({ nodeClaim: claim.name }, 0);
      await this.ports.cluster.recordEvent({
        subject: { kind: 'NodeClaim', name: claim.name },
        type: 'Normal',
        reason: 'DisruptionTerminating',
        message: 'Disrupting NodeClaim: Expired',
      });
      expired += 1;
      this.record({
        kind: 'disrupt',
        reason: 'Expired',
        method: 'expiration',
        decision: replacements.length === 0 ? 'delete' : 'replace',
        outcome: 'deleted',
        commandId: id,
        candidates: [
          {
            nodeClaim: claim.name,
            node: node?.name ?? claim.status.nodeName ?? '',
            nodePool: claim.nodePoolName,
            ...(priceFrom(this.input, claim) === undefined
              ? {}
              : { pricePerHour: priceFrom(this.input, claim) ?? 0 }),
          },
        ],
        replacements: replacements.map((plan, i) => describeReplacement(names[i] ?? '', plan)),
        pricePerHourBefore: sum([priceFrom(this.input, claim)]),
        pricePerHourAfter: sum(replacements.map((p) => p.instanceTypes[0]?.priceUsdPerHour)),
      });
    }
    if (problems.length > 0)
      this.ports.logger.warn('expiration skipped', { problems: problems.slice(0, 10) });
    if (expired > 0) await this.refresh(false);
    return expired;
  }

  // --- commands in flight ----------------------------------------------------------------

  private async progressCommands(): Promise<number> {
    const { commands, malformed } = commandsInFlight(this.claims);
    if (malformed.length > 0) {
      this.ports.logger.warn('disruption command records ignored', { records: malformed.slice(0, 10) });
    }
    const byName = new Map(this.claims.map((c) => [c.name, c]));
    let waiting = 0;
    for (const record of commands.values()) {
      const live = record.candidates.flatMap((n) => {
        const c = byName.get(n);
        return c === undefined || c.deleting ? [] : [c];
      });
      const replacements = record.replacements.map((n) => byName.get(n));
      const gone = record.replacements.filter((_, i) => {
        const r = replacements[i];
        return r === undefined || r.deleting;
      });
      const timedOut = this.now() - Date.parse(record.startedAt) > COMMAND_TIMEOUT_MS;
      if (gone.length > 0 || timedOut) {
        await this.undo(live);
        this.record(
          this.commandDecision(record, live, 'failed', {
            why:
              gone.length > 0
                ? `replacement ${gone.join(', ')} is gone (launch failed or timed out)`
                : `replacements not initialized within ${COMMAND_TIMEOUT_MS / 60_000} minutes`,
          }),
        );
        continue;
      }
      const ready = replacements.every(
        (r) => r !== undefined && isConditionTrue(r.status.conditions, 'Initialized'),
      );
      if (ready) {
        await this.deleteCandidates(live, record.reason);
        this.record(this.commandDecision(record, live, 'deleted', {}));
        continue;
      }
      // Still waiting: the marks and the launch request are repeated (both idempotent), so a pass
      // that died between creating the replacements and marking the candidates is completed here.
      await this.mark(live, record);
      const unlaunched = replacements.flatMap((r) =>
        r !== undefined && !isConditionTrue(r.status.conditions, 'Launched') ? [r.name] : [],
      );
      if (unlaunched.length > 0) await this.ports.requestLaunch(unlaunched);
      waiting += 1;
    }
    if (commands.size > 0) await this.refresh(false);
    return waiting;
  }

  private commandDecision(
    record: CommandRecord,
    live: readonly ClusterNodeClaim[],
    outcome: DisruptDecision['outcome'],
    extra: { readonly why?: string },
  ): DisruptDecision {
    return {
      kind: 'disrupt',
      reason: record.reason,
      method: record.method,
      decision: record.replacements.length === 0 ? 'delete' : 'replace',
      outcome,
      commandId: record.id,
      candidates: live.map((c) => ({
        nodeClaim: c.name,
        node: c.status.nodeName ?? '',
        nodePool: c.nodePoolName,
        ...(priceFrom(this.input, c) === undefined ? {} : { pricePerHour: priceFrom(this.input, c) ?? 0 }),
      })),
      replacements: record.replacements.map((n) => ({ nodeClaim: n, nodePool: '', instanceTypes: [] })),
      pricePerHourBefore: sum(live.map((c) => priceFrom(this.input, c))),
      pricePerHourAfter: sum(
        record.replacements.map((n) => {
          const r = this.claims.find((c) => c.name === n);
          return r === undefined ? undefined : priceFrom(this.input, r);
        }),
      ),
      ...(extra.why === undefined ? {} : { why: extra.why }),
    };
  }

  /** Removes `karpenter.sh/disrupted` from nodes whose NodeClaim is in no command and not being deleted. */
  private async removeStaleTaints(): Promise<void> {
    const { commands } = commandsInFlight(this.claims);
    const inCommand = new Set([...commands.values()].flatMap((r) => r.candidates));
    const nodesByName = new Map(this.state.nodes.map((n) => [n.name, n]));
    const nodesByProvider = new Map(
      this.state.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
    );
    for (const claim of this.claims) {
      if (claim.deleting || inCommand.has(claim.name)) continue;
      const node = nodeOf(claim, nodesByName, nodesByProvider);
      // A Node being deleted (kubectl delete node) is the termination path's to taint.
      if (node?.deleting === true) continue;
      const tainted = (node?.taints ?? []).some((t) => t.key === DISRUPTED_TAINT.key);
      const marked =
        claim.annotations[COMMAND_ANNOTATION] !== undefined ||
        claim.status.conditions.some((c) => c.type === DISRUPTION_REASON_CONDITION);
      if (tainted || marked) await this.undo([claim]);
    }
  }

  // --- new commands ------------------------------------------------------------------------

  private nominated(): Set<string> {
    if (this.state.pendingPods.length === 0 || this.input === undefined) return new Set();
    const result = solve(this.input.solve);
    return new Set(result.placements.flatMap((p) => (p.kind === 'existingNode' ? [p.nodeName] : [])));
  }

  private candidates(): CandidateSet {
    const { commands } = commandsInFlight(this.claims);
    const pdbs: PdbLimit[] = (this.state.podDisruptionBudgets ?? []).map((b) => ({
      namespace: b.namespace,
      name: b.name,
      ...(b.selector === undefined ? {} : { selector: b.selector }),
      disruptionsAllowed: b.disruptionsAllowed,
    }));
    return buildCandidates({
      nodeClaims: this.claims,
      nodes: this.state.nodes,
      nodePools: this.pools,
      pdbs,
      inCommand: new Set([...commands.values()].flatMap((r) => r.candidates)),
      nominated: this.nominated(),
      priceOf: (claim) => priceFrom(this.input, claim),
      nowMs: this.now(),
    });
  }

  private allowed(set: CandidateSet, reason: DisruptionReason, blocked: Set<string>): Map<string, number> {
    const out = new Map<string, number>();
    const problems: string[] = [];
    for (const [name, counts] of set.counts) {
      const pool = this.pools.get(name);
      if (pool === undefined) continue;
      const result = allowedDisruptions(pool.disruption.budgets, reason, counts, this.now());
      for (const p of result.problems) problems.push(`nodePool "${name}" budgets[${p.index}]: ${p.problem}`);
      out.set(name, result.allowed);
      if (result.allowed < 1) blocked.add(`${name}/${reason}`);
    }
    if (problems.length > 0)
      this.ports.logger.warn('disruption budgets ignored', { problems: problems.slice(0, 10) });
    return out;
  }

  private simulate: SimulateScheduling = (candidates) => {
    const input = this.input;
    if (input === undefined) return { nodeClaims: [], placements: [], unschedulable: [] };
    const leaving = new Set(candidates.map((c) => c.node.name));
    // As Karpenter's SimulateScheduling: the pods of nodes already going (being deleted, or the
    // candidates of a command in flight) need a place too, so that a second command does not plan
    // on the room a first command's replacement was launched for.
    const disrupting = new Set(
      [...commandsInFlight(this.claims).commands.values()].flatMap((r) => r.candidates),
    );
    const nodesByName = new Map(this.state.nodes.map((n) => [n.name, n]));
    const nodesByProvider = new Map(
      this.state.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
    );
    const going = this.claims.flatMap((claim) => {
      const node =
        claim.deleting || disrupting.has(claim.name)
          ? nodeOf(claim, nodesByName, nodesByProvider)
          : undefined;
      return node === undefined || leaving.has(node.name) ? [] : [node];
    });
    for (const node of going) leaving.add(node.name);
    return solve({
      ...input.solve,
      pods: [
        ...candidates.flatMap((c) => c.reschedulablePods),
        ...going.flatMap((n) =>
          n.pods.filter((p) => p.daemonSetName === undefined && p.disruption?.mirror !== true),
        ),
      ],
      nodes: (input.solve.nodes ?? []).filter((n) => !leaving.has(n.name)),
    });
  };

  private nextCommand(set: CandidateSet, budgetBlocked: Set<string>): DisruptionCommand | undefined {
    for (const method of METHODS) {
      const accepted = set.candidates.filter((c) => method.shouldDisrupt(c, this.now()));
      if (accepted.length === 0) continue;
      const allowed = this.allowed(set, method.reason, new Set());
      for (const c of accepted) {
        if ((allowed.get(c.nodePool.pool.name) ?? 0) < 1)
          budgetBlocked.add(`${c.nodePool.pool.name}/${method.reason}`);
      }
      const commands = method.computeCommands(accepted, allowed, this.simulate);
      const first = commands[0];
      if (first !== undefined) return first;
    }
    return undefined;
  }

  /** Carries a new command out; false when it was abandoned (the pass stops starting commands). */
  private async execute(command: DisruptionCommand): Promise<boolean> {
    const method = METHODS.find((m) => m.name === command.method);
    const startedAt = new Date(this.now()).toISOString();
    const id = digest([
      command.method,
      String(this.lease.token),
      startedAt,
      ...command.candidates.map((c) => c.nodeClaim.name).sort(),
    ]);
    if (method?.disruptionClass === 'graceful') {
      await this.ports.sleep(this.options.validationMs ?? VALIDATION_MS);
      await this.refresh(false);
      const set = this.candidates();
      const still = new Map(set.candidates.map((c) => [c.nodeClaim.name, c]));
      const allowed = this.allowed(set, command.reason, new Set());
      const used = new Map<string, number>();
      const invalid = command.candidates.find((c) => {
        const now = still.get(c.nodeClaim.name);
        if (now === undefined || !method.shouldDisrupt(now, this.now())) return true;
        const pool = c.nodePool.pool.name;
        used.set(pool, (used.get(pool) ?? 0) + 1);
        return (used.get(pool) ?? 0) > (allowed.get(pool) ?? 0);
      });
      if (invalid !== undefined) {
        this.record(
          this.newDecision(command, id, [], 'abandoned', {
            why: `nodeClaim ${invalid.nodeClaim.name} is no longer a candidate for ${command.method} or its budget is used up`,
          }),
        );
        return false;
      }
    }
    const record: CommandRecord = {
      id,
      method: command.method as CommandRecord['method'],
      reason: command.reason,
      candidates: command.candidates.map((c) => c.nodeClaim.name),
      replacements: [],
      startedAt,
    };
    if (command.replacements.length === 0) {
      await this.mark(
        command.candidates.map((c) => c.nodeClaim),
        record,
      );
      await this.deleteCandidates(
        command.candidates.map((c) => c.nodeClaim),
        command.reason,
      );
      this.record(this.newDecision(command, id, [], 'deleted', {}));
      return true;
    }
    const names = await this.createReplacements(id, command.replacements, record);
    const full: CommandRecord = { ...record, replacements: names };
    await this.mark(
      command.candidates.map((c) => c.nodeClaim),
      full,
    );
    for (const c of command.candidates) {
      await this.ports.cluster.recordEvent({
        subject: { kind: 'NodeClaim', name: c.nodeClaim.name },
        type: 'Normal',
        reason: 'DisruptionLaunching',
        message: `Launching NodeClaim: ${command.reason}`,
      });
    }
    await this.ports.requestLaunch(names);
    this.record(this.newDecision(command, id, names, 'started', {}));
    return true;
  }

  private newDecision(
    command: DisruptionCommand,
    id: string,
    names: readonly string[],
    outcome: DisruptDecision['outcome'],
    extra: { readonly why?: string },
  ): DisruptDecision {
    return {
      kind: 'disrupt',
      reason: command.reason,
      method: command.method as DisruptDecision['method'],
      decision: command.replacements.length === 0 ? 'delete' : 'replace',
      outcome,
      commandId: id,
      candidates: command.candidates.map(describeNode),
      replacements: command.replacements.map((plan, i) => describeReplacement(names[i] ?? '', plan)),
      pricePerHourBefore: sum(command.candidates.map((c) => c.pricePerHour)),
      pricePerHourAfter: sum(command.replacements.map((p) => p.instanceTypes[0]?.priceUsdPerHour)),
      ...(extra.why === undefined ? {} : { why: extra.why }),
    };
  }

  // --- effects -----------------------------------------------------------------------------

  /** Creates the replacement NodeClaims, each carrying the command's record. Returns their names. */
  private async createReplacements(
    id: string,
    plans: readonly NodeClaimPlan[],
    record: CommandRecord,
  ): Promise<string[]> {
    const names = plans.map((plan, i) => `${plan.nodePoolName.slice(0, 200)}-${digest([id, String(i)])}`);
    const full: CommandRecord = { ...record, replacements: record.method === 'expiration' ? [] : names };
    const created: string[] = [];
    for (const [i, plan] of plans.entries()) {
      const pool = this.pools.get(plan.nodePoolName);
      const nodeClass = this.classes.get(plan.nodeClassName);
      const name = names[i];
      if (pool === undefined || name === undefined) continue;
      const claim = toNewNodeClaim(name, plan, pool, nodeClass);
      await this.ports.cluster.createNodeClaim({
        ...claim,
        annotations: { ...claim.annotations, [COMMAND_ANNOTATION]: encodeCommand(full) },
      });
      created.push(name);
    }
    if (created.length > 0 && record.method === 'expiration') await this.ports.requestLaunch(created);
    return names;
  }

  /** Taints the candidates' nodes, sets `DisruptionReason` and records the command on them. */
  private async mark(claims: readonly ClusterNodeClaim[], record: CommandRecord): Promise<void> {
    const { cluster } = this.ports;
    const value = encodeCommand(record);
    for (const claim of claims) {
      if (claim.annotations[COMMAND_ANNOTATION] !== value) {
        await ignoreNotFound(
          cluster.patchNodeClaimMetadata(claim.name, { annotations: { [COMMAND_ANNOTATION]: value } }),
        );
      }
      if (claim.status.nodeName !== undefined) {
        await ignoreNotFound(cluster.patchNode(claim.status.nodeName, { addTaints: [DISRUPTED_TAINT] }));
      }
      const current = claim.status.conditions.find((c) => c.type === DISRUPTION_REASON_CONDITION);
      if (current?.status !== 'True' || current.reason !== record.reason) {
        await ignoreNotFound(
          cluster.patchNodeClaimStatus(claim.name, {
            conditions: [
              {
                type: DISRUPTION_REASON_CONDITION,
                status: 'True',
                reason: record.reason,
                message: `disruption command ${record.id} (${record.method})`,
              },
            ],
          }),
        );
      }
    }
  }

  /** Undoes a command's marks: the taint, the condition and the record. */
  private async undo(claims: readonly ClusterNodeClaim[]): Promise<void> {
    const { cluster } = this.ports;
    for (const claim of claims) {
      if (claim.status.nodeName !== undefined) {
        await ignoreNotFound(cluster.patchNode(claim.status.nodeName, { removeTaints: [DISRUPTED_TAINT] }));
      }
      if (claim.status.conditions.some((c) => c.type === DISRUPTION_REASON_CONDITION)) {
        await ignoreNotFound(
          cluster.patchNodeClaimStatus(claim.name, { removeConditions: [DISRUPTION_REASON_CONDITION] }),
        );
      }
      if (claim.annotations[COMMAND_ANNOTATION] !== undefined) {
        await ignoreNotFound(
          cluster.patchNodeClaimMetadata(claim.name, { annotations: { [COMMAND_ANNOTATION]: null } }),
        );
      }
    }
  }

  /** Deletes the candidates; the termination path drains and terminates them. */
  private async deleteCandidates(claims: readonly ClusterNodeClaim[], reason: string): Promise<void> {
    for (const claim of claims) {
      await this.ports.cluster.deleteNodeClaim(claim.name);
      await this.ports.terminationQueue.enqueue({ nodeClaim: claim.name }, 0);
      await this.ports.cluster.recordEvent({
        subject: { kind: 'NodeClaim', name: claim.name },
        type: 'Normal',
        reason: 'DisruptionTerminating',
        message: `Disrupting NodeClaim: ${reason}`,
      });
    }
  }

  /** `DisruptionBlocked` events for candidates their pods or node keep from voluntary disruption. */
  private async reportBlocked(set: CandidateSet, budgetBlocked: ReadonlySet<string>): Promise<void> {
    const events: { subject: EventSubject; message: string }[] = [];
    for (const e of set.excluded) {
      events.push({
        subject: { kind: 'NodeClaim', name: e.nodeClaim.name },
        message: `Cannot disrupt NodeClaim: ${e.why}`,
      });
    }
    // Emptiness candidates have no pods to block them; drifted ones do, unless a
    // terminationGracePeriod bounds their drain.
    for (const c of set.candidates) {
      if (!drift.shouldDisrupt(c, this.now()) || !driftBlocked(c)) continue;
      events.push({
        subject: { kind: 'NodeClaim', name: c.nodeClaim.name },
        message: `Cannot disrupt NodeClaim: ${c.blockers[0]?.why ?? ''}`,
      });
    }
    for (const key of budgetBlocked) {
      const [pool, reason] = key.split('/');
      events.push({
        subject: { kind: 'NodePool', name: pool ?? '' },
        message: `No allowed disruptions for disruption reason ${reason} due to blocking budget`,
      });
    }
    for (const e of events.slice(0, 50)) {
      await this.ports.cluster.recordEvent({
        subject: e.subject,
        type: 'Normal',
        reason: 'DisruptionBlocked',
        message: e.message,
      });
    }
  }

  private record(decision: DisruptDecision): void {
    this.decisions.push(decision);
    writeDecision(this.ports.logger, decision);
  }
}
