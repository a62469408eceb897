import type { UnschedulablePod } from '../../core/index.ts';
import type { Lease } from '../../ports/lease.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { reconcileNodeClasses } from '../nodeclass/nodeclass.ts';
import { type LaunchGuard, reconcileLaunchBackoff } from '../runaway-guard/index.ts';
import {
  buildSchedulingInput,
  type ClusterObjectsRead,
  type ClusterState,
  poolInstanceTypes,
  type ReadClusterStateOptions,
  readClusterObjects,
  readClusterState,
  withPendingPods,
} from '../state/cluster-state.ts';
import { anyNodeDeleting, takeDeletingNodePods } from '../state/deleting-nodes.ts';
import { type SkippedNodePool, selectNodePools } from '../state/eligibility.ts';
import { batchPods } from './batch.ts';
import { solveConfirmed } from './confirmed-plan.ts';
import { reportNominated, reportUnschedulable } from './events.ts';
import { guardAtLaunch } from './guard-at-launch.ts';
import { isUnlaunched } from './launch.ts';
import { launchRound } from './launch-round.ts';
import { resumeUnlaunched } from './resume.ts';
import { withoutLiveAnswers } from './shadow-view.ts';
import { staticPass } from './static-gate.ts';
import type { StaticPassResult } from './static-pools.ts';

export { nodeClaimName, toLaunchRequest, toNewNodeClaim } from '../state/new-nodeclaim.ts';
export type { ClaimOutcome, ProvisionOptions, ProvisionPorts, ProvisionResult } from './types.ts';

import type { ClaimOutcome, ProvisionOptions, ProvisionPorts, ProvisionResult } from './types.ts';

/** Interval of lease attempts while waiting for another run to finish. */
const LEASE_POLL_MS = 250;

/**
 * One provisioning decision for the cluster, as Karpenter's provisioner makes it: under the
 * provisioner lease, bring static NodePools to their replicas (static-pools.ts), batch pending
 * pods (and those of nodes being deleted), solve against the current cluster state, create a
 * NodeClaim per planned node and launch it (fenced by the lease), re-plan pods whose launch hit
 * insufficient capacity, and tell unschedulable pods why. Safe to run concurrently (all but one
 * run skip) and to repeat (NodeClaim names derive from the decision).
 * @throws ClusterApiError / CloudApiError / CatalogUnavailableError when state cannot be read.
 */
export async function provision(ports: ProvisionPorts, options: ProvisionOptions): Promise<ProvisionResult> {
  const { leases, clock } = ports;
  const out: DecisionOutput = {
    logger: ports.logger.child({ holder: options.holder }),
    metrics: ports.metrics,
  };
  const leaseName = options.leaseName ?? 'provisioner';
  const ttl = options.leaseTtlSeconds ?? 120;
  const waitUntil = clock.now().getTime() + (options.leaseWaitMs ?? 0);
  let lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  while (lease === undefined && clock.now().getTime() < waitUntil) {
    await ports.sleep(LEASE_POLL_MS);
    lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  }
  if (lease === undefined) {
    writeDecision(out, {
      kind: 'skip',
      reason: 'lease held',
      lease: leaseName,
      waitedMs: options.leaseWaitMs ?? 0,
    });
    return { kind: 'skipped', why: 'lease held' };
  }
  try {
    return await provisionUnderLease(ports, options, lease, out);
  } finally {
    await leases.release(lease);
  }
}

async function provisionUnderLease(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  out: DecisionOutput,
): Promise<ProvisionResult> {
  const first = await ports.cluster.provisionablePods();
  // Static NodePools before the plan: their replicas do not wait for pods, and the pods of this run
  // count their new NodeClaims as capacity on its way.
  const statics = await staticPass(ports, options, lease, out);
  const staticDeleted = statics.deleted.length > 0 ? { staticDeleted: statics.deleted } : {};
  if (statics.leaseLost) return staticOnly(lease, statics);
  const consistent = options.consistentResume === true;
  const reads = readOptions(options);
  const idle = async (): Promise<ProvisionResult> => {
    // A shadow stack resumes nothing: the NodeClaims it finds unlaunched are the live autoscaler's.
    const resumed =
      options.shadow === true ? undefined : await resumeWithoutPods(ports, lease, out, { consistent, reads });
    if (resumed?.kind === 'provisioned') {
      return { ...resumed, claims: [...statics.claims, ...resumed.claims], ...staticDeleted };
    }
    if (statics.claims.length > 0 || statics.deleted.length > 0) return staticOnly(lease, statics);
    writeDecision(out, {
      kind: 'skip',
      reason: 'no provisionable pods',
      leaseToken: lease.token,
      ...(first.problems.length === 0 ? {} : { ignoredPods: first.problems.length }),
    });
    return { kind: 'skipped', why: 'no provisionable pods' };
  };
  // Without pending pods, a run still plans for the pods of nodes being deleted.
  if (first.items.length === 0 && !(await anyNodeDeleting(ports.cluster, consistent))) return idle();

  // What the plan needs besides the pods does not depend on which pods the batch takes: it is read
  // while the batch window is open (the NodeClaims from the API server, under the lease, so every
  // NodeClaim made before this run is in it), with the offering catalog of its EC2NodeClasses.
  const objects = readClusterObjects(ports.cluster, reads);
  // A failure of the reads is thrown where they are awaited, after the batch (not left unhandled
  // while it is open); the catalog's own errors are the plan's to report.
  objects.catch(() => undefined);
  const catalog = objects.then(
    (read) => warmInstanceTypes(ports.cloud, read),
    () => undefined,
  );
  const batch = await batchPods(ports, out, first, {
    idleMs: options.batchIdleMs ?? 1000,
    maxMs: options.batchMaxMs ?? 10_000,
    ...(options.podEventAtMs === undefined ? {} : { eventAtMs: options.podEventAtMs }),
  });
  const read = withPendingPods(await objects, batch.last, out.logger);
  let state = options.shadow === true ? withoutLiveAnswers(read) : read;
  if (!hasPodsToPlace(state)) return idle();
  await catalog;
  // The first round's state also feeds the EC2NodeClass pass, which resolves classes without a
  // current status so that the first pods of a new class launch in this run.
  if (ports.nodeClassResolver !== undefined) {
    const pass = await reconcileNodeClasses(
      { ...ports, ...out, resolver: ports.nodeClassResolver },
      {
        holder: options.holder,
        scope: 'stale',
        ...(options.nodeClassRefreshSeconds === undefined
          ? {}
          : { refreshSeconds: options.nodeClassRefreshSeconds }),
      },
      { nodeClasses: state.nodeClasses, nodeClaims: state.nodeClaims },
    );
    state = { ...state, nodeClasses: pass.nodeClasses };
  }
  // The runaway guard, once per run before planning: NodePools whose new NodeClaims keep failing
  // launch nothing for a while; their pods may go to other pools.
  const guard = await reconcileLaunchBackoff(
    { cluster: ports.cluster, ...out },
    {
      kind: 'provisioning',
      pools: state.nodePools,
      claims: state.nodeClaims,
      nodes: state.nodes,
      pendingPods: state.pendingPods,
      nowMs: ports.clock.now().getTime(),
      enabled: options.runawayGuard !== false,
    },
  );

  // A shortage refuses the offerings a launch tries, not all of its kind: while launches keep being
  // refused, the pods are planned again without what was refused, within the run's time for it.
  const maxRounds = Math.max(1, options.maxRounds ?? 20);
  const replanUntilMs = ports.clock.now().getTime() + (options.replanWithinMs ?? 30_000);
  const claims: ClaimOutcome[] = [...statics.claims];
  const oldestPendingSeconds = oldestWait(state.pendingPods, ports.clock.now().getTime());
  let last: RoundResult | undefined;
  let rounds = 0;
  let planMs = 0;
  let replanned = 0;
  for (let round = 0; round < maxRounds; round++) {
    // Past the window, one more round only for the claims the last one held back (they would have
    // launched on-demand at a spot size): it is the run's last, so nothing is held back again.
    const outOfTime = round > 0 && ports.clock.now().getTime() >= replanUntilMs;
    if (outOfTime && (last?.replanned ?? 0) === 0) break;
    const lastRound = outOfTime || round + 1 >= maxRounds;
    rounds = round + 1;
    if (round > 0) state = await readClusterState(ports.cluster, out.logger, reads);
    if (!hasPodsToPlace(state)) break;
    last = await runRound(ports, options, lease, out, state, { round, last: lastRound }, guard);
    claims.push(...last.claims);
    planMs += last.planMs;
    replanned += last.replanned;
    if (last.leaseLost || lastRound) break;
    if (!last.claims.some((c) => c.kind === 'insufficientCapacity')) break;
  }

  const unschedulable = last?.unschedulable ?? [];
  writeDecision(out, {
    kind: 'plan',
    reason: 'planned',
    queued: (last?.pods ?? 0) + (last?.deletingNodePods ?? 0),
    placed: last?.placed ?? 0,
    unschedulable: unschedulable.length,
    rounds,
    nodeClaims: claims.length - statics.claims.length,
    planMs,
    oldestPendingSeconds,
    ...(replanned === 0 ? {} : { replannedNodeClaims: replanned }),
    ...(batch.last.problems.length === 0 ? {} : { ignoredPods: batch.last.problems.length }),
  });
  const skippedNodePools = last?.skippedNodePools ?? [];
  if (unschedulable.length > 0) {
    await reportUnschedulable(ports, out, unschedulable, {
      eligible: last?.eligiblePools ?? 0,
      skipped: skippedNodePools,
    });
  }
  await reportNominated(ports, claims);

  return {
    kind: 'provisioned',
    leaseToken: lease.token,
    pods: last?.pods ?? 0,
    deletingNodePods: last?.deletingNodePods ?? 0,
    rounds,
    claims,
    placed: last?.placed ?? 0,
    unschedulable,
    skippedNodePools,
    leaseLost: last?.leaseLost ?? false,
    ...staticDeleted,
  };
}

/** The result of a run that only scaled static NodePools. */
function staticOnly(lease: Lease, statics: StaticPassResult): ProvisionResult {
  return {
    kind: 'provisioned',
    leaseToken: lease.token,
    pods: 0,
    deletingNodePods: 0,
    rounds: 0,
    claims: statics.claims,
    placed: 0,
    unschedulable: [],
    skippedNodePools: [],
    leaseLost: statics.leaseLost,
    ...(statics.deleted.length > 0 ? { staticDeleted: statics.deleted } : {}),
  };
}

/**
 * With no pods to plan for, NodeClaims created but not launched (replacements the disruption
 * controller made, or a run that died between create and launch) are still launched. Undefined when
 * there are none; the NodeClaim list is read first (from the cluster summary, unless `consistent`)
 * so that an idle run reads next to nothing.
 */
async function resumeWithoutPods(
  ports: ProvisionPorts,
  lease: Lease,
  out: DecisionOutput,
  { consistent, reads }: { readonly consistent: boolean; readonly reads: ReadClusterStateOptions },
): Promise<ProvisionResult | undefined> {
  const listed = await ports.cluster.nodeClaims(consistent ? { consistent: true } : undefined);
  if (!listed.items.some(isUnlaunched)) return undefined;
  // Launching: every NodeClaim as the API server has it, as a provisioning run with pods reads them.
  const state = await readClusterState(ports.cluster, out.logger, reads);
  const input = await buildSchedulingInput(state, ports.cloud, { nowMs: ports.clock.now().getTime() });
  const claims = await resumeUnlaunched(
    ports,
    out,
    lease,
    state.nodeClaims,
    input.nodePools,
    input.nodeClasses,
    input.instanceTypes,
  );
  return {
    kind: 'provisioned',
    leaseToken: lease.token,
    pods: 0,
    deletingNodePods: 0,
    rounds: 1,
    claims,
    placed: 0,
    unschedulable: [],
    skippedNodePools: [...input.selection.skipped],
    leaseLost: claims.some((c) => c.kind === 'fenced'),
  };
}

interface RoundResult {
  readonly pods: number;
  readonly deletingNodePods: number;
  readonly claims: readonly ClaimOutcome[];
  readonly placed: number;
  readonly unschedulable: readonly UnschedulablePod[];
  /** NodePools that could launch in this round. */
  readonly eligiblePools: number;
  readonly skippedNodePools: readonly SkippedNodePool[];
  readonly leaseLost: boolean;
  /** How long the scheduling simulation took, by the run's clock (0 when the round did not solve). */
  readonly planMs: number;
  /** Planned NodeClaims left for the next round: they would have fallen back to another capacity type. */
  readonly replanned: number;
}

/** Seconds since the oldest of `pods` was created (0 when none, or none has a creation time). */
function oldestWait(pods: readonly { readonly createdAtMs?: number }[], nowMs: number): number {
  let oldest = nowMs;
  for (const pod of pods)
    if (pod.createdAtMs !== undefined && pod.createdAtMs < oldest) oldest = pod.createdAtMs;
  return Math.round((nowMs - oldest) / 100) / 10;
}

async function runRound(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  out: DecisionOutput,
  state: ClusterState,
  { round, last }: { readonly round: number; readonly last: boolean },
  firstGuard: LaunchGuard,
): Promise<RoundResult> {
  let guard = firstGuard;
  const build = (from: ClusterState) =>
    buildSchedulingInput(from, ports.cloud, {
      nowMs: ports.clock.now().getTime(),
      pausedNodePools: guard.paused,
      rescheduleDeletingNodes: true,
      ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
    });
  const listedInput = await build(state);
  const skippedNodePools = [...listedInput.selection.skipped];
  const pools = listedInput.nodePools;
  const classes = listedInput.nodeClasses;

  // A paused NodePool plans nothing new, but the NodeClaims it already has are launched (a recorded
  // launch may have an instance that only its replay finds), so they resume from an unpaused view.
  const resumeFrom =
    round === 0 &&
    guard.paused.size > 0 &&
    state.nodeClaims.some(
      (c) => isUnlaunched(c) && c.nodePoolName !== undefined && guard.paused.has(c.nodePoolName),
    )
      ? await buildSchedulingInput(state, ports.cloud, { nowMs: ports.clock.now().getTime() })
      : listedInput;
  const claims: ClaimOutcome[] =
    round === 0 && options.shadow !== true
      ? await resumeUnlaunched(
          ports,
          out,
          lease,
          state.nodeClaims,
          resumeFrom.nodePools,
          resumeFrom.nodeClasses,
          resumeFrom.instanceTypes,
        )
      : [];
  if (claims.some((c) => c.kind === 'fenced')) {
    return {
      pods: state.pendingPods.length,
      deletingNodePods: listedInput.deletingNodePods.length,
      claims,
      placed: 0,
      unschedulable: [],
      eligiblePools: pools.size,
      skippedNodePools,
      leaseLost: true,
      planMs: 0,
      replanned: 0,
    };
  }

  // The plan as the API server confirms the Nodes and NodeClaims it counts on (the NodeClaims of
  // a provisioning run are read with a consistent list: only Nodes need GETs).
  let plan = await solveConfirmed(ports, out.logger, { state, input: listedInput }, build, {
    nodeClaimsConfirmed: true,
  });
  const rechecked = options.runawayGuard === false ? guard : await guardAtLaunch(ports, guard, state, plan);
  if (rechecked !== guard) {
    guard = rechecked;
    const again = await solveConfirmed(
      ports,
      out.logger,
      { state: plan.state, input: await build(plan.state) },
      build,
      { nodeClaimsConfirmed: true },
    );
    plan = { ...again, planMs: plan.planMs + again.planMs };
  }
  const { input, result, planMs } = plan;
  const moving = new Set(input.deletingNodePods.map((p) => p.uid));

  const launched = await launchRound(ports, out, lease, {
    round,
    last,
    plans: result.nodeClaims,
    pools,
    classes,
    typesOf: (plan) => poolInstanceTypes(input, plan.nodePoolName, plan.nodeClassName),
    overlays: input.overlays,
    probing: guard.probing,
    deletingNodePods: moving,
  });
  claims.push(...launched.claims);
  const { leaseLost, replanned } = launched;
  return {
    pods: state.pendingPods.length,
    deletingNodePods: moving.size,
    claims,
    placed: result.placements.length,
    unschedulable: result.unschedulable,
    eligiblePools: pools.size,
    // With the NodePools the second judgement held back, when there was one.
    skippedNodePools: [...input.selection.skipped],
    leaseLost,
    planMs,
    replanned,
  };
}

/**
 * Reads the instance types of the EC2NodeClasses that may launch, so that the offering catalog is
 * in the Cloud adapter's cache when the plan asks for it. Best effort: a class that cannot be read
 * here is read again by the plan, which reports the error.
 */
async function warmInstanceTypes(
  cloud: Pick<ProvisionPorts['cloud'], 'instanceTypes'>,
  read: ClusterObjectsRead,
): Promise<void> {
  const { eligible } = selectNodePools(read.objects.nodePools, read.objects.nodeClasses);
  const classes = new Map(eligible.map((e) => [e.nodeClass.name, e.nodeClass]));
  await Promise.allSettled([...classes.values()].map((c) => cloud.instanceTypes(c)));
}

/** Whether the state has pods to plan for: pending ones, or ones that need a place off deleting nodes. */
function hasPodsToPlace(state: ClusterState): boolean {
  return state.pendingPods.length > 0 || takeDeletingNodePods(state.nodes, state.nodeClaims).pods.length > 0;
}

/** A run's cluster reads: NodeClaims from the API server, NodeOverlays only with their gate on. */
function readOptions(options: ProvisionOptions): ReadClusterStateOptions {
  return { consistentNodeClaims: true, nodeOverlays: options.nodeOverlay === true };
}
