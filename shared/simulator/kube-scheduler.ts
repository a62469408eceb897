import {
  computePodRequests,
  type ExistingNode,
  type Pod,
  Resource,
  type ResourceList,
  resourceFitScore,
  scoredRequests,
  solve,
} from '../core/index.ts';
import type { ScoringStrategy } from './scenario-types.ts';

// kube-scheduler's choice of node, where it differs from Flotilla's packing. Flotilla plans new
// nodes by packing pods tight; kube-scheduler binds each pending pod, one at a time in queue order
// (priority, then creation), to the feasible node its scoring ranks first. Feasibility (requests,
// node selectors and affinity, taints, topology spread, pod affinity and anti-affinity, host
// ports) is the same scheduling simulation Flotilla plans with, over the existing nodes. The score
// is NodeResourcesFit's: LeastAllocated (kube-scheduler's default) prefers the node with the most
// cpu and memory left after the pod, which spreads pods out; MostAllocated prefers the fullest,
// which packs them. Ties go to the node whose name sorts first (kube-scheduler picks at random).

/** A pod's cpu and memory as NodeResourcesFit scores them (its non-zero requests). */
function podScoredRequests(pod: Pod): { cpu: number; memory: number } {
  const requests: ResourceList = computePodRequests(pod);
  return scoredRequests(requests[Resource.cpu] ?? 0, requests[Resource.memory] ?? 0);
}

/** NodeResourcesFit's score of `node` for `pod`, 0–100, cpu and memory weighted alike. */
export function nodeScore(strategy: ScoringStrategy, node: ExistingNode, pod: Pod): number {
  const wanted = podScoredRequests(pod);
  const used = { cpu: wanted.cpu, memory: wanted.memory };
  for (const p of node.pods) {
    const r = podScoredRequests(p);
    used.cpu += r.cpu;
    used.memory += r.memory;
  }
  return resourceFitScore(strategy, used, {
    cpu: node.allocatable[Resource.cpu] ?? 0,
    memory: node.allocatable[Resource.memory] ?? 0,
  });
}

/**
 * The node kube-scheduler binds `pod` to among `nodes`, or undefined when none is feasible. The
 * nodes go to the scheduling simulation ranked by score; it takes the first feasible one.
 */
export function chooseNode(
  strategy: ScoringStrategy,
  pod: Pod,
  nodes: readonly ExistingNode[],
  nowMs: number,
): string | undefined {
  // A pod that names its node (a DaemonSet's, by matchFields) keeps the names it selects on.
  const namesNodes = (
    pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []
  ).some((t) => (t.matchFields ?? []).length > 0);
  const ranked = nodes
    .map((node) => ({ node, score: nodeScore(strategy, node, pod) }))
    .sort(
      (a, b) => b.score - a.score || (a.node.name < b.node.name ? -1 : a.node.name > b.node.name ? 1 : 0),
    );
  // The simulation tries nodes in name order: the rank becomes the name, and back again.
  const width = String(ranked.length).length;
  const byAlias = new Map<string, string>();
  const aliased = ranked.map(({ node }, i) => {
    if (namesNodes) {
      byAlias.set(node.name, node.name);
      return node;
    }
    const alias = `${String(i).padStart(width, '0')}`;
    byAlias.set(alias, node.name);
    return { ...node, name: alias };
  });
  const result = solve({
    pods: [pod],
    nodePools: [],
    instanceTypes: new Map(),
    nodes: aliased,
    nowMs,
    options: { repack: false },
  });
  const placement = result.placements.find((p) => p.kind === 'existingNode');
  return placement?.kind === 'existingNode' ? byAlias.get(placement.nodeName) : undefined;
}
