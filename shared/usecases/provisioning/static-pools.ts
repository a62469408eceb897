import {
  applyNodeOverlays,
  computeStaticDecision,
  disruptionCost,
  isReschedulable,
  planStaticNodeClaim,
  type StaticDecision,
  type StaticMember,
} from '../../core/index.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  UnreadableNodeClaim,
} from '../../ports/cluster.ts';
import type { Lease } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import { DECISION_SAMPLE_SIZE, type DecisionOutput } from '../decisions/decision.ts';
import { reconcileNodeClasses } from '../nodeclass/nodeclass.ts';
import { reconcileLaunchBackoff } from '../runaway-guard/launch-backoff.ts';
import { NO_OVERLAYS } from '../state/cluster-state.ts';
import { replacedCandidates } from '../state/command-record.ts';
import { confirmationChanges, readConfirmed, withConfirmed } from '../state/confirm.ts';
import { selectNodePools } from '../state/eligibility.ts';
import { nodeClaimName } from '../state/new-nodeclaim.ts';
import { nodeIndex } from '../state/node-index.ts';
import { resolveClusterOverlays } from '../state/overlays.ts';
import { staticPoolsNow } from '../state/scheduled-replicas.ts';
import { handToTermination } from '../termination/handover.ts';
import { applyPlan } from './launch.ts';
import { type StaticLine, writeStatic } from './static-decision.ts';
import type { ClaimOutcome, ProvisionPorts } from './types.ts';

// Static capacity (Karpenter's alpha `spec.replicas`): the provisioner's pass that keeps each
// static NodePool at its replicas. It runs at the start of every provisioning run, under the
// provisioner lease, and launches through the provisioner's own launch path (NodeClaim names
// derived from the decision, fencing, the launch record), so a retried or concurrent run never
// launches a replica twice. A surplus goes through the normal termination path. A pool whose
// NodeClaims keep failing waits on the runaway guard as a dynamic pool does.

export type StaticPassPorts = Pick<
  ProvisionPorts,
  'cluster' | 'cloud' | 'leases' | 'clock' | 'requestTermination' | 'nodeClassResolver'
>;

/** The provisioner's settings the static pass follows. */
export interface StaticPassOptions {
  /** Karpenter's NodeOverlay feature gate: overlays price the replicas' instance types. */
  readonly nodeOverlay: boolean;
  /** Flotilla's runaway guard (the stack's `runawayGuard`); off, a pool's launches never wait on it. */
  readonly runawayGuard: boolean;
  /** Karpenter's AMI_REFRESH_INTERVAL in seconds, for the classes this pass resolves. */
  readonly nodeClassRefreshSeconds?: number;
}

export interface StaticPassResult {
  readonly claims: readonly ClaimOutcome[];
  /** NodeClaims of a scaled-down pool deleted by this pass. */
  readonly deleted: readonly string[];
  readonly leaseLost: boolean;
}

const NOTHING: StaticPassResult = { claims: [], deleted: [], leaseLost: false };

/**
 * The pool's NodeClaims that hold its replicas, and how many others still count against
 * `limits.nodes`: those being deleted, and drifted ones a disruption command has a replacement
 * for (they go once it is up; counting them too would take the replacement for a surplus).
 */
function claimsOf(
  pool: ClusterNodePool,
  claims: readonly ClusterNodeClaim[],
  replaced: ReadonlySet<string> = replacedCandidates(claims),
) {
  const mine = claims.filter((c) => c.nodePoolName === pool.pool.name);
  const live = mine.filter((c) => !c.deleting && !replaced.has(c.name));
  return { live, deleting: mine.length - live.length };
}

/**
 * Launches or removes NodeClaims so that each static NodePool (not being deleted) holds
 * `spec.replicas`. The NodeClaim list of the cluster summary tells whether any pool is off; only
 * then are the API server's own NodeClaims read and acted on. A pool short of replicas launches the
 * cheapest offering its requirements allow, up to `limits.nodes`; while a NodeClaim cannot be read,
 * no pool launches (it may be one of theirs). One `staticCapacity` decision per pool that changes.
 * @throws ClusterApiError / CloudApiError when what it needs cannot be read.
 */
export async function reconcileStaticNodePools(
  ports: StaticPassPorts,
  out: DecisionOutput,
  lease: Lease,
  holder: string,
  options: StaticPassOptions,
): Promise<StaticPassResult> {
  const pools = staticPoolsNow((await ports.cluster.nodePools()).items, ports.clock.now().getTime());
  if (pools.length === 0) return NOTHING;
  const listed = await ports.cluster.nodeClaims();
  const off = (read: readonly ClusterNodeClaim[]) => {
    const replaced = replacedCandidates(read);
    return pools.filter((p) => claimsOf(p, read, replaced).live.length !== p.pool.replicas);
  };
  if (off(listed.items).length === 0 && !pools.some((p) => mayBeOwn(listed.unreadable, p).length > 0)) {
    return NOTHING;
  }

  const read = await ports.cluster.nodeClaims({ consistent: true });
  const todo = off(read.items);
  if (todo.length === 0) return NOTHING;
  const replaced = replacedCandidates(read.items);
  let nodes: readonly ClusterNode[] | undefined;
  const claims: ClaimOutcome[] = [];
  const deleted: string[] = [];
  for (const pool of todo) {
    const { live, deleting } = claimsOf(pool, read.items, replaced);
    const replicas = pool.pool.replicas ?? 0;
    if (live.length > replicas) nodes ??= (await ports.cluster.nodes()).items;
    const decide = (from: readonly ClusterNode[]) =>
      computeStaticDecision({
        pool: pool.pool,
        members: live.length > replicas ? toMembers(live, from) : live.map(emptyMember),
        deleting,
      });
    let decision = decide(nodes ?? []);
    if (decision.kind === 'delete' && nodes !== undefined) {
      // Which NodeClaims go is chosen by their nodes' pods, as listed: decided again on the nodes of
      // the chosen ones as the API server has them.
      const confirmed = await confirmSurplus(ports.cluster, out.logger, live, nodes, decide);
      nodes = confirmed.nodes;
      decision = confirmed.decision;
    }
    if (decision.kind === 'steady') continue;
    const heldBy = pool.pool.replicasHeldBy;
    const line: StaticLine = {
      nodePool: pool.pool.name,
      leaseToken: lease.token,
      ...(heldBy === undefined ? {} : { replicasHeldBy: heldBy }),
    };
    if (decision.kind === 'atLimit') {
      writeStatic(out, line, decision, 'atLimit', 0);
      continue;
    }
    if (!(await ports.leases.isHeld(lease, ports.clock.now()))) return { claims, deleted, leaseLost: true };
    // One pool's failure (its catalog, a write) is its own decision and Event; the other pools and
    // the pods of this run go on, and the next run tries the pool again.
    try {
      if (decision.kind === 'delete') {
        for (const name of decision.nodeClaims) {
          await removeSurplus(ports, out.logger, name, pool.pool.name, replicas);
          deleted.push(name);
        }
        writeStatic(out, line, decision, 'delete', decision.nodeClaims.length);
        continue;
      }
      // Like a dynamic pool's, a static pool's launches wait while the runaway guard pauses them.
      const unknown = mayBeOwn(read.unreadable, pool);
      const launch =
        unknown.length > 0
          ? unreadableReason(unknown)
          : await guardLaunches(
              ports,
              out,
              { pool, claims: read.items, enabled: options.runawayGuard },
              decision,
            );
      if (typeof launch === 'string') {
        await blocked(ports, out, line, decision, launch);
        continue;
      }
      const launched = await launchReplicas(ports, out, lease, { holder, pool, options }, launch, read.items);
      if (typeof launched === 'string') {
        await blocked(ports, out, line, launch, launched);
        continue;
      }
      writeStatic(out, line, launch, 'launch', launch.count);
      claims.push(...launched);
      if (launched.some((c) => c.kind === 'fenced')) return { claims, deleted, leaseLost: true };
    } catch (error) {
      await blocked(ports, out, line, decision, describe(error));
    }
  }
  return { claims, deleted, leaseLost: false };
}

/** Rounds of confirming the nodes of the chosen NodeClaims before the unconfirmed ones rank last. */
const CONFIRM_ROUNDS = 3;

/**
 * A scale-down decided on the nodes of the NodeClaims it deletes as the API server has them: the
 * nodes of the chosen NodeClaims (the listed one, and the one its `status.nodeName` names) are read
 * (`readConfirmed`: a GET of the Node and of its pods each), put in place of the listed ones, and
 * the decision made again, until every chosen NodeClaim's node is confirmed. After CONFIRM_ROUNDS,
 * nodes still unconfirmed rank last, as nodes whose pods could not be read. Logs once when the
 * confirmed nodes differ from the listed ones.
 * @throws ClusterApiError when a read fails.
 */
async function confirmSurplus(
  cluster: StaticPassPorts['cluster'],
  logger: Logger,
  live: readonly ClusterNodeClaim[],
  listed: readonly ClusterNode[],
  decide: (nodes: readonly ClusterNode[]) => StaticDecision,
): Promise<{ readonly nodes: readonly ClusterNode[]; readonly decision: StaticDecision }> {
  const claims = new Map(live.map((c) => [c.name, c]));
  const done = new Set<string>();
  const gone: string[] = [];
  const changed: string[] = [];
  let nodes = listed;
  let decision = decide(nodes);
  for (let round = 0; decision.kind === 'delete'; round++) {
    const nodeFor = nodeIndex(nodes);
    const names = new Set<string>();
    for (const name of decision.nodeClaims) {
      const claim = claims.get(name);
      if (claim === undefined) continue;
      const listedName = nodeFor(claim)?.name;
      if (listedName !== undefined) names.add(listedName);
      if (claim.status.nodeName !== undefined) names.add(claim.status.nodeName);
    }
    const todo = [...names].filter((n) => !done.has(n)).sort();
    if (todo.length === 0) break;
    if (round >= CONFIRM_ROUNDS) {
      const unconfirmed = ['not confirmed by the API server'];
      nodes = nodes.map((n) => (done.has(n.name) ? n : { ...n, unreadablePods: unconfirmed }));
      decision = decide(nodes);
      break;
    }
    const read = await readConfirmed(cluster, { nodes: todo, nodeClaims: [] });
    for (const name of todo) done.add(name);
    const diff = confirmationChanges({ nodes, nodeClaims: [] }, read);
    gone.push(...diff.gone);
    changed.push(...diff.changed);
    nodes = withConfirmed({ nodes, nodeClaims: [] }, read).nodes;
    decision = decide(nodes);
  }
  if (gone.length > 0 || changed.length > 0) {
    logger.warn('static scale-down confirmed against the API server', {
      reason: 'the listed nodes of the NodeClaims chosen to go differ from the API server',
      gone: gone.slice(0, DECISION_SAMPLE_SIZE),
      changed: changed.slice(0, DECISION_SAMPLE_SIZE),
    });
  }
  return { nodes, decision };
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The runaway guard on a static pool's launches, as on a dynamic pool's: while its NodeClaims keep
 * failing it launches nothing (why, in the guard's words), and once the pause ends it launches one
 * NodeClaim, a probe, until one succeeds.
 */
async function guardLaunches(
  ports: StaticPassPorts,
  out: DecisionOutput,
  run: {
    readonly pool: ClusterNodePool;
    readonly claims: readonly ClusterNodeClaim[];
    readonly enabled: boolean;
  },
  decision: Extract<StaticDecision, { kind: 'launch' }>,
): Promise<Extract<StaticDecision, { kind: 'launch' }> | string> {
  const { pool, claims, enabled } = run;
  const guard = await reconcileLaunchBackoff(
    { cluster: ports.cluster, ...out },
    {
      kind: 'staticLaunch',
      pools: [pool],
      claims,
      nodes: async () => (await ports.cluster.nodes()).items,
      nowMs: ports.clock.now().getTime(),
      enabled,
    },
  );
  const paused = guard.paused.get(pool.pool.name);
  if (paused !== undefined) return paused;
  if (!guard.probing.has(pool.pool.name) || decision.count <= 1) return decision;
  return { ...decision, count: 1, limitedBy: 'launchBackoff' };
}

/** A pool that cannot reach its replicas now: the decision, and a Warning Event on the NodePool. */
async function blocked(
  ports: StaticPassPorts,
  out: DecisionOutput,
  line: StaticLine,
  decision: Exclude<StaticDecision, { kind: 'steady' }>,
  why: string,
): Promise<void> {
  writeStatic(out, line, decision, 'blocked', 0, why);
  await ports.cluster.recordEvent({
    subject: { kind: 'NodePool', name: line.nodePool },
    type: 'Warning',
    reason: 'StaticCapacityBlocked',
    message: `static NodePool holds ${decision.current} of ${decision.replicas} replicas: ${why}`.slice(
      0,
      1000,
    ),
  });
}

/**
 * The NodeClaims that cannot be read and may be the pool's: not those whose label names another
 * NodePool, nor those outside every NodePool.
 */
function mayBeOwn(
  unreadable: readonly UnreadableNodeClaim[],
  pool: ClusterNodePool,
): readonly UnreadableNodeClaim[] {
  return unreadable.filter(
    (u) => u.standalone !== true && (u.nodePool === undefined || u.nodePool === pool.pool.name),
  );
}

function unreadableReason(
  unreadable: readonly { readonly name: string; readonly problem: string }[],
): string {
  const first = unreadable[0];
  return `nodeClaim "${first?.name}" cannot be read (${first?.problem}); it may belong to this pool`;
}

const emptyMember = (c: ClusterNodeClaim): StaticMember => ({
  nodeClaim: c.name,
  pods: 0,
  disruptionCost: 0,
});

/** Each NodeClaim with its node's pods; a node whose pods cannot all be read is ranked last. */
function toMembers(claims: readonly ClusterNodeClaim[], nodes: readonly ClusterNode[]): StaticMember[] {
  const nodeFor = nodeIndex(nodes);
  return claims.map((claim) => {
    const node = nodeFor(claim);
    if (node === undefined) return emptyMember(claim);
    if ((node.unreadablePods ?? []).length > 0) {
      return {
        nodeClaim: claim.name,
        pods: Number.MAX_SAFE_INTEGER,
        disruptionCost: Number.POSITIVE_INFINITY,
      };
    }
    const pods = node.pods.filter(isReschedulable);
    return { nodeClaim: claim.name, pods: pods.length, disruptionCost: disruptionCost(pods) };
  });
}

/** Deletes a surplus NodeClaim and hands it to termination (which drains it first). */
async function removeSurplus(
  ports: StaticPassPorts,
  logger: Logger,
  name: string,
  pool: string,
  replicas: number,
): Promise<void> {
  await ports.cluster.deleteNodeClaim(name);
  // Deleted either way: a failed request leaves the drain to the termination sweep.
  await handToTermination(ports.requestTermination, name, logger);
  await ports.cluster.recordEvent({
    subject: { kind: 'NodeClaim', name },
    type: 'Normal',
    reason: 'DisruptionTerminating',
    message: `Disrupting NodeClaim: static NodePool ${pool} scaled to ${replicas} replicas`,
  });
}

/**
 * Plans and launches the replicas a pool is short of; the reason nothing can launch when the pool
 * or its EC2NodeClass is not ready or no instance type fits.
 */
async function launchReplicas(
  ports: StaticPassPorts,
  out: DecisionOutput,
  lease: Lease,
  run: { readonly holder: string; readonly pool: ClusterNodePool; readonly options: StaticPassOptions },
  decision: Extract<StaticDecision, { kind: 'launch' }>,
  nodeClaims: readonly ClusterNodeClaim[],
): Promise<ClaimOutcome[] | string> {
  const { holder, pool, options } = run;
  const [read, daemonSets, overlays] = await Promise.all([
    ports.cluster.nodeClasses(),
    ports.cluster.daemonSets(),
    options.nodeOverlay ? ports.cluster.nodeOverlays() : NO_OVERLAYS,
  ]);
  let classes = read.items;
  // As for pods: a class without a status for its generation is resolved now, so a new static pool
  // launches in the run that first sees it.
  if (ports.nodeClassResolver !== undefined) {
    const mine = classes.filter((c) => c.name === pool.nodeClassRef.name);
    const pass = await reconcileNodeClasses(
      { ...ports, ...out, resolver: ports.nodeClassResolver },
      {
        holder,
        scope: 'stale',
        ...(options.nodeClassRefreshSeconds === undefined
          ? {}
          : { refreshSeconds: options.nodeClassRefreshSeconds }),
      },
      { nodeClasses: mine, nodeClaims },
    );
    classes = pass.nodeClasses;
  }
  const { eligible, skipped } = selectNodePools([pool], classes);
  const chosen = eligible[0];
  if (chosen === undefined) return skipped[0]?.reason ?? 'it cannot launch now';
  // The pool's types as NodeOverlays price them (and add resources to), as for pods.
  const raw = await ports.cloud.instanceTypes(chosen.nodeClass);
  const resolution = resolveClusterOverlays(overlays.items, [pool], new Map([[chosen.nodeClass.name, raw]]));
  const types = applyNodeOverlays(resolution, pool.pool.name, raw);
  const planned = planStaticNodeClaim({
    pool: pool.pool,
    instanceTypes: types,
    daemonSets: daemonSets.items,
  });
  if (!planned.ok) return planned.reason;
  const outcomes: ClaimOutcome[] = [];
  for (let i = 0; i < decision.count; i++) {
    // The replica's slot makes each name distinct within the decision, the lease token between decisions.
    const name = nodeClaimName({
      nodePoolName: pool.pool.name,
      podUids: [`replica-${decision.current + i}`],
      leaseToken: lease.token,
      round: 0,
    });
    const outcome = await applyPlan(ports, out, lease, 0, planned.plan, pool, chosen.nodeClass, types, {
      named: { name, reason: 'static' },
    });
    outcomes.push(outcome);
    if (outcome.kind === 'fenced') break;
  }
  return outcomes;
}
