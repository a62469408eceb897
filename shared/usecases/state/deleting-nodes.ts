import { needsPlaceOffDeletingNode, type Pod } from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';

// The pods of nodes being deleted, as the provisioner plans for them (Karpenter's provisioner
// schedules the reschedulable pods of deleting nodes together with the pending ones): their
// replacements start launching when the deletion begins, while the drain still waits. Pure.

/** The pods that need a place off nodes being deleted, and the nodes without them. */
export interface DeletingNodePods<N extends ClusterNode> {
  /** Pods to schedule with the pending ones, in node order. */
  readonly pods: readonly Pod[];
  /** Every node; a deleting node no longer counts the pods taken out (they do not use its room). */
  readonly nodes: readonly N[];
  /** Names of the nodes being deleted that had such pods. */
  readonly deletingNodes: readonly string[];
}

/**
 * Whether the node is going away: it has a deletionTimestamp, or the NodeClaim it belongs to (by
 * providerID, else by `status.nodeName`) has one. A `karpenter.sh/disrupted` taint alone is not
 * deletion: a disruption command taints its candidates when it launches their replacements, which
 * must not be launched a second time for the same pods.
 */
export function isDeletingNode(
  node: Pick<ClusterNode, 'name' | 'providerId' | 'deleting'>,
  claimOf: (node: Pick<ClusterNode, 'name' | 'providerId'>) => ClusterNodeClaim | undefined,
): boolean {
  return node.deleting || claimOf(node)?.deleting === true;
}

/** Looks up a node's NodeClaim by providerID, else by the claim's `status.nodeName`. */
export function nodeClaimLookup(
  claims: readonly ClusterNodeClaim[],
): (node: Pick<ClusterNode, 'name' | 'providerId'>) => ClusterNodeClaim | undefined {
  const byProvider = new Map<string, ClusterNodeClaim>();
  const byNodeName = new Map<string, ClusterNodeClaim>();
  for (const claim of claims) {
    if (claim.status.providerId !== undefined) byProvider.set(claim.status.providerId, claim);
    if (claim.status.nodeName !== undefined) byNodeName.set(claim.status.nodeName, claim);
  }
  return (node) =>
    (node.providerId === undefined ? undefined : byProvider.get(node.providerId)) ??
    byNodeName.get(node.name);
}

/**
 * Takes the pods that need a place (needsPlaceOffDeletingNode) off every node being deleted. A pod
 * that could not be read is not planned for here: it is planned for once it is pending.
 */
export function takeDeletingNodePods<N extends ClusterNode>(
  nodes: readonly N[],
  claims: readonly ClusterNodeClaim[],
): DeletingNodePods<N> {
  const claimOf = nodeClaimLookup(claims);
  const pods: Pod[] = [];
  const deletingNodes: string[] = [];
  const out = nodes.map((node) => {
    if (!isDeletingNode(node, claimOf)) return node;
    const moving = node.pods.filter(needsPlaceOffDeletingNode);
    if (moving.length === 0) return node;
    pods.push(...moving);
    deletingNodes.push(node.name);
    const moved = new Set(moving);
    return { ...node, pods: node.pods.filter((p) => !moved.has(p)) };
  });
  return { pods, nodes: out, deletingNodes };
}

/**
 * Whether any Node is being deleted, or belongs to a NodeClaim that is: the cheap check of a run
 * that found no pending pod (Nodes without their pods; both lists from the cluster summary unless
 * `consistent`).
 * @throws ClusterApiError when a list call fails.
 */
export async function anyNodeDeleting(
  cluster: Pick<Cluster, 'nodeInfos' | 'nodeClaims'>,
  consistent: boolean,
): Promise<boolean> {
  const read = consistent ? { consistent: true } : undefined;
  const [nodes, claims] = await Promise.all([cluster.nodeInfos(read), cluster.nodeClaims(read)]);
  const claimOf = nodeClaimLookup(claims.items);
  return nodes.items.some((node) => isDeletingNode(node, claimOf));
}
