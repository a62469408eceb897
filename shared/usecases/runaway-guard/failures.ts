import {
  DISRUPTED_TAINT,
  firstUntolerated,
  formatTaint,
  isConditionTrue,
  isReschedulable,
  NodeClaimConditionType,
  type Pod,
  trueSinceMs,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { hostablePendingPods, sameTaint, stays, unexpectedTaints } from './taints.ts';

// Which of a NodePool's NodeClaims failed to host the pods they were launched for, as far as the
// cluster shows it now, and which one proves the pool works again. Pure: the callers read the
// cluster (launch-backoff.ts).

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

const iso = (ms: number) => new Date(ms).toISOString();

/** What classifyNodeClaims judges, for one NodePool. */
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
 *   evicts. NodeClaims and Nodes being deleted, and Nodes carrying `karpenter.sh/disrupted`, never
 *   count as failed: they are going away for a reason of their own (a disrupted Node still inside
 *   the window is a suspect).
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
  /**
   * The window closed while the NodeClaim has not registered: it stays a suspect (never a failure
   * before it registers) until it registers or the registration timeout deletes it.
   */
  readonly untilRegistered?: true;
  readonly detail: string;
}

/** What a NodePool held by a suspect taint waits for, in words (pods' Events, decision lines). */
export function suspectWait(suspect: SuspectedTaint): string {
  const until = suspect.untilRegistered
    ? `nodeClaim ${suspect.nodeClaim} to register`
    : `${new Date(suspect.untilMs).toISOString()}`;
  return `launches wait until ${until} for a taint to go: ${suspect.detail}`;
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
      // Joined (registered, or its Node is there before the lifecycle has registered it), not
      // initialized yet, and already under a taint the pool did not set that repels its pods:
      // launch nothing more while that is so. Once a registered one has kept it for the window (a
      // node that never initializes keeps it for good), the NodeClaim failed.
      const joined =
        (claim.status.nodeName === undefined ? undefined : byName.get(claim.status.nodeName)) ??
        (claim.status.providerId === undefined ? undefined : byProvider.get(claim.status.providerId));
      if (!claim.deleting && !timedOut && joined !== undefined && input.pendingPods !== undefined) {
        const unexpected = unexpectedTaints(joined, pool, claim);
        hostable ??= hostablePendingPods(pool, input.pendingPods);
        const repelled = hostable.filter(
          (p) => firstUntolerated(unexpected, p.tolerations ?? [], true) !== undefined,
        );
        if (unexpected.length > 0 && repelled.length > 0 && !joined.pods.some((p) => stays(p, unexpected))) {
          const joinedAtMs = registeredAtMs ?? joined.createdAtMs ?? nowMs;
          const untilMs = joinedAtMs + UNEXPECTED_TAINT_PERSISTENCE_MS;
          const taints = unexpected.map(formatTaint).join(', ');
          if (nowMs < untilMs || registeredAtMs === undefined) {
            suspects.push({
              nodeClaim: claim.name,
              untilMs,
              ...(registeredAtMs === undefined && nowMs >= untilMs ? { untilRegistered: true as const } : {}),
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
      early = nowMs - emptySinceMs < UNEXPECTED_TAINT_PERSISTENCE_MS;
      // Being disrupted, it goes for a reason of its own and never counts as failed. While inside
      // the window it still holds launches, as any suspect does: disruption taints the Node a
      // moment before its NodeClaim says why, and a run that read the two in between would
      // otherwise launch for the pods it repels.
      if (!early && (node.taints ?? []).some((t) => sameTaint(t, DISRUPTED_TAINT))) continue;
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
 * The newest NodeClaim of the pool, created at or after `sinceMs`, that initialized at least
 * UNEXPECTED_TAINT_PERSISTENCE_MS before `nowMs` and hosts pods other than DaemonSet and mirror
 * pods, under no taint the NodePool did not set: proof the pool works again. A node younger than
 * that may still turn out a failure (a taint that lands seconds after its first pods were bound
 * evicts them), so it proves nothing yet.
 */
export function findRecoveredNodeClaim(
  input: Pick<FailureInput, 'pool' | 'claims' | 'nodes'>,
  sinceMs: number,
  nowMs: number,
): string | undefined {
  const name = input.pool.pool.name;
  const nodes = new Map(input.nodes.map((n) => [n.name, n]));
  const byProvider = new Map(
    input.nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
  );
  let best: ClusterNodeClaim | undefined;
  for (const claim of input.claims) {
    if (!mayShowRecovery(claim, name, sinceMs, nowMs)) continue;
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
 * (findRecoveredNodeClaim then looks at its Node and pods): alive, and initialized at least
 * UNEXPECTED_TAINT_PERSISTENCE_MS before `nowMs`.
 */
function mayShowRecovery(claim: ClusterNodeClaim, poolName: string, sinceMs: number, nowMs: number): boolean {
  const initializedAtMs = trueSinceMs(claim.status.conditions, NodeClaimConditionType.initialized);
  return (
    claim.nodePoolName === poolName &&
    !claim.deleting &&
    (claim.createdAtMs ?? -1) >= sinceMs &&
    initializedAtMs !== undefined &&
    nowMs - initializedAtMs >= UNEXPECTED_TAINT_PERSISTENCE_MS
  );
}

/**
 * Whether findRecoveredNodeClaim may find a NodeClaim, judging by the NodeClaims alone: callers
 * read the Nodes' pods only when it may.
 */
export function mayHaveRecovered(
  input: Pick<FailureInput, 'pool' | 'claims'>,
  sinceMs: number,
  nowMs: number,
): boolean {
  return input.claims.some((c) => mayShowRecovery(c, input.pool.pool.name, sinceMs, nowMs));
}
