import type { ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';

// Which Node is a NodeClaim's: every controller that pairs the two (disruption's candidates,
// static NodePools' scale-down, node repair's budgets, `flotilla explain`) looks it up the same
// way. Pure.

/** What the lookup reads of a Node: a ClusterNode, or the same without its pods. */
type Indexed = Pick<ClusterNode, 'name' | 'providerId'>;

/** A NodeClaim's node: by `status.nodeName`, else by provider ID. */
export function nodeOf<N extends Indexed>(
  claim: ClusterNodeClaim,
  nodesByName: ReadonlyMap<string, N>,
  nodesByProvider: ReadonlyMap<string, N>,
): N | undefined {
  const byName = claim.status.nodeName === undefined ? undefined : nodesByName.get(claim.status.nodeName);
  if (byName !== undefined) return byName;
  return claim.status.providerId === undefined ? undefined : nodesByProvider.get(claim.status.providerId);
}

/** A lookup of each NodeClaim's Node among `nodes` (see nodeOf). */
export function nodeIndex<N extends Indexed>(
  nodes: readonly N[],
): (claim: ClusterNodeClaim) => N | undefined {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const byProvider = new Map(
    nodes.flatMap((n) => (n.providerId === undefined ? [] : [[n.providerId, n] as const])),
  );
  return (claim) => nodeOf(claim, byName, byProvider);
}

/**
 * The Nodes of each provider ID, in list order: a NodeClaim finds the Nodes of its instance without
 * a scan of every Node (there may be several while one is replaced under the same name).
 */
export function nodesByProviderId<N extends Pick<ClusterNode, 'providerId'>>(
  nodes: readonly N[],
): ReadonlyMap<string, readonly N[]> {
  const index = new Map<string, N[]>();
  for (const node of nodes) {
    if (node.providerId === undefined) continue;
    const list = index.get(node.providerId);
    if (list === undefined) index.set(node.providerId, [node]);
    else list.push(node);
  }
  return index;
}
