import {
  type CapacityType,
  Finalizer,
  type InstanceType,
  Label,
  type NodeClaimPlan,
  type PodRef,
  type SolveOptions,
  solve,
  type UnschedulablePod,
} from '../core/index.ts';
import type { Clock } from '../ports/clock.ts';
import {
  type Cloud,
  type EC2NodeClass,
  InsufficientCapacityError,
  type LaunchRequest,
  NodeClassNotReadyError,
  type NodeClassResolver,
} from '../ports/cloud.ts';
import {
  type Cluster,
  type ClusterEvent,
  type ClusterNodeClaim,
  type ClusterNodePool,
  isConditionTrue,
} from '../ports/cluster.ts';
import { ignoreNotFound } from '../ports/errors.ts';
import type { Lease, LeaseStore } from '../ports/lease.ts';
import type { Logger } from '../runtime/logger.ts';
import { buildSchedulingInput, type ClusterState, readClusterState } from './cluster-state.ts';
import { type LaunchDecision, type PodName, writeDecision } from './decision.ts';
import { type SkippedNodePool, unschedulableMessage } from './eligibility.ts';
import { reconcileNodeClasses } from './nodeclass.ts';
import {
  expectedCapacityType,
  launchedLabels,
  launchedStatus,
  nodeClaimName,
  toLaunchRequest,
  toNewNodeClaim,
} from './provision-plan.ts';

export { nodeClaimName, toLaunchRequest, toNewNodeClaim } from './provision-plan.ts';

/** Interval of lease attempts while waiting for another run to finish. */
const LEASE_POLL_MS = 250;

/** What provisioning reads and changes. */
export interface ProvisionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  /** Waits `ms` milliseconds (batching); tests pass one that advances a manual clock. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger: Logger;
  /**
   * When set, EC2NodeClasses without a status for their generation are resolved (and the status
   * written) before the first round, so a new class launches in the same run. Classes with a
   * current status are left to the NodeClass controller's scheduled pass.
   */
  readonly nodeClassResolver?: NodeClassResolver;
}

export interface ProvisionOptions {
  /** Who takes the lease: the invocation id. */
  readonly holder: string;
  /** @default 'provisioner' */
  readonly leaseName?: string;
  /** Longer than one invocation can run. @default 120 */
  readonly leaseTtlSeconds?: number;
  /**
   * How long to keep trying for a lease another run holds. A run triggered by a pod that arrived
   * after the holder's batch closed waits its turn instead of leaving the pod for the next
   * trigger. @default 0 (give up at once)
   */
  readonly leaseWaitMs?: number;
  /** Batching ends once no new pod appeared for this long. @default 1000 (BATCH_IDLE_DURATION) */
  readonly batchIdleMs?: number;
  /** Batching ends after this long in any case. @default 10000 (BATCH_MAX_DURATION) */
  readonly batchMaxMs?: number;
  /** Solve-and-launch rounds; a round after the first re-plans pods whose launch hit ICE. @default 3 */
  readonly maxRounds?: number;
  readonly solveOptions?: SolveOptions;
}

/** What happened to one planned NodeClaim. */
export type ClaimOutcome =
  | {
      readonly kind: 'launched';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      readonly instanceId: string;
      readonly instanceType: string;
      readonly zone: string;
      readonly capacityType: CapacityType;
      /** The launched offering's price in USD per hour, when the catalog has it. */
      readonly pricePerHour?: number;
    }
  | {
      readonly kind: 'insufficientCapacity';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      /** `<capacityType>:<instanceType>:<zone>` of the offerings now backed off. */
      readonly offerings: readonly string[];
    }
  | {
      /** The lease was lost before the launch: no EC2 call was made and the NodeClaim was removed. */
      readonly kind: 'fenced';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
    }
  | {
      readonly kind: 'failed';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      readonly error: string;
    };

export type ProvisionResult =
  | { readonly kind: 'skipped'; readonly why: 'lease held' | 'no provisionable pods' }
  | {
      readonly kind: 'provisioned';
      readonly leaseToken: number;
      /** Provisionable pods seen by the last round. */
      readonly pods: number;
      readonly rounds: number;
      readonly claims: readonly ClaimOutcome[];
      /** Pods that fit capacity that exists or is on its way (last round). */
      readonly placed: number;
      readonly unschedulable: readonly UnschedulablePod[];
      /** NodePools left out, with why (not Ready, deleting, NodeClass not ready). */
      readonly skippedNodePools: readonly SkippedNodePool[];
      readonly leaseLost: boolean;
    };

/**
 * One provisioning decision for the cluster, as Karpenter's provisioner makes it: under the
 * provisioner lease, batch pending pods, solve against the current cluster state, create a
 * NodeClaim per planned node and launch it (fenced by the lease), re-plan pods whose launch hit
 * insufficient capacity, and tell unschedulable pods why. Safe to run concurrently (all but one
 * run skip) and to repeat (NodeClaim names derive from the decision).
 * @throws ClusterApiError / CloudApiError / CatalogUnavailableError when state cannot be read.
 */
export async function provision(ports: ProvisionPorts, options: ProvisionOptions): Promise<ProvisionResult> {
  const { leases, clock } = ports;
  const logger = ports.logger.child({ holder: options.holder });
  const leaseName = options.leaseName ?? 'provisioner';
  const ttl = options.leaseTtlSeconds ?? 120;
  const waitUntil = clock.now().getTime() + (options.leaseWaitMs ?? 0);
  let lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  while (lease === undefined && clock.now().getTime() < waitUntil) {
    await ports.sleep(LEASE_POLL_MS);
    lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  }
  if (lease === undefined) {
    writeDecision(logger, {
      kind: 'skip',
      reason: 'lease held',
      lease: leaseName,
      waitedMs: options.leaseWaitMs ?? 0,
    });
    return { kind: 'skipped', why: 'lease held' };
  }
  try {
    return await provisionUnderLease(ports, options, lease, logger);
  } finally {
    await leases.release(lease);
  }
}

async function provisionUnderLease(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  logger: Logger,
): Promise<ProvisionResult> {
  const batched = await batchPods(ports, logger, options.batchIdleMs ?? 1000, options.batchMaxMs ?? 10_000);
  if (batched.pods === 0) {
    writeDecision(logger, { kind: 'skip', reason: 'no provisionable pods', leaseToken: lease.token });
    return { kind: 'skipped', why: 'no provisionable pods' };
  }

  if (ports.nodeClassResolver !== undefined) {
    const [nodeClasses, nodeClaims] = await Promise.all([
      ports.cluster.nodeClasses(),
      ports.cluster.nodeClaims(),
    ]);
    await reconcileNodeClasses(
      { ...ports, logger, resolver: ports.nodeClassResolver },
      { holder: options.holder, scope: 'stale' },
      { nodeClasses: nodeClasses.items, nodeClaims: nodeClaims.items },
    );
  }

  const maxRounds = Math.max(1, options.maxRounds ?? 3);
  const claims: ClaimOutcome[] = [];
  let last: RoundResult | undefined;
  let rounds = 0;
  for (let round = 0; round < maxRounds; round++) {
    rounds = round + 1;
    const state = await readClusterState(ports.cluster, logger);
    if (state.pendingPods.length === 0) break;
    last = await runRound(ports, options, lease, logger, state, round);
    claims.push(...last.claims);
    if (last.leaseLost) break;
    if (!last.claims.some((c) => c.kind === 'insufficientCapacity')) break;
  }

  const unschedulable = last?.unschedulable ?? [];
  const skippedNodePools = last?.skippedNodePools ?? [];
  if (unschedulable.length > 0) {
    await reportUnschedulable(ports, logger, unschedulable, {
      eligible: last?.eligiblePools ?? 0,
      skipped: skippedNodePools,
    });
  }
  await reportNominated(ports, claims);

  return {
    kind: 'provisioned',
    leaseToken: lease.token,
    pods: last?.pods ?? 0,
    rounds,
    claims,
    placed: last?.placed ?? 0,
    unschedulable,
    skippedNodePools,
    leaseLost: last?.leaseLost ?? false,
  };
}

/**
 * Karpenter's batcher, by polling: after the first read, keep re-reading while new pods keep
 * appearing within `idleMs`, for at most `maxMs`. Writes the batch decision (why it closed).
 */
async function batchPods(
  ports: ProvisionPorts,
  logger: Logger,
  idleMs: number,
  maxMs: number,
): Promise<{ pods: number }> {
  const seen = new Map<string, PodName>(
    (await ports.cluster.provisionablePods()).items.map((p) => [p.uid, p]),
  );
  if (seen.size === 0) return { pods: 0 };
  const start = ports.clock.now().getTime();
  let closedBy: 'idle' | 'max' = 'idle';
  for (;;) {
    const left = maxMs - (ports.clock.now().getTime() - start);
    if (left <= 0) {
      closedBy = 'max';
      break;
    }
    const wait = Math.min(idleMs, left);
    await ports.sleep(wait);
    let added = 0;
    for (const pod of (await ports.cluster.provisionablePods()).items) {
      if (!seen.has(pod.uid)) {
        seen.set(pod.uid, pod);
        added += 1;
      }
    }
    if (added === 0) {
      // A wait cut short by the max window ended the batch as much as the quiet did.
      if (wait < idleMs) closedBy = 'max';
      break;
    }
  }
  writeDecision(logger, {
    kind: 'batch',
    reason: closedBy,
    pods: [...seen.values()],
    durationMs: ports.clock.now().getTime() - start,
    batchIdleMs: idleMs,
    batchMaxMs: maxMs,
  });
  return { pods: seen.size };
}

interface RoundResult {
  readonly pods: number;
  readonly claims: readonly ClaimOutcome[];
  readonly placed: number;
  readonly unschedulable: readonly UnschedulablePod[];
  /** NodePools that could launch in this round. */
  readonly eligiblePools: number;
  readonly skippedNodePools: readonly SkippedNodePool[];
  readonly leaseLost: boolean;
}

async function runRound(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  logger: Logger,
  state: ClusterState,
  round: number,
): Promise<RoundResult> {
  const input = await buildSchedulingInput(state, ports.cloud, {
    nowMs: ports.clock.now().getTime(),
    ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
  });
  const skippedNodePools = [...input.selection.skipped];
  const typesByClass = input.instanceTypes;
  const pools = input.nodePools;
  const classes = input.nodeClasses;

  const claims: ClaimOutcome[] =
    round === 0
      ? await resumeUnlaunched(ports, logger, lease, state.nodeClaims, pools, classes, typesByClass)
      : [];
  if (claims.some((c) => c.kind === 'fenced')) {
    return {
      pods: state.pendingPods.length,
      claims,
      placed: 0,
      unschedulable: [],
      eligiblePools: pools.size,
      skippedNodePools,
      leaseLost: true,
    };
  }

  const result = solve(input.solve);

  let leaseLost = false;
  for (const plan of result.nodeClaims) {
    const pool = pools.get(plan.nodePoolName);
    const nodeClass = classes.get(plan.nodeClassName);
    const types = typesByClass.get(plan.nodeClassName) ?? [];
    if (pool === undefined || nodeClass === undefined) continue;
    const outcome = await applyPlan(ports, logger, lease, round, plan, pool, nodeClass, types);
    claims.push(outcome);
    if (outcome.kind === 'fenced') {
      leaseLost = true;
      break;
    }
  }
  return {
    pods: state.pendingPods.length,
    claims,
    placed: result.placements.length,
    unschedulable: result.unschedulable,
    eligiblePools: pools.size,
    skippedNodePools,
    leaseLost,
  };
}

/** Removes a NodeClaim that never launched an instance: nothing is left for its finalizer to clean up. */
async function discardUnlaunched(ports: ProvisionPorts, name: string): Promise<void> {
  await ignoreNotFound(
    ports.cluster.patchNodeClaimMetadata(name, { removeFinalizers: [Finalizer.termination] }),
  );
  await ports.cluster.deleteNodeClaim(name);
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function applyPlan(
  ports: ProvisionPorts,
  logger: Logger,
  lease: Lease,
  round: number,
  plan: NodeClaimPlan,
  pool: ClusterNodePool,
  nodeClass: EC2NodeClass,
  types: readonly InstanceType[],
): Promise<ClaimOutcome> {
  const name = nodeClaimName({
    nodePoolName: plan.nodePoolName,
    podUids: plan.pods.map((p) => p.uid),
    leaseToken: lease.token,
    round,
  });
  const byName = new Map(types.map((t) => [t.name, t]));
  const request = toLaunchRequest(name, plan, nodeClass, byName);
  const base = { nodeClaim: name, nodePool: plan.nodePoolName, pods: plan.pods };

  const outcome = await (async (): Promise<ClaimOutcome> => {
    if (request.instanceTypes.length === 0) {
      return {
        kind: 'failed',
        ...base,
        error: 'none of the planned instance types is offered for the NodeClass',
      };
    }
    try {
      await ports.cluster.createNodeClaim(toNewNodeClaim(name, plan, pool));
    } catch (error) {
      return { kind: 'failed', ...base, error: `creating the NodeClaim failed: ${describeError(error)}` };
    }
    return launchCreated(ports, lease, request, types, plan.labels, base);
  })();
  writeDecision(logger, launchDecision(lease, round, request, outcome, 'provisioning'));
  return outcome;
}

/** The launch decision of a NodeClaim: what was asked of the cloud and what came of it. */
function launchDecision(
  lease: Lease,
  round: number,
  request: LaunchRequest,
  outcome: ClaimOutcome,
  reason: LaunchDecision['reason'],
): LaunchDecision {
  return {
    kind: 'launch',
    reason,
    outcome: outcome.kind,
    nodePool: request.nodePoolName,
    nodeClaim: request.nodeClaimName,
    pods: outcome.pods,
    instanceTypes: request.instanceTypes.map((t) => t.name),
    capacityType:
      outcome.kind === 'launched'
        ? outcome.capacityType
        : expectedCapacityType(request.requirements, request.instanceTypes),
    round,
    leaseToken: lease.token,
    ...(outcome.kind === 'launched'
      ? {
          instanceId: outcome.instanceId,
          instanceType: outcome.instanceType,
          zone: outcome.zone,
          ...(outcome.pricePerHour === undefined ? {} : { pricePerHour: outcome.pricePerHour }),
        }
      : {}),
    ...(outcome.kind === 'failed' ? { error: outcome.error } : {}),
    ...(outcome.kind === 'insufficientCapacity' ? { offerings: outcome.offerings.slice(0, 10) } : {}),
  };
}

/**
 * Launches a NodeClaim that exists in the cluster: checks the lease first (fencing), then
 * `cloud.create`, then writes the launched status and labels. Claims that cannot launch are
 * removed so their pods are planned again.
 */
async function launchCreated(
  ports: ProvisionPorts,
  lease: Lease,
  request: LaunchRequest,
  types: readonly InstanceType[],
  userLabels: Readonly<Record<string, string>>,
  base: { readonly nodeClaim: string; readonly nodePool: string; readonly pods: readonly PodRef[] },
): Promise<ClaimOutcome> {
  const { cluster, cloud } = ports;
  const name = request.nodeClaimName;
  // Fencing: a run that lost its lease makes no EC2 call.
  if (!(await ports.leases.isHeld(lease, ports.clock.now()))) {
    await discardUnlaunched(ports, name);
    return { kind: 'fenced', ...base };
  }
  let instance: Awaited<ReturnType<Cloud['create']>>;
  try {
    instance = await cloud.create(request);
  } catch (error) {
    if (error instanceof InsufficientCapacityError) {
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name },
        type: 'Warning',
        reason: 'InsufficientCapacityError',
        message: `NodeClaim ${name} event: ${error.message}`,
      });
      await discardUnlaunched(ports, name);
      return {
        kind: 'insufficientCapacity',
        ...base,
        offerings: error.offerings.map((o) => `${o.capacityType}:${o.instanceType}:${o.zone}`),
      };
    }
    if (error instanceof NodeClassNotReadyError) {
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name },
        type: 'Warning',
        reason: 'NodeClassNotReady',
        message: error.message,
      });
      await discardUnlaunched(ports, name);
      return { kind: 'failed', ...base, error: error.message };
    }
    // An instance may or may not exist: delete the claim but keep its finalizer, so termination
    // looks for an instance tagged with the claim before the claim goes.
    const message = describeError(error).slice(0, 300);
    await cluster.recordEvent({
      subject: { kind: 'NodeClaim', name },
      type: 'Warning',
      reason: 'LaunchFailed',
      message,
    });
    await cluster.deleteNodeClaim(name);
    return { kind: 'failed', ...base, error: message };
  }
  const type = types.find((t) => t.name === instance.instanceType);
  await cluster.patchNodeClaimMetadata(name, launchedLabels(instance, type, userLabels));
  await cluster.patchNodeClaimStatus(name, launchedStatus(instance, type));
  const price = type?.offerings.find(
    (o) => o.zone === instance.zone && o.capacityType === instance.capacityType,
  )?.priceUsdPerHour;
  return {
    kind: 'launched',
    ...base,
    instanceId: instance.instanceId,
    instanceType: instance.instanceType,
    zone: instance.zone,
    capacityType: instance.capacityType,
    ...(price === undefined ? {} : { pricePerHour: price }),
  };
}

/**
 * Launches the NodeClaims an earlier run created but never launched (it crashed or timed out
 * between the create and the launch). The scheduler counts pods on them, so nothing else would
 * launch for those pods; `cloud.create` is idempotent per claim name, so a launch that did
 * happen is found again rather than repeated.
 */
async function resumeUnlaunched(
  ports: ProvisionPorts,
  logger: Logger,
  lease: Lease,
  claims: readonly ClusterNodeClaim[],
  pools: ReadonlyMap<string, ClusterNodePool>,
  classes: ReadonlyMap<string, EC2NodeClass>,
  typesByClass: ReadonlyMap<string, readonly InstanceType[]>,
): Promise<ClaimOutcome[]> {
  const out: ClaimOutcome[] = [];
  for (const claim of claims) {
    if (claim.deleting || claim.status.providerId !== undefined) continue;
    if (isConditionTrue(claim.status.conditions, 'Launched')) continue;
    const pool = pools.get(claim.nodePoolName);
    const nodeClass = pool === undefined ? undefined : classes.get(pool.nodeClassRef.name);
    if (pool === undefined || nodeClass === undefined) continue;
    const byName = new Map((typesByClass.get(nodeClass.name) ?? []).map((t) => [t.name, t]));
    const allowed =
      claim.requirements.find((r) => r.key === Label.instanceType && r.operator === 'In')?.values ?? [];
    const request: LaunchRequest = {
      nodeClaimName: claim.name,
      nodePoolName: claim.nodePoolName,
      nodeClass,
      instanceTypes: allowed.flatMap((n) => {
        const type = byName.get(n);
        return type === undefined ? [] : [type];
      }),
      requirements: claim.requirements,
      labels: claim.labels,
      taints: claim.taints,
      startupTaints: claim.startupTaints,
    };
    const base = { nodeClaim: claim.name, nodePool: claim.nodePoolName, pods: [] };
    const outcome: ClaimOutcome =
      request.instanceTypes.length === 0
        ? {
            kind: 'failed',
            ...base,
            error: "none of the NodeClaim's instance types is offered for the NodeClass",
          }
        : await launchCreated(ports, lease, request, [...byName.values()], pool.pool.labels ?? {}, base);
    writeDecision(logger, launchDecision(lease, 0, request, outcome, 'resumed'));
    out.push(outcome);
    if (outcome.kind === 'fenced') break;
  }
  return out;
}

/**
 * One Event per pod nothing can host, with the solver's reason per NodePool, and one unschedulable
 * decision per distinct reason (most pods first).
 */
async function reportUnschedulable(
  ports: ProvisionPorts,
  logger: Logger,
  unschedulable: readonly UnschedulablePod[],
  selection: { readonly eligible: number; readonly skipped: readonly SkippedNodePool[] },
): Promise<void> {
  const byReason = new Map<string, PodName[]>();
  for (const u of unschedulable) {
    const reason = unschedulableMessage(u, selection);
    const pods = byReason.get(reason);
    if (pods === undefined) byReason.set(reason, [u.pod]);
    else pods.push(u.pod);
  }
  for (const [reason, pods] of [...byReason].sort(([, a], [, b]) => b.length - a.length)) {
    writeDecision(logger, { kind: 'unschedulable', reason, pods });
  }
  await recordEvents(
    ports,
    unschedulable.map((u) => ({
      subject: { kind: 'Pod', namespace: u.pod.namespace, name: u.pod.name, uid: u.pod.uid },
      type: 'Warning',
      reason: 'FailedScheduling',
      message: `Failed to schedule pod: ${unschedulableMessage(u, selection)}`,
    })),
  );
}

/** Pods nominated per run at most: one Event each, as Karpenter records them. */
const MAX_NOMINATED_EVENTS = 200;

/** Tells each pod a launched NodeClaim is for where it should land (Karpenter's `Nominated`). */
async function reportNominated(ports: ProvisionPorts, claims: readonly ClaimOutcome[]): Promise<void> {
  const events: ClusterEvent[] = [];
  for (const claim of claims) {
    if (claim.kind !== 'launched') continue;
    for (const pod of claim.pods) {
      events.push({
        subject: { kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid },
        type: 'Normal',
        reason: 'Nominated',
        message: `Pod should schedule on: nodeclaim/${claim.nodeClaim}`,
      });
    }
  }
  await recordEvents(ports, events.slice(0, MAX_NOMINATED_EVENTS));
}

/** Bounded fan-out of Events (the adapter limits concurrent API calls as well). */
async function recordEvents(ports: ProvisionPorts, events: readonly ClusterEvent[]): Promise<void> {
  const queue = [...events];
  const worker = async () => {
    for (let e = queue.shift(); e !== undefined; e = queue.shift()) await ports.cluster.recordEvent(e);
  };
  await Promise.all(Array.from({ length: Math.min(4, queue.length) }, worker));
}
