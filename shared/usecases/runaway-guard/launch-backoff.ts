import {
  assertNever,
  findCondition,
  isConditionTrue,
  NodeClaimConditionType,
  NodePoolConditionType,
  type Pod,
  trueSinceMs,
} from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, writeDecision } from '../decisions/decision.ts';
import type { DeleteReason } from '../decisions/lifecycle.ts';
import { readConfirmed, withConfirmed } from '../state/confirm.ts';
import { decideLaunchBackoff, type LaunchBackoffOutcome, launchPausedUntil } from './decide.ts';
import {
  classifyNodeClaims,
  findRecoveredNodeClaim,
  mayHaveRecovered,
  type NodeClaimFailure,
  suspectWait,
  UNEXPECTED_TAINT_PERSISTENCE_MS,
} from './failures.ts';
import { LAUNCH_BACKOFF_ANNOTATION, readLaunchBackoff } from './state.ts';
import { clearLaunchBackoff } from './switched-off.ts';
import { unexpectedTaints } from './taints.ts';

// The runaway guard's one entry point, reconcileLaunchBackoff, and its effects (the decision is
// decide.ts's): per NodePool, the `LaunchBackoff` condition and the state annotation written when
// a pause starts or ends, an Event on the NodePool and one decision line. Three triggers call it:
// the provisioner before planning (it sees pending pods, so it judges unexpected taints) and skips
// the NodePools it reports paused; the lifecycle pass with the NodeClaims it deleted for timeouts,
// ending pauses whose time is up; the disruption pass with the empty nodes it reclaims, while their
// Nodes are still there to judge.

export interface LaunchBackoffPorts {
  readonly cluster: Pick<
    Cluster,
    | 'nodePools'
    | 'patchNodePoolStatus'
    | 'patchNodePoolMetadata'
    | 'recordEvent'
    | 'nodeClaim'
    | 'nodeWithPods'
  >;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

/** A NodeClaim the lifecycle deleted because it timed out. */
export interface TimedOutNodeClaim {
  readonly claim: ClusterNodeClaim;
  readonly reason: DeleteReason;
  readonly message: string;
}

/** What every trigger gives the guard. */
interface ScanBase {
  /** The NodePools as the caller read them. */
  readonly pools: readonly ClusterNodePool[];
  readonly claims: readonly ClusterNodeClaim[];
  readonly nowMs: number;
  /**
   * The stack's `runawayGuard` (default true). False, as Karpenter has no guard: nothing is judged
   * or paused, and what the guard left on the NodePools goes (switched-off.ts).
   */
  readonly enabled?: boolean;
}

/** What one trigger saw; each NodePool not being deleted is judged on it. */
export type LaunchBackoffScan =
  | (ScanBase & {
      /** A provisioner run, before it plans: unexpected taints are judged against its pending pods. */
      readonly kind: 'provisioning';
      /** The Nodes with their pods. */
      readonly nodes: readonly ClusterNode[];
      /** Pods waiting for capacity. */
      readonly pendingPods: readonly Pod[];
    })
  | (ScanBase & {
      /** A lifecycle pass: its timeouts count, and pauses whose time is up end. */
      readonly kind: 'lifecycle';
      /**
       * How to read the Nodes with their pods: only to see whether a NodePool that counts failures
       * recovered (a NodeClaim it made since has initialized), once, so that a pass with nothing
       * to judge reads no pods.
       */
      readonly nodes: () => Promise<readonly ClusterNode[]>;
      readonly timedOut: readonly TimedOutNodeClaim[];
    })
  | (ScanBase & {
      /**
       * A static NodePool about to launch replicas: judged on its NodeClaims' own conditions (a
       * static pool launches for no pod, so no unexpected taint keeps a pod away), and pauses whose
       * time is up end.
       */
      readonly kind: 'staticLaunch';
      /** How to read the Nodes with their pods, once, only to see whether the pool recovered. */
      readonly nodes: () => Promise<readonly ClusterNode[]>;
    })
  | (ScanBase & {
      /**
       * A disruption pass that just deleted these empty NodeClaims: those under a taint their
       * NodePool did not set are judged with their Nodes as the pass saw them (termination removes
       * a Node within seconds, often before a provisioner run could look at it), on the NodePools
       * read again (a provisioner run may have counted one of them since the pass read them).
       */
      readonly kind: 'reclaimedEmpty';
      readonly reclaimed: readonly ClusterNodeClaim[];
      readonly nodes: readonly ClusterNode[];
      readonly pendingPods: readonly Pod[];
    });

/** What the guard lets the provisioner do now. */
export interface LaunchGuard {
  /** NodePools whose launches are paused: name → why, in words for the pods' Events. */
  readonly paused: ReadonlyMap<string, string>;
  /**
   * NodePools whose pause ended without a NodeClaim succeeding since: they launch one NodeClaim (a
   * probe), not a whole plan, and nothing more while it has not initialized or, initialized
   * without pods, is younger than the unexpected-taint persistence window (such pools are in
   * `paused` meanwhile), until one initializes with pods.
   */
  readonly probing: ReadonlySet<string>;
}

const timeoutFailure = (t: TimedOutNodeClaim): NodeClaimFailure[] =>
  t.claim.createdAtMs === undefined
    ? []
    : [
        {
          kind: t.reason === 'launch_timeout' ? 'LaunchTimeout' : 'RegistrationTimeout',
          nodeClaim: t.claim.name,
          createdAtMs: t.claim.createdAtMs,
          detail: t.message,
        },
      ];

const NO_GUARD: LaunchGuard = { paused: new Map(), probing: new Set() };

/**
 * The runaway guard: decides and applies it for every NodePool of the scan not being deleted.
 * @returns the NodePools whose launches are paused now, and those that launch one probe a run
 *   (for `reclaimedEmpty`, only the NodePools of the reclaimed NodeClaims).
 * @throws ClusterApiError from the Cluster port (a NodePool deleted meanwhile is skipped).
 */
export async function reconcileLaunchBackoff(
  ports: LaunchBackoffPorts,
  scan: LaunchBackoffScan,
): Promise<LaunchGuard> {
  if (scan.enabled === false) {
    // Disruption's trigger carries no NodePool the provisioner does not also see.
    if (scan.kind !== 'reclaimedEmpty') await clearLaunchBackoff(ports, scan.pools);
    return NO_GUARD;
  }
  switch (scan.kind) {
    case 'provisioning':
      return judge(ports, scan);
    case 'lifecycle':
    case 'staticLaunch':
      return judge(ports, scan);
    case 'reclaimedEmpty':
      return judgeReclaimed(ports, scan);
    default:
      return assertNever(scan);
  }
}

/**
 * Only a node under a taint its NodePool did not set can count: for the usual empty node (a
 * scale-down) there is nothing to judge and nothing to read.
 */
async function judgeReclaimed(
  ports: LaunchBackoffPorts,
  scan: Extract<LaunchBackoffScan, { kind: 'reclaimedEmpty' }>,
): Promise<LaunchGuard> {
  const nodeFor = nodeIndex(scan.nodes);
  const pools = new Map(scan.pools.map((p) => [p.pool.name, p]));
  const tainted = scan.reclaimed.filter((c) => {
    const node = nodeFor(c);
    const pool = c.nodePoolName === undefined ? undefined : pools.get(c.nodePoolName);
    return node !== undefined && pool !== undefined && unexpectedTaints(node, pool, c).length > 0;
  });
  if (tainted.length === 0) return NO_GUARD;
  const names = new Set(tainted.map((c) => c.name));
  const judged = new Set(tainted.map((c) => c.nodePoolName));
  const at = new Date(scan.nowMs).toISOString();
  const current = (await ports.cluster.nodePools()).items;
  return judge(ports, {
    pools: current.filter((p) => judged.has(p.pool.name)),
    claims: scan.claims.map((c) => (names.has(c.name) ? asReclaimedEmpty(c, at) : c)),
    // The caller confirmed these on the API server before deleting them, and they stand here as
    // disruption left them: a read now would find them gone.
    confirmed: names,
    nodes: scan.nodes,
    pendingPods: scan.pendingPods,
    nowMs: scan.nowMs,
  });
}

/** A NodeClaim as disruption leaves it: deleting, its `DisruptionReason` Empty. */
function asReclaimedEmpty(claim: ClusterNodeClaim, at: string): ClusterNodeClaim {
  const type = NodeClaimConditionType.disruptionReason;
  const conditions = claim.status.conditions.filter((c) => c.type !== type);
  return {
    ...claim,
    deleting: true,
    status: {
      ...claim.status,
      conditions: [
        ...conditions,
        { type, status: 'True', reason: 'Empty', message: '', lastTransitionTime: at },
      ],
    },
  };
}

/**
 * The lists with the named NodeClaims, and their Nodes with their pods, as the API server has them
 * (a GET of each NodeClaim, then of each Node it or the list names): see state/confirm.ts.
 */
async function confirmNamed(
  cluster: Pick<Cluster, 'nodeClaim' | 'nodeWithPods'>,
  listed: { readonly nodeClaims: readonly ClusterNodeClaim[]; readonly nodes: readonly ClusterNode[] },
  names: readonly string[],
): Promise<{ readonly nodeClaims: readonly ClusterNodeClaim[]; readonly nodes: readonly ClusterNode[] }> {
  const claims = await readConfirmed(cluster, { nodes: [], nodeClaims: names });
  const nodeFor = nodeIndex(listed.nodes);
  const nodeNames = new Set<string>();
  for (const name of names) {
    const before = listed.nodeClaims.find((c) => c.name === name);
    const listedNode = before === undefined ? undefined : nodeFor(before);
    if (listedNode !== undefined) nodeNames.add(listedNode.name);
    const fresh = claims.nodeClaims.get(name)?.status.nodeName;
    if (fresh !== undefined) nodeNames.add(fresh);
  }
  const nodes = await readConfirmed(cluster, { nodes: [...nodeNames], nodeClaims: [] });
  return withConfirmed(
    { nodeClaims: listed.nodeClaims, nodes: listed.nodes },
    { nodes: nodes.nodes, nodeClaims: claims.nodeClaims },
  );
}

/** The Node of a NodeClaim, by name or provider id. */
function nodeIndex(nodes: readonly ClusterNode[]): (claim: ClusterNodeClaim) => ClusterNode | undefined {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const byProvider = new Map(
    nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
  );
  return (claim) =>
    (claim.status.nodeName === undefined ? undefined : byName.get(claim.status.nodeName)) ??
    (claim.status.providerId === undefined ? undefined : byProvider.get(claim.status.providerId));
}

interface Judgement extends ScanBase {
  readonly nodes: readonly ClusterNode[] | (() => Promise<readonly ClusterNode[]>);
  /** Pods waiting for capacity; without them unexpected taints are not judged. */
  readonly pendingPods?: readonly Pod[];
  readonly timedOut?: readonly TimedOutNodeClaim[];
  /** NodeClaims the caller read from the API server already, with their Nodes: not read again. */
  readonly confirmed?: ReadonlySet<string>;
}

async function judge(ports: LaunchBackoffPorts, scan: Judgement): Promise<LaunchGuard> {
  const paused = new Map<string, string>();
  const probing = new Set<string>();
  let read: Promise<readonly ClusterNode[]> | undefined;
  const nodes = (): Promise<readonly ClusterNode[]> => {
    const given = scan.nodes;
    if (typeof given !== 'function') return Promise.resolve(given);
    read ??= given();
    return read;
  };
  for (const pool of scan.pools) {
    if (pool.deleting) continue;
    const name = pool.pool.name;
    const classify = (claims: readonly ClusterNodeClaim[], listed: readonly ClusterNode[]) =>
      classifyNodeClaims({
        pool,
        claims,
        // Without pending pods only the NodeClaims' own conditions are judged.
        nodes: scan.pendingPods === undefined ? [] : listed,
        nowMs: scan.nowMs,
        ...(scan.pendingPods === undefined ? {} : { pendingPods: scan.pendingPods }),
      });
    let classified = classify(scan.claims, scan.pendingPods === undefined ? [] : await nodes());
    // A failure or a suspect taint pauses the pool's launches: it is judged again on the NodeClaims
    // and Nodes it names as the API server has them (the lists may be the cluster summary's).
    const named = [...classified.failures, ...classified.suspects]
      .map((f) => f.nodeClaim)
      .filter((n) => scan.confirmed?.has(n) !== true);
    if (named.length > 0) {
      const confirmed = await confirmNamed(
        ports.cluster,
        { nodeClaims: scan.claims, nodes: scan.pendingPods === undefined ? [] : await nodes() },
        named,
      );
      classified = classify(confirmed.nodeClaims, confirmed.nodes);
    }
    const failures = [
      ...classified.failures,
      ...(scan.timedOut ?? []).filter((t) => t.claim.nodePoolName === name).flatMap(timeoutFailure),
    ];
    const current = findCondition(pool.conditions, NodePoolConditionType.launchBackoff);
    const read = readLaunchBackoff(pool);
    const counted = read.kind === 'state' ? read.state : undefined;
    // Only a count of failures is reset by a recovery (decideLaunchBackoff).
    const since = counted !== undefined && counted.failures > 0 ? counted.lastFailedCreatedMs : undefined;
    const recovered =
      since === undefined || !mayHaveRecovered({ pool, claims: scan.claims }, since, scan.nowMs)
        ? undefined
        : findRecoveredNodeClaim({ pool, claims: scan.claims, nodes: await nodes() }, since, scan.nowMs);
    const outcome = decideLaunchBackoff({
      pool,
      failures,
      nowMs: scan.nowMs,
      ...(recovered === undefined ? {} : { recovered }),
    });
    if (outcome.kind !== 'unchanged' && !(await apply(ports, pool, outcome))) continue;
    const until = launchPausedUntil(outcome.state, scan.nowMs);
    // A node of the pool sits empty under a taint the pool did not set: launching more for the
    // pods it repels would only repeat it, so the pool waits for the taint to go (or to count).
    const [suspect] = classified.suspects;
    if (until === undefined && suspect !== undefined) {
      paused.set(name, suspectWait(suspect));
      continue;
    }
    if (until !== undefined) {
      const reason =
        outcome.kind === 'start'
          ? outcome.failure.kind
          : outcome.kind === 'restart'
            ? outcome.condition.reason
            : (current?.reason ?? 'NodeClaimsFailing');
      paused.set(
        name,
        `launches paused until ${new Date(until).toISOString()} after ${outcome.state?.failures ?? 0} failed NodeClaim(s) in a row (${reason}; see the NodePool's ${NodePoolConditionType.launchBackoff} condition)`,
      );
    } else if (outcome.state !== undefined && outcome.state.failures > 0) {
      // One probe at a time: while the last one has not initialized, or initialized too recently
      // for an unexpected taint on it to count (it would have reset the count had it got pods),
      // launch nothing more; otherwise a probe left empty by a rogue taint lets the next one out
      // before the guard can judge it.
      const since = outcome.state.lastFailedCreatedMs;
      const probe = scan.claims.find((c) => {
        if (c.nodePoolName !== name || c.deleting || (c.createdAtMs ?? Number.POSITIVE_INFINITY) <= since) {
          return false;
        }
        if (!isConditionTrue(c.status.conditions, NodeClaimConditionType.initialized)) return true;
        const initializedAtMs = trueSinceMs(c.status.conditions, NodeClaimConditionType.initialized);
        return (
          initializedAtMs !== undefined && scan.nowMs - initializedAtMs < UNEXPECTED_TAINT_PERSISTENCE_MS
        );
      });
      if (probe === undefined) probing.add(name);
      else {
        paused.set(
          name,
          `launches wait for nodeClaim ${probe.name} to initialize and host pods after ${outcome.state.failures} failed NodeClaim(s) in a row (see the NodePool's ${NodePoolConditionType.launchBackoff} condition)`,
        );
      }
    }
  }
  return { paused, probing };
}

/**
 * Writes the condition, then the state annotation, then the Event and the decision line; false
 * when the NodePool is gone. The annotation is the commit: should the invocation end between the
 * two writes, the next one reads the state as it was and decides the same again.
 */
async function apply(
  ports: LaunchBackoffPorts,
  pool: ClusterNodePool,
  outcome: Exclude<LaunchBackoffOutcome, { kind: 'unchanged' }>,
): Promise<boolean> {
  const name = pool.pool.name;
  try {
    await ports.cluster.patchNodePoolStatus(name, { conditions: [outcome.condition] });
    await ports.cluster.patchNodePoolMetadata(name, {
      annotations: { [LAUNCH_BACKOFF_ANNOTATION]: outcome.annotation },
    });
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  const subject = { kind: 'NodePool', name, uid: pool.uid } as const;
  if (outcome.kind === 'end') {
    await ports.cluster.recordEvent({
      subject,
      type: 'Normal',
      reason: 'LaunchBackoffEnded',
      message: `NodePool ${name} launches again: ${outcome.condition.message}`,
    });
    writeDecision(ports, {
      kind: 'launchBackoff',
      reason: outcome.why,
      action: 'end',
      nodePool: name,
      failures: outcome.state.failures,
      ...(outcome.nodeClaim === undefined ? {} : { nodeClaim: outcome.nodeClaim }),
    });
    return true;
  }
  const until = new Date(outcome.state.pausedUntilMs).toISOString();
  await ports.cluster.recordEvent({
    subject,
    type: 'Warning',
    reason: 'LaunchBackoff',
    message: `NodePool ${name} launches nothing until ${until}: ${outcome.condition.message}`,
  });
  writeDecision(ports, {
    kind: 'launchBackoff',
    reason: outcome.condition.reason,
    action: 'start',
    nodePool: name,
    failures: outcome.state.failures,
    ...(outcome.kind === 'start'
      ? { nodeClaim: outcome.failure.nodeClaim, detail: outcome.failure.detail }
      : { detail: outcome.problem }),
    backoffSeconds: Math.round(outcome.backoffMs / 1000),
    pausedUntil: until,
  });
  return true;
}
