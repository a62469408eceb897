import {
  isConditionTrue,
  NodeClaimConditionType,
  NodePoolConditionType,
  type Pod,
  trueSinceMs,
} from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { writeDecision } from '../decision.ts';
import type { DeleteReason } from '../lifecycle/decide.ts';
import {
  classifyNodeClaims,
  decideLaunchBackoff,
  findRecoveredNodeClaim,
  type LaunchBackoffOutcome,
  launchPausedUntil,
  mayHaveRecovered,
  type NodeClaimFailure,
  readLaunchBackoff,
  UNEXPECTED_TAINT_PERSISTENCE_MS,
} from './decide.ts';

// The runaway guard's effects (the decision is decide.ts's): per NodePool, the
// `LaunchBackoff` condition written when a pause starts or ends, an Event on the NodePool and one
// decision line. The provisioner runs it before planning (it sees pending pods, so it judges
// unexpected taints) and skips the NodePools it reports paused; the lifecycle pass runs it with
// the NodeClaims it deleted for timeouts and ends pauses whose time is up; the disruption pass runs
// it on the empty nodes it reclaims, while their Nodes are still there to judge.

export interface LaunchBackoffPorts {
  readonly cluster: Pick<Cluster, 'patchNodePoolStatus' | 'recordEvent'>;
  readonly logger: Logger;
}

/** A NodeClaim the lifecycle deleted because it timed out. */
export interface TimedOutNodeClaim {
  readonly claim: ClusterNodeClaim;
  readonly reason: DeleteReason;
  readonly message: string;
}

export interface LaunchBackoffScan {
  readonly pools: readonly ClusterNodePool[];
  readonly claims: readonly ClusterNodeClaim[];
  /**
   * The Nodes with their pods, or how to read them. They are looked at only to judge unexpected
   * taints (with `pendingPods`) and whether a NodePool that counts failures recovered (a NodeClaim
   * it made since has initialized): a read is made only then, once, so that a pass with neither
   * reads no pods.
   */
  readonly nodes: readonly ClusterNode[] | (() => Promise<readonly ClusterNode[]>);
  /** Pods waiting for capacity; without them unexpected taints are not judged. */
  readonly pendingPods?: readonly Pod[];
  readonly timedOut?: readonly TimedOutNodeClaim[];
  readonly nowMs: number;
}

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

/**
 * Decides and applies the guard for every NodePool not being deleted.
 * @returns the NodePools whose launches are paused now, and those that launch one probe a run.
 * @throws ClusterApiError from the Cluster port (a NodePool deleted meanwhile is skipped).
 */
export async function reconcileLaunchBackoff(
  ports: LaunchBackoffPorts,
  scan: LaunchBackoffScan,
): Promise<LaunchGuard> {
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
    const classified = classifyNodeClaims({
      pool,
      claims: scan.claims,
      // Without pending pods only the NodeClaims' own conditions are judged.
      nodes: scan.pendingPods === undefined ? [] : await nodes(),
      nowMs: scan.nowMs,
      ...(scan.pendingPods === undefined ? {} : { pendingPods: scan.pendingPods }),
    });
    const failures = [
      ...classified.failures,
      ...(scan.timedOut ?? []).filter((t) => t.claim.nodePoolName === name).flatMap(timeoutFailure),
    ];
    const current = pool.conditions.find((c) => c.type === NodePoolConditionType.launchBackoff);
    const counted = readLaunchBackoff(pool.conditions);
    // Only a count of failures is reset by a recovery (decideLaunchBackoff).
    const since = counted !== undefined && counted.failures > 0 ? counted.lastFailedCreatedMs : undefined;
    const recovered =
      since === undefined || !mayHaveRecovered({ pool, claims: scan.claims }, since)
        ? undefined
        : findRecoveredNodeClaim({ pool, claims: scan.claims, nodes: await nodes() }, since);
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
      paused.set(
        name,
        `launches wait until ${new Date(suspect.untilMs).toISOString()} for a taint to go: ${suspect.detail}`,
      );
      continue;
    }
    if (until !== undefined) {
      const reason =
        outcome.kind === 'start' ? outcome.failure.kind : (current?.reason ?? 'NodeClaimsFailing');
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

/** Writes the condition, the Event and the decision line; false when the NodePool is gone. */
async function apply(
  ports: LaunchBackoffPorts,
  pool: ClusterNodePool,
  outcome: Exclude<LaunchBackoffOutcome, { kind: 'unchanged' }>,
): Promise<boolean> {
  const name = pool.pool.name;
  try {
    await ports.cluster.patchNodePoolStatus(name, { conditions: [outcome.condition] });
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  const subject = { kind: 'NodePool', name, uid: pool.uid } as const;
  if (outcome.kind === 'start') {
    const until = new Date(outcome.state.pausedUntilMs).toISOString();
    await ports.cluster.recordEvent({
      subject,
      type: 'Warning',
      reason: 'LaunchBackoff',
      message: `NodePool ${name} launches nothing until ${until}: ${outcome.condition.message}`,
    });
    writeDecision(ports.logger, {
      kind: 'launchBackoff',
      reason: outcome.failure.kind,
      action: 'start',
      nodePool: name,
      failures: outcome.state.failures,
      nodeClaim: outcome.failure.nodeClaim,
      detail: outcome.failure.detail,
      backoffSeconds: Math.round(outcome.backoffMs / 1000),
      pausedUntil: until,
    });
    return true;
  }
  await ports.cluster.recordEvent({
    subject,
    type: 'Normal',
    reason: 'LaunchBackoffEnded',
    message: `NodePool ${name} launches again: ${outcome.condition.message}`,
  });
  writeDecision(ports.logger, {
    kind: 'launchBackoff',
    reason: outcome.why,
    action: 'end',
    nodePool: name,
    failures: outcome.state.failures,
    ...(outcome.nodeClaim === undefined ? {} : { nodeClaim: outcome.nodeClaim }),
  });
  return true;
}
