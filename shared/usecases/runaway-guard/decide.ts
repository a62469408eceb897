import {
  DISRUPTED_TAINT,
  firstUntolerated,
  formatTaint,
  INSTANCE_TYPE_LABEL_KEYS,
  isConditionTrue,
  isEphemeralTaint,
  isReschedulable,
  NodeClaimConditionType,
  NodePoolConditionType,
  nodePoolRequirements,
  type Pod,
  Requirement,
  Requirements,
  type Taint,
  trueSinceMs,
} from '../../core/index.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  Condition,
  ConditionUpdate,
} from '../../ports/cluster.ts';

// The runaway guard, Flotilla's own (Karpenter has none): a NodePool whose new NodeClaims keep
// failing to host the pods they were launched for pauses its launches, 1 min after the first
// failure in a row, then 2, 4, … up to 30 min. A NodeClaim fails when it times out (launch or
// registration, which the lifecycle deletes it for), when it registers but does not initialize
// within INITIALIZATION_TIMEOUT_MS of registering, or when its Node has stayed empty since it
// initialized (or uninitialized since it registered), for UNEXPECTED_TAINT_PERSISTENCE_MS or more,
// under a taint the NodePool did not ask for and that keeps pending pods the pool could host away
// (a rogue controller tainting every new node). The state lives in the NodePool's own
// `LaunchBackoff` status condition (its message ends in the counters, see formatState), so every
// invocation reads it with the NodePool and nothing else can lose it. Pure: the callers read the
// cluster and write the condition.

/** The pause after the first failure in a row; each further failure doubles it. */
export const LAUNCH_BACKOFF_BASE_MS = 60_000;
/** The longest pause. */
export const LAUNCH_BACKOFF_MAX_MS = 30 * 60_000;
/**
 * How long a registered NodeClaim may take to initialize before it counts as failed, from its
 * `Registered` condition's transition. Flotilla's own: Karpenter has no initialization timeout (a
 * NodeClaim that registers but never initializes stays until disruption removes it). Counted from
 * registration, not creation, so a GPU node whose drivers build on first boot is not cut short by
 * its own launch and boot time.
 */
export const INITIALIZATION_TIMEOUT_MS = 15 * 60_000;
/**
 * How long an initialized Node must have stayed empty with an unexpected taint before that taint
 * counts as a failure. Agents that taint nodes for a moment at start (Cilium's
 * `node.cilium.io/agent-not-ready`, Istio CNI, the EBS CSI driver) or while draining them (AWS Node
 * Termination Handler) are not rogue; a taint still there this long after initialization is.
 */
export const UNEXPECTED_TAINT_PERSISTENCE_MS = 2 * 60_000;

/** How long launches pause after `failures` consecutive failed NodeClaims (0 for none). */
export function launchBackoffMs(failures: number): number {
  if (!(failures >= 1)) return 0;
  // 2^25 minutes is far past the cap; clamping the exponent keeps the arithmetic exact.
  return Math.min(LAUNCH_BACKOFF_MAX_MS, LAUNCH_BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 25));
}

/** Why a NodeClaim counts as failed; also the condition's reason while launches pause for it. */
export type FailureKind =
  | 'LaunchTimeout'
  | 'RegistrationTimeout'
  | 'InitializationTimeout'
  | 'UnexpectedTaint';

/** One NodeClaim that failed to host the pods it was launched for. */
export interface NodeClaimFailure {
  readonly kind: FailureKind;
  readonly nodeClaim: string;
  /** The NodeClaim's creation: failures count in launch order, each once. */
  readonly createdAtMs: number;
  /** What happened, in words. */
  readonly detail: string;
}

/** The guard's memory for one NodePool, kept in its `LaunchBackoff` condition. */
export interface LaunchBackoffState {
  /** Failed NodeClaims in a row (0 after a NodeClaim succeeded or the NodePool changed). */
  readonly failures: number;
  /**
   * Creation time of the newest NodeClaim counted as failed: only NodeClaims created later count
   * again, so a failed node that lingers is counted once.
   */
  readonly lastFailedCreatedMs: number;
  /** Launches pause until then (epoch ms); in the past once the pause ended. */
  readonly pausedUntilMs: number;
}

const STATE_PATTERN = /\(failures (\d+), last failed NodeClaim created (\S+), paused until (\S+)\)$/;

/** The counters at the end of the condition's message. */
function formatState(state: LaunchBackoffState): string {
  return `(failures ${state.failures}, last failed NodeClaim created ${new Date(state.lastFailedCreatedMs).toISOString()}, paused until ${new Date(state.pausedUntilMs).toISOString()})`;
}

/**
 * The guard's state from a NodePool's conditions, or undefined when it has none (or the message
 * was edited beyond reading: the guard then starts over, which only shortens the next pause).
 */
export function readLaunchBackoff(conditions: readonly Condition[]): LaunchBackoffState | undefined {
  const condition = conditions.find((c) => c.type === NodePoolConditionType.launchBackoff);
  const match = condition === undefined ? null : STATE_PATTERN.exec(condition.message);
  if (match === null) return undefined;
  const failures = Number(match[1]);
  const lastFailedCreatedMs = Date.parse(match[2] ?? '');
  const pausedUntilMs = Date.parse(match[3] ?? '');
  if (!Number.isSafeInteger(failures) || Number.isNaN(lastFailedCreatedMs) || Number.isNaN(pausedUntilMs)) {
    return undefined;
  }
  return { failures, lastFailedCreatedMs, pausedUntilMs };
}

/** Taint keys Kubernetes itself manages on nodes (cordon, pressure, out-of-service, …). */
const KUBERNETES_TAINT_PREFIX = 'node.kubernetes.io/';

const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;

/**
 * The taints of an initialized Node that keep pods away and that neither its NodePool nor its
 * NodeClaim asked for: not in the template's taints or startupTaints, not a known ephemeral taint,
 * not Karpenter's disrupted taint, not one Kubernetes manages.
 */
export function unexpectedTaints(
  node: Pick<ClusterNode, 'taints'>,
  pool: ClusterNodePool,
  claim?: Pick<ClusterNodeClaim, 'taints' | 'startupTaints'>,
): Taint[] {
  const expected = [
    ...(pool.pool.taints ?? []),
    ...(pool.pool.startupTaints ?? []),
    ...(claim?.taints ?? []),
    ...(claim?.startupTaints ?? []),
    DISRUPTED_TAINT,
  ];
  return (node.taints ?? []).filter(
    (t) =>
      t.effect !== 'PreferNoSchedule' &&
      !isEphemeralTaint(t) &&
      !t.key.startsWith(KUBERNETES_TAINT_PREFIX) &&
      !expected.some((e) => sameTaint(e, t)),
  );
}

export interface FailureInput {
  readonly pool: ClusterNodePool;
  readonly claims: readonly ClusterNodeClaim[];
  /** The Nodes with their pods; classifyNodeClaims reads them only with `pendingPods`. */
  readonly nodes: readonly ClusterNode[];
  /**
   * Pods waiting for capacity. Without them unexpected taints are not judged (only a taint that
   * keeps pending pods away makes the pool launch again and again).
   */
  readonly pendingPods?: readonly Pod[];
  readonly nowMs: number;
}

/**
 * Whether a pod's node selector, required node affinity (any of its terms) and volume topology
 * admit a node of the pool, whose labels are `poolReqs` (nodePoolRequirements): as the scheduler
 * merges them, a key the pool does not mention is absent on its nodes unless the instance type
 * supplies it. A pod whose constraints do not parse is not one the pool could host.
 */
function poolAdmits(poolReqs: Requirements, pod: Pod): boolean {
  const object = `pod "${pod.namespace}/${pod.name}"`;
  const compatible = (reqs: Requirements) =>
    [...reqs.values()].every((r) => {
      if (r.isAny()) return true;
      const n =
        poolReqs.get(r.key) ?? (INSTANCE_TYPE_LABEL_KEYS.has(r.key) ? undefined : Requirement.absent(r.key));
      return n === undefined ? !r.isEmpty() : !n.intersect(r).isEmpty();
    });
  try {
    let base = Requirements.parse(
      Object.entries(pod.nodeSelector ?? {}).map(([key, value]) => ({
        key,
        operator: 'In',
        values: [value],
      })),
      { object, field: 'spec.nodeSelector' },
    );
    for (const v of pod.volumeTopology ?? []) {
      base = base.intersect(Requirements.parse(v.requirements, { object, field: 'volumeTopology' }));
    }
    const terms =
      pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    if (terms === undefined || terms.length === 0) return compatible(base);
    return terms.some((t) =>
      compatible(
        base.intersect(
          Requirements.parse(t.matchExpressions ?? [], {
            object,
            field: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution',
          }),
        ),
      ),
    );
  } catch {
    return false;
  }
}

/**
 * Whether a pod on a node stays there: one the node's unexpected NoExecute taints are evicting
 * (the taint landed just after kube-scheduler bound it) is as good as gone, and a node left with
 * only such pods is as useless as an empty one.
 */
function stays(pod: Pod, unexpected: readonly Taint[]): boolean {
  if (!isReschedulable(pod)) return false;
  const evicting = unexpected.filter((t) => t.effect === 'NoExecute');
  return firstUntolerated(evicting, pod.tolerations ?? []) === undefined;
}

/**
 * The pending pods the pool could host but for taints it did not set: they tolerate its template
 * taints and its requirements and labels admit them. None for a pool whose requirements do not
 * parse (it launches nothing anyway).
 */
function hostablePendingPods(pool: ClusterNodePool, pending: readonly Pod[]): Pod[] {
  let poolReqs: Requirements;
  try {
    poolReqs = nodePoolRequirements(pool.pool);
  } catch {
    return [];
  }
  return pending.filter(
    (p) =>
      firstUntolerated(pool.pool.taints ?? [], p.tolerations ?? [], true) === undefined &&
      poolAdmits(poolReqs, p),
  );
}

/**
 * The pool's NodeClaims that failed, as far as the cluster shows them now:
 * - `InitializationTimeout`: registered, not being deleted, and not initialized
 *   INITIALIZATION_TIMEOUT_MS after the `Registered` condition's transition;
 * - `UnexpectedTaint`: a Node that is empty, has stayed so for UNEXPECTED_TAINT_PERSISTENCE_MS or
 *   more since it initialized (the `Initialized` condition's transition) or since its pods left
 *   (`status.lastPodEventTime`) when they all left within that window of initializing, and carries
 *   an unexpected taint
 *   (unexpectedTaints) that pending pods the pool could host (they tolerate its template taints,
 *   and its labels and requirements admit their node selector, required node affinity and volume
 *   topology) do not tolerate; or a Node registered that long ago, not initialized since, and under
 *   such a taint. A Node counts as empty when its only pods are ones an unexpected NoExecute taint
 *   evicts. NodeClaims and Nodes being deleted, and Nodes carrying `karpenter.sh/disrupted`, are
 *   left out: they are going away for a reason of their own.
 * A condition without a readable transition time counts nothing. Timeouts the lifecycle deletes
 * NodeClaims for are the caller's to add.
 */
export function findNodeClaimFailures(input: FailureInput): NodeClaimFailure[] {
  return classifyNodeClaims(input).failures;
}

/**
 * An empty Node with a taint that would be an `UnexpectedTaint` failure had it lasted the
 * persistence window: the NodePool launches nothing more until the taint goes or the window
 * closes (a taint an agent lifts in seconds costs a short wait, one that stays a failure).
 */
export interface SuspectedTaint {
  readonly nodeClaim: string;
  /** When the window closes (epoch ms). */
  readonly untilMs: number;
  readonly detail: string;
}

/** findNodeClaimFailures, and the Nodes whose unexpected taint is still inside its window. */
export function classifyNodeClaims(input: FailureInput): {
  failures: NodeClaimFailure[];
  suspects: SuspectedTaint[];
} {
  const suspects: SuspectedTaint[] = [];
  const { pool, nowMs } = input;
  const name = pool.pool.name;
  const byName = new Map(input.nodes.map((n) => [n.name, n]));
  const byProvider = new Map(
    input.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
  );
  let hostable: Pod[] | undefined;
  const failures: NodeClaimFailure[] = [];
  for (const claim of input.claims) {
    if (claim.nodePoolName !== name || claim.createdAtMs === undefined) continue;
    const conditions = claim.status.conditions;
    const emptied = conditions.some(
      (c) =>
        c.type === NodeClaimConditionType.disruptionReason && c.status === 'True' && c.reason === 'Empty',
    );
    if (claim.deleting && !emptied) continue;
    if (!isConditionTrue(conditions, NodeClaimConditionType.initialized)) {
      const registeredAtMs = trueSinceMs(conditions, NodeClaimConditionType.registered);
      const timedOut =
        !claim.deleting &&
        registeredAtMs !== undefined &&
        nowMs - registeredAtMs >= INITIALIZATION_TIMEOUT_MS;
      if (timedOut) {
        failures.push({
          kind: 'InitializationTimeout',
          nodeClaim: claim.name,
          createdAtMs: claim.createdAtMs,
          detail: `nodeClaim "${claim.name}" registered at ${iso(registeredAtMs)} but did not initialize within ${INITIALIZATION_TIMEOUT_MS / 60_000}m`,
        });
      }
      // Registered, not initialized yet, and already under a taint the pool did not set that
      // repels its pods: launch nothing more while that is so. Once it has lasted the window (a
      // node that never initializes keeps it for good), the NodeClaim failed.
      const joined =
        (claim.status.nodeName === undefined ? undefined : byName.get(claim.status.nodeName)) ??
        (claim.status.providerId === undefined ? undefined : byProvider.get(claim.status.providerId));
      if (
        !claim.deleting &&
        registeredAtMs !== undefined &&
        !timedOut &&
        joined !== undefined &&
        input.pendingPods !== undefined
      ) {
        const unexpected = unexpectedTaints(joined, pool, claim);
        hostable ??= hostablePendingPods(pool, input.pendingPods);
        const repelled = hostable.filter(
          (p) => firstUntolerated(unexpected, p.tolerations ?? [], true) !== undefined,
        );
        if (unexpected.length > 0 && repelled.length > 0 && !joined.pods.some((p) => stays(p, unexpected))) {
          const untilMs = registeredAtMs + UNEXPECTED_TAINT_PERSISTENCE_MS;
          const taints = unexpected.map(formatTaint).join(', ');
          if (nowMs < untilMs) {
            suspects.push({
              nodeClaim: claim.name,
              untilMs,
              detail: `Node ${joined.name} joined with taint ${taints}, which the NodePool does not set and ${repelled.length} pending pod(s) do not tolerate`,
            });
          } else {
            failures.push({
              kind: 'UnexpectedTaint',
              nodeClaim: claim.name,
              createdAtMs: claim.createdAtMs,
              detail: `nodeClaim "${claim.name}": Node ${joined.name} registered at ${iso(registeredAtMs)} and has not initialized since, with taint ${taints}, which the NodePool does not set, and ${repelled.length} pending pod(s) the NodePool could host do not tolerate it`,
            });
          }
        }
      }
      continue;
    }
    if (input.pendingPods === undefined) continue;
    const initializedAtMs = trueSinceMs(conditions, NodeClaimConditionType.initialized);
    if (initializedAtMs === undefined) continue;
    // Pods came (and maybe went) since it initialized. The node worked, unless they all went again
    // within the persistence window: a taint that lands a moment after the node joins (a rogue
    // controller racing kube-scheduler) evicts the pods bound in between, and the node is then as
    // useless as one tainted before any pod came. Such a node is judged from its last pod event.
    const lastPodEventMs = claim.status.lastPodEventMs;
    const hosted = lastPodEventMs !== undefined && lastPodEventMs > initializedAtMs;
    if (hosted && lastPodEventMs - initializedAtMs >= UNEXPECTED_TAINT_PERSISTENCE_MS) continue;
    const emptySinceMs = hosted ? lastPodEventMs : initializedAtMs;
    const node =
      (claim.status.nodeName === undefined ? undefined : byName.get(claim.status.nodeName)) ??
      (claim.status.providerId === undefined ? undefined : byProvider.get(claim.status.providerId));
    if (node === undefined) continue;
    const unexpected = unexpectedTaints(node, pool, claim);
    if (node.pods.some((p) => stays(p, unexpected))) continue;
    // Pods still there that the taint is evicting: the node worked if they had been there the
    // whole window (the taint came late), and is judged as empty if they came just before it.
    if (
      hosted &&
      node.pods.some(isReschedulable) &&
      nowMs - lastPodEventMs >= UNEXPECTED_TAINT_PERSISTENCE_MS
    ) {
      continue;
    }
    // A node reclaimed as empty while still under the taint was given up without ever hosting the
    // pods it was launched for: that is the loop itself, however soon emptiness came (with the
    // default consolidateAfter of 0s it comes well within the persistence window). Any other node
    // must have kept the taint, empty, for the whole window, and not be on its way out.
    let early = false;
    if (!emptied) {
      if (node.deleting) continue;
      if ((node.taints ?? []).some((t) => sameTaint(t, DISRUPTED_TAINT))) continue;
      early = nowMs - emptySinceMs < UNEXPECTED_TAINT_PERSISTENCE_MS;
    }
    if (unexpected.length === 0) continue;
    hostable ??= hostablePendingPods(pool, input.pendingPods);
    const repelled = hostable.filter(
      (p) => firstUntolerated(unexpected, p.tolerations ?? [], true) !== undefined,
    );
    if (repelled.length === 0) continue;
    if (early) {
      suspects.push({
        nodeClaim: claim.name,
        untilMs: emptySinceMs + UNEXPECTED_TAINT_PERSISTENCE_MS,
        detail: `Node ${node.name} has taint ${unexpected.map(formatTaint).join(', ')}, which the NodePool does not set and ${repelled.length} pending pod(s) do not tolerate`,
      });
      continue;
    }
    failures.push({
      kind: 'UnexpectedTaint',
      nodeClaim: claim.name,
      createdAtMs: claim.createdAtMs,
      detail: `nodeClaim "${claim.name}": Node ${node.name} ${emptied ? 'was reclaimed as empty' : 'has stayed empty'} since ${hosted ? `its pods left at ${iso(emptySinceMs)}, soon after it initialized at ${iso(initializedAtMs)}` : `it initialized at ${iso(initializedAtMs)}`}, with taint ${unexpected.map(formatTaint).join(', ')}, which the NodePool does not set, and ${repelled.length} pending pod(s) the NodePool could host do not tolerate it`,
    });
  }
  return { failures, suspects };
}

/**
 * The newest NodeClaim of the pool, created at or after `sinceMs`, that initialized and hosts pods
 * other than DaemonSet and mirror pods, under no taint the NodePool did not set: proof the pool
 * works again.
 */
export function findRecoveredNodeClaim(
  input: Pick<FailureInput, 'pool' | 'claims' | 'nodes'>,
  sinceMs: number,
): string | undefined {
  const name = input.pool.pool.name;
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const byProvider = new Map(
    input.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
  );
  let best: ClusterNodeClaim | undefined;
  for (const claim of input.claims) {
    if (!mayShowRecovery(claim, name, sinceMs)) continue;
    const node =
      (claim.status.nodeName === undefined ? undefined : nodes.get(claim.status.nodeName)) ??
      (claim.status.providerId === undefined ? undefined : byProvider.get(claim.status.providerId));
    if (node === undefined || !node.pods.some(isReschedulable)) continue;
    // A node under a taint its NodePool did not set proves nothing: a NoExecute one is about to
    // evict the pods that came before it.
    if (unexpectedTaints(node, input.pool, claim).length > 0) continue;
    if (best === undefined || (claim.createdAtMs ?? 0) > (best.createdAtMs ?? 0)) best = claim;
  }
  return best?.name;
}

/**
 * Whether a NodeClaim of the pool, created at or after `sinceMs`, may prove the pool works again
 * (findRecoveredNodeClaim then looks at its Node and pods): alive and initialized.
 */
function mayShowRecovery(claim: ClusterNodeClaim, poolName: string, sinceMs: number): boolean {
  return (
    claim.nodePoolName === poolName &&
    !claim.deleting &&
    (claim.createdAtMs ?? -1) >= sinceMs &&
    isConditionTrue(claim.status.conditions, NodeClaimConditionType.initialized)
  );
}

/**
 * Whether findRecoveredNodeClaim may find a NodeClaim, judging by the NodeClaims alone: callers
 * read the Nodes' pods only when it may.
 */
export function mayHaveRecovered(input: Pick<FailureInput, 'pool' | 'claims'>, sinceMs: number): boolean {
  return input.claims.some((c) => mayShowRecovery(c, input.pool.pool.name, sinceMs));
}

/** Why a pause ended. */
export type BackoffEnd = 'expired' | 'recovered' | 'nodePoolChanged';

/** What the guard decided for one NodePool. */
export type LaunchBackoffOutcome =
  | {
      /** Nothing to write: the condition already says it. */
      readonly kind: 'unchanged';
      readonly state: LaunchBackoffState | undefined;
    }
  | {
      /** A new failure: launches pause (again, or longer). */
      readonly kind: 'start';
      readonly state: LaunchBackoffState;
      readonly failure: NodeClaimFailure;
      readonly backoffMs: number;
      readonly condition: ConditionUpdate;
    }
  | {
      /** Launches resume: the pause ran out, or the counters reset. */
      readonly kind: 'end';
      readonly why: BackoffEnd;
      readonly state: LaunchBackoffState;
      /** The NodeClaim that proved the pool works, when `recovered`. */
      readonly nodeClaim?: string;
      readonly condition: ConditionUpdate;
    };

export interface LaunchBackoffInput {
  readonly pool: ClusterNodePool;
  /** Failed NodeClaims seen now (findNodeClaimFailures plus the caller's timeouts), any order. */
  readonly failures: readonly NodeClaimFailure[];
  /** A NodeClaim that initialized with pods since the last failure (findRecoveredNodeClaim). */
  readonly recovered?: string;
  readonly nowMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** `90s`, `4m`, `30m`. */
function formatDuration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/**
 * The guard's decision for one NodePool, from its `LaunchBackoff` condition and what the cluster
 * shows now. In order: a change of the NodePool's spec (its generation differs from the
 * condition's observedGeneration) resets the count; a failure of a NodeClaim created after the last
 * one counted starts a pause of launchBackoffMs(count + 1) from now; else a NodeClaim that
 * initialized with pods resets the count; else a pause whose time is up ends (the count stays, so
 * the next failure pauses longer).
 */
export function decideLaunchBackoff(input: LaunchBackoffInput): LaunchBackoffOutcome {
  const { pool, nowMs } = input;
  const condition = pool.conditions.find((c) => c.type === NodePoolConditionType.launchBackoff);
  const previous = readLaunchBackoff(pool.conditions);
  const paused = condition?.status === 'True';
  const changed =
    previous !== undefined &&
    previous.failures > 0 &&
    condition?.observedGeneration !== undefined &&
    pool.generation !== undefined &&
    condition.observedGeneration !== pool.generation;
  const counted = changed ? 0 : (previous?.failures ?? 0);
  const since = previous?.lastFailedCreatedMs ?? Number.NEGATIVE_INFINITY;

  const fresh = input.failures.filter((f) => f.createdAtMs > since);
  const newest = fresh.reduce<NodeClaimFailure | undefined>(
    (a, f) => (a === undefined || f.createdAtMs > a.createdAtMs ? f : a),
    undefined,
  );
  if (newest !== undefined) {
    // Failures seen together (NodeClaims of one decision) count once.
    const failures = counted + 1;
    const backoffMs = launchBackoffMs(failures);
    const state = { failures, lastFailedCreatedMs: newest.createdAtMs, pausedUntilMs: nowMs + backoffMs };
    const more = fresh.length > 1 ? ` (and ${fresh.length - 1} more NodeClaim(s))` : '';
    return {
      kind: 'start',
      state,
      failure: newest,
      backoffMs,
      condition: {
        type: NodePoolConditionType.launchBackoff,
        status: 'True',
        reason: newest.kind,
        message: `launches paused for ${formatDuration(backoffMs)} after ${failures} failed NodeClaim(s) in a row; last: ${newest.detail}${more} ${formatState(state)}`,
      },
    };
  }
  if (previous === undefined) return { kind: 'unchanged', state: undefined };

  const ended = (why: BackoffEnd, state: LaunchBackoffState, message: string, nodeClaim?: string) =>
    ({
      kind: 'end',
      why,
      state,
      ...(nodeClaim === undefined ? {} : { nodeClaim }),
      condition: {
        type: NodePoolConditionType.launchBackoff,
        status: 'False',
        reason:
          why === 'expired'
            ? 'BackoffExpired'
            : why === 'recovered'
              ? 'NodeClaimInitialized'
              : 'NodePoolChanged',
        message: `${message} ${formatState(state)}`,
      },
    }) as const;
  const reset = { ...previous, failures: 0, pausedUntilMs: Math.min(previous.pausedUntilMs, nowMs) };
  if (changed) {
    return ended('nodePoolChanged', reset, 'launches resume: the NodePool changed, failures count from 0');
  }
  if (input.recovered !== undefined && previous.failures > 0) {
    return ended(
      'recovered',
      reset,
      `launches resume: nodeClaim "${input.recovered}" initialized and hosts pods, failures count from 0`,
      input.recovered,
    );
  }
  if (paused && nowMs >= previous.pausedUntilMs) {
    return ended(
      'expired',
      previous,
      `launches resume at ${iso(previous.pausedUntilMs)}; after ${previous.failures} failed NodeClaim(s) in a row the next failure pauses them for ${formatDuration(launchBackoffMs(previous.failures + 1))}`,
    );
  }
  return { kind: 'unchanged', state: previous };
}

/** Until when a NodePool's launches pause at `nowMs` (from its condition), or undefined. */
export function launchPausedUntil(state: LaunchBackoffState | undefined, nowMs: number): number | undefined {
  return state !== undefined && state.failures > 0 && state.pausedUntilMs > nowMs
    ? state.pausedUntilMs
    : undefined;
}
