import { DISRUPTED_TAINT, Finalizer, NodeClaimConditionType, parseInstanceId } from '../../core/index.ts';
import type { Cluster, ClusterNode, ClusterNodeClaim, NodeClaimRead, NodeInfo } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import type { TerminationPorts } from './termination.ts';

// A Node being deleted (`kubectl delete node`), as Karpenter's node termination controller starts
// on it: its NodeClaim is deleted, so the drain and termination run as for any deleted NodeClaim; a
// Node that has no NodeClaim any more has its instance terminated and, once the instance is gone,
// its finalizer released, so no Node hangs on it. The termination sweep does this for every such
// Node, a termination request naming the Node (relayed from the shim's report) for that one.

/** What one termination sweep found and started. */
export interface SweepResult {
  /** NodeClaims being deleted that still carry the termination finalizer: to be passed over. */
  readonly terminating: readonly string[];
  /** NodeClaims deleted because their Node was deleted (`kubectl delete node`). */
  readonly deletedForNodes: readonly string[];
  /** Nodes without a NodeClaim whose finalizer was released (their instance is gone). */
  readonly releasedNodes: readonly string[];
}

/**
 * The termination sweep (the start of the termination Lambda's scheduled pass): every Node being
 * deleted with the termination finalizer is started on (node-deletion.ts), and every NodeClaim
 * being deleted comes back to be passed over.
 * @throws ClusterApiError, CloudApiError; the next sweep resumes.
 */
export async function sweepTerminations(ports: TerminationPorts): Promise<SweepResult> {
  const { cluster } = ports;
  const [summarized, nodesRead] = await Promise.all([cluster.nodeClaims(), cluster.nodeInfos()]);
  const claims = new NodeClaimReads(cluster, summarized);
  const deleting = nodesRead.items.filter((n) => n.deleting && n.finalizers.includes(Finalizer.termination));
  // A deleting Node whose NodeClaim the read does not show gets its instance terminated: that is
  // decided on the API server's own NodeClaims, not the cluster summary, which can be behind.
  if (deleting.some((n) => claimOfNode(summarized.items, n) === undefined)) await claims.fromApiServer();
  const deletedForNodes: string[] = [];
  const releasedNodes: string[] = [];
  for (const listed of deleting) {
    // Decided again on the Node as the API server has it, as the list may come from the summary.
    const node = await confirmDeletingNode(cluster, ports.logger, listed);
    if (node === undefined) continue;
    const start = await startNodeTermination(ports, node, claims);
    if (start.kind === 'nodeClaim' && start.deletedNow) deletedForNodes.push(start.nodeClaim);
    if (start.kind === 'released') releasedNodes.push(listed.name);
  }
  const terminating = claims.current.items
    .filter(
      (c) => (c.deleting || deletedForNodes.includes(c.name)) && c.finalizers.includes(Finalizer.termination),
    )
    .map((c) => c.name);
  return { terminating, deletedForNodes, releasedNodes };
}

/** What starting a deleted Node's termination came to. */
export type NodeTerminationStart =
  /** Its NodeClaim, now being deleted (by this step or before it): drive its termination. */
  | { readonly kind: 'nodeClaim'; readonly nodeClaim: string; readonly deletedNow: boolean }
  /** Its instance was told to terminate, or its finalizer released: nothing to drive. */
  | { readonly kind: 'instance' | 'released' }
  /** Nothing to do now (logged when the reason is worth a line). */
  | { readonly kind: 'none'; readonly why: string };

/**
 * The NodeClaims a start decides on: the list read first (the cluster summary's), until a Node needs
 * the API server's own list, which is read once and kept.
 */
export class NodeClaimReads {
  private read: NodeClaimRead;
  private consistentRead = false;

  constructor(
    private readonly cluster: Pick<Cluster, 'nodeClaims'>,
    first: NodeClaimRead,
  ) {
    this.read = first;
  }

  get current(): NodeClaimRead {
    return this.read;
  }

  get consistent(): boolean {
    return this.consistentRead;
  }

  /** The API server's own list, read once. */
  async fromApiServer(): Promise<NodeClaimRead> {
    if (!this.consistentRead) {
      this.read = await this.cluster.nodeClaims({ consistent: true });
      this.consistentRead = true;
    }
    return this.read;
  }
}

/** The NodeClaim of `node` among `claims`: by provider id, or by the node name it registered as. */
export function claimOfNode(
  claims: readonly ClusterNodeClaim[],
  node: Pick<NodeInfo, 'name' | 'providerId'>,
): ClusterNodeClaim | undefined {
  return claims.find(
    (c) =>
      (node.providerId !== undefined && c.status.providerId === node.providerId) ||
      c.status.nodeName === node.name,
  );
}

/**
 * Starts the termination of `node`, as the API server has it: being deleted, with the termination
 * finalizer (the caller confirmed it).
 * @throws ClusterApiError, CloudApiError; the next sweep or delivery resumes.
 */
export async function startNodeTermination(
  ports: TerminationPorts,
  node: ClusterNode,
  claims: NodeClaimReads,
): Promise<NodeTerminationStart> {
  const { cluster, cloud, logger } = ports;
  // Without its NodeClaim in the list read, whether it has one the API server says.
  if (!claims.consistent && claimOfNode(claims.current.items, node) === undefined)
    await claims.fromApiServer();
  const listedClaim = claimOfNode(claims.current.items, node);
  if (listedClaim !== undefined) {
    const claim = await cluster.nodeClaim(listedClaim.name);
    if (claim === undefined) return { kind: 'none', why: `nodeClaim "${listedClaim.name}" is gone` };
    if (claim.deleting) return { kind: 'nodeClaim', nodeClaim: claim.name, deletedNow: false };
    if (claimOfNode([claim], node) === undefined) {
      logger.warn('nodeClaim not deleted for its node', {
        node: node.name,
        nodeClaim: claim.name,
        why: `the API server's NodeClaim is not this Node's (providerID ${claim.status.providerId ?? '(none)'}, node ${claim.status.nodeName ?? '(none)'})`,
      });
      return { kind: 'none', why: 'its NodeClaim is not this Node' };
    }
    await cluster.deleteNodeClaim(claim.name);
    writeDecision(ports, {
      kind: 'delete',
      reason: 'node deleted',
      ...nodeClaimFields(claim),
      node: node.name,
    });
    return { kind: 'nodeClaim', nodeClaim: claim.name, deletedNow: true };
  }
  // A NodeClaim that cannot be read may be this Node's: its instance is left alone while it may be.
  const maybeOwner = claims.current.unreadable.find(
    (u) => u.providerId === undefined || (node.providerId !== undefined && u.providerId === node.providerId),
  );
  if (maybeOwner !== undefined) {
    logger.warn('node left alone', {
      node: node.name,
      why: `nodeClaim "${maybeOwner.name}" cannot be read and may be its own: ${maybeOwner.problem}`,
    });
    return { kind: 'none', why: 'a NodeClaim that cannot be read may be its own' };
  }
  const instanceId = parseInstanceId(node.providerId);
  const instance = instanceId === undefined ? undefined : await cloud.get(instanceId);
  if (instance !== undefined && instance.state !== 'terminated') {
    if (instance.state !== 'shutting-down') await cloud.delete(instance.instanceId);
    writeDecision(ports, {
      kind: 'terminate',
      reason: 'node deleted without a NodeClaim',
      node: node.name,
      instanceId: instance.instanceId,
    });
    return { kind: 'instance' };
  }
  // Gone already: an overlapping termination pass released it first.
  const released = await ignoreNotFound(
    cluster.patchNode(node.name, { removeFinalizers: [Finalizer.termination] }).then(() => true as const),
  );
  if (released === undefined) return { kind: 'none', why: 'released by another pass' };
  writeDecision(ports, {
    kind: 'finalizeNode',
    reason: 'node deleted without a NodeClaim; its instance is gone',
    node: node.name,
  });
  return { kind: 'released' };
}

/**
 * Whether a NodeClaim's termination is already under way, so that a relayed request for it adds
 * nothing: the controller that deleted it (interruption, disruption, node repair, expiration, the
 * status poll) marked it with a `DisruptionReason` condition and handed it to termination itself, or
 * a termination pass has tainted its Node `karpenter.sh/disrupted`. A user's `kubectl delete` leaves
 * neither mark, until the first pass.
 */
export async function terminationUnderWay(
  cluster: Pick<Cluster, 'nodeClaim' | 'node'>,
  nodeClaim: string,
): Promise<boolean> {
  const claim = await cluster.nodeClaim(nodeClaim);
  if (claim === undefined) return false;
  if (
    claim.status.conditions.some(
      (c) => c.type === NodeClaimConditionType.disruptionReason && c.status === 'True',
    )
  )
    return true;
  if (claim.status.nodeName === undefined) return false;
  const node = await cluster.node(claim.status.nodeName);
  return (node?.taints ?? []).some(
    (t) => t.key === DISRUPTED_TAINT.key && t.effect === DISRUPTED_TAINT.effect,
  );
}

/**
 * The Node as the API server has it when it is the one listed and, there too, being deleted with
 * the termination finalizer; else undefined (logged when the list said otherwise).
 */
async function confirmDeletingNode(
  cluster: Pick<Cluster, 'node'>,
  logger: Logger,
  listed: NodeInfo,
): Promise<ClusterNode | undefined> {
  const node = await cluster.node(listed.name);
  if (node === undefined) return undefined;
  if (node.uid === listed.uid && node.deleting && node.finalizers.includes(Finalizer.termination))
    return node;
  logger.warn('node not terminated', {
    node: listed.name,
    why:
      node.uid !== listed.uid
        ? 'the API server has another Node of that name'
        : 'the API server has it not being deleted, or without the termination finalizer',
  });
  return undefined;
}
