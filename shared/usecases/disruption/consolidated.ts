import { createHash } from 'node:crypto';
import type { Pod } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import type { ClusterState } from '../state/cluster-state.ts';
import { UNCONSOLIDATABLE_ANNOTATION } from './unconsolidatable.ts';

// Karpenter's "consolidated" memo. A consolidation method that looked at all its candidates and
// found nothing, with none held back by a budget, is not asked again while the cluster's state
// stays the same; the state counts as new five minutes after it last changed, and every five
// minutes after that (what no object shows: prices, capacity coming back). A quiet cluster's passes
// then cost a read and a comparison, not a simulation per candidate. Karpenter learns of a change
// from its informers; a pass compares what it read: the Nodes (labels, taints, allocatable, state)
// and their pods, the pending pods, the NodeClaims as the pass sees them (conditions, labels, and
// annotations but the reason Flotilla itself writes there), the NodePools, the PodDisruptionBudgets,
// the DaemonSets and NodeOverlays; per method, the candidates it accepts and what the budgets allow
// now. Not compared, as in Karpenter: EC2NodeClasses, namespace labels, a pod's labels or resized
// requests; those are seen within five minutes. The memo lives as long as its container: a cold
// start looks again.

/** How long a state counts as unchanged before the methods look again (Karpenter's 5 minutes). */
export const CONSOLIDATED_TTL_MS = 5 * 60_000;

/** The cluster's state as a pass read it: its digest and the five-minute epoch it is in. */
export interface ConsolidationState {
  readonly digest: string;
  readonly epochMs: number;
}

/** The last look of each consolidation method that found nothing, by method name. */
export interface ConsolidationMemo {
  /** The state of a read (`consolidationStateKey`), remembered as the cluster's latest. */
  state(key: string, nowMs: number): ConsolidationState;
  /** Whether `method` found nothing in this state and epoch, with the same candidates and budgets (`look`). */
  isConsolidated(method: string, look: string, state: ConsolidationState): boolean;
  /** Records that `method` looked at every candidate of `look` and found nothing. */
  markConsolidated(method: string, look: string, state: ConsolidationState): void;
}

export function makeConsolidationMemo(ttlMs = CONSOLIDATED_TTL_MS): ConsolidationMemo {
  let current: { digest: string; sinceMs: number } | undefined;
  const looks = new Map<string, string>();
  const entry = (look: string, state: ConsolidationState) => `${state.digest} ${state.epochMs}\n${look}`;
  return {
    state(key, nowMs) {
      const digest = createHash('sha256').update(key).digest('hex');
      // A new state, or a clock that went back: the state counts from now.
      if (current === undefined || current.digest !== digest || nowMs < current.sinceMs)
        current = { digest, sinceMs: nowMs };
      const epochs = Math.floor((nowMs - current.sinceMs) / ttlMs);
      return { digest, epochMs: current.sinceMs + epochs * ttlMs };
    },
    isConsolidated: (method, look, state) => looks.get(method) === entry(look, state),
    markConsolidated(method, look, state) {
      looks.set(method, entry(look, state));
    },
  };
}

const podKey = (pod: Pod) => {
  const d = pod.disruption;
  return d === undefined
    ? pod.uid
    : `${pod.uid} ${d.deletedAtMs === undefined ? '' : 'd'}${d.notReady === true ? 'n' : ''}${d.finished === true ? 'f' : ''} ${d.doNotDisrupt ?? ''}`;
};

const sortedJson = (value: Readonly<Record<string, unknown>>) =>
  JSON.stringify(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)));

/** What a consolidation method's look depends on in the pass's read (see the file's comment). */
export function consolidationStateKey(read: {
  readonly state: ClusterState;
  readonly claims: readonly ClusterNodeClaim[];
}): string {
  const parts: string[] = [];
  for (const node of read.state.nodes) {
    const taints = (node.taints ?? []).map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`).join(',');
    const flags = `${node.unschedulable === true ? 'u' : ''}${node.deleting ? 'd' : ''}${node.initialized ? 'i' : ''}${node.ready ? 'r' : ''}`;
    parts.push(
      `N ${node.name} ${flags} ${taints} ${node.unreadablePods?.length ?? 0} ${sortedJson(node.allocatable)} ${sortedJson(node.labels)}`,
    );
    for (const pod of node.pods) parts.push(podKey(pod));
  }
  for (const pod of read.state.pendingPods) parts.push(`P ${podKey(pod)}`);
  for (const claim of read.claims) {
    const conditions = claim.status.conditions.map((c) => `${c.type}=${c.status}`).join(',');
    const { [UNCONSOLIDATABLE_ANNOTATION]: _told, ...annotations } = claim.annotations;
    parts.push(
      `C ${claim.name} ${claim.deleting ? 'd' : ''} ${claim.status.nodeName ?? ''} ${conditions} ${sortedJson(claim.labels)} ${sortedJson(annotations)}`,
    );
  }
  for (const pool of read.state.nodePools) parts.push(`T ${JSON.stringify(pool)}`);
  for (const budget of read.state.podDisruptionBudgets ?? []) parts.push(`B ${JSON.stringify(budget)}`);
  for (const daemonSet of read.state.daemonSets) parts.push(`D ${JSON.stringify(daemonSet)}`);
  for (const overlay of read.state.nodeOverlays ?? []) parts.push(`O ${JSON.stringify(overlay)}`);
  return parts.join('\n');
}
