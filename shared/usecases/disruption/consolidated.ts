import { createHash } from 'node:crypto';
import type { Pod } from '../../core/index.ts';
import type { ClusterNodeClaim } from '../../ports/cluster.ts';
import type { ClusterState } from '../state/cluster-state.ts';

// Karpenter's "consolidated" memo: a consolidation method that looked at the cluster and found
// nothing to do, with no candidate held back by a budget, is not asked again until the cluster
// changes or five minutes pass (the minutes cover what no object shows: prices, capacity). A quiet
// cluster's passes then cost a read and a comparison, not a simulation per candidate. Karpenter
// learns of a change from its informers; a pass here compares what it read: the Nodes and their
// pods, the pending pods, the NodeClaims as the pass sees them (conditions, labels, annotations),
// the NodePools and the PodDisruptionBudgets, and, per method, the candidates it accepts and what
// the budgets allow now. The memo lives as long as its container: a cold start looks again.

/** How long a method's look that found nothing stands while nothing changes (Karpenter's 5 minutes). */
export const CONSOLIDATED_TTL_MS = 5 * 60_000;

/** The last look of each consolidation method that found nothing, by method name. */
export interface ConsolidationMemo {
  /** Whether `method` found nothing in the same state (key) less than the TTL ago. */
  isConsolidated(method: string, key: string, nowMs: number): boolean;
  /** Records that `method` found nothing in this state (key) at `nowMs`. */
  markConsolidated(method: string, key: string, nowMs: number): void;
}

export function makeConsolidationMemo(ttlMs = CONSOLIDATED_TTL_MS): ConsolidationMemo {
  const looks = new Map<string, { readonly digest: string; readonly atMs: number }>();
  return {
    isConsolidated(method, key, nowMs) {
      const look = looks.get(method);
      return (
        look !== undefined && nowMs - look.atMs < ttlMs && nowMs >= look.atMs && look.digest === digest(key)
      );
    },
    markConsolidated(method, key, nowMs) {
      looks.set(method, { digest: digest(key), atMs: nowMs });
    },
  };
}

const digest = (key: string) => createHash('sha256').update(key).digest('hex');

const podKey = (pod: Pod) => {
  const d = pod.disruption;
  return d === undefined
    ? pod.uid
    : `${pod.uid} ${d.deletedAtMs === undefined ? '' : 'd'}${d.notReady === true ? 'n' : ''}${d.finished === true ? 'f' : ''} ${d.doNotDisrupt ?? ''}`;
};

const sortedJson = (value: Readonly<Record<string, string>>) =>
  JSON.stringify(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)));

/** What a consolidation method's look depends on in the pass's read (see the file's comment). */
export function consolidationStateKey(read: {
  readonly state: ClusterState;
  readonly claims: readonly ClusterNodeClaim[];
}): string {
  const parts: string[] = [];
  for (const node of read.state.nodes) {
    const taints = (node.taints ?? []).map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`).join(',');
    parts.push(
      `N ${node.name} ${node.unschedulable === true ? 'u' : ''}${node.deleting ? 'd' : ''}${node.initialized ? 'i' : ''}${node.ready ? 'r' : ''} ${taints} ${node.unreadablePods?.length ?? 0} ${sortedJson(node.labels)}`,
    );
    for (const pod of node.pods) parts.push(podKey(pod));
  }
  for (const pod of read.state.pendingPods) parts.push(`P ${podKey(pod)}`);
  for (const claim of read.claims) {
    const conditions = claim.status.conditions.map((c) => `${c.type}=${c.status}`).join(',');
    parts.push(
      `C ${claim.name} ${claim.deleting ? 'd' : ''} ${claim.status.nodeName ?? ''} ${conditions} ${sortedJson(claim.labels)} ${sortedJson(claim.annotations)}`,
    );
  }
  for (const pool of read.state.nodePools) parts.push(`T ${JSON.stringify(pool)}`);
  for (const budget of read.state.podDisruptionBudgets ?? []) parts.push(`B ${JSON.stringify(budget)}`);
  return parts.join('\n');
}
