import {
  type BudgetCounts,
  type DisruptionReason,
  isConditionTrue,
  NodeClaimConditionType,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';
import { nodeIndex } from './node-index.ts';

// How a NodePool's nodes count for its disruption budgets, as Karpenter v1 counts them: its
// initialized NodeClaims that have their Node, and of those the ones already being disrupted (the
// NodeClaim or its Node being deleted, the NodeClaim in a disruption command, or the Node not
// Ready). Node repair's reason, `Unhealthy`, is the exception for NotReady: a node that is not
// Ready is what repair acts on, not a disruption under way, and counting it would let a wave of
// unhealthy nodes use up the very budget that paces their repair. The disruption controller's
// candidates and node repair both count here. Pure.

/** What the counting reads of a Node (a ClusterNode, or the same without its pods). */
export type BudgetNode = Pick<ClusterNode, 'name' | 'providerId' | 'deleting' | 'ready'>;

/** How one NodeClaim counts for its NodePool's budgets. */
export interface BudgetStanding {
  /** Among the NodePool's nodes: initialized, with its Node. */
  readonly counted: boolean;
  /** Counted, and already being disrupted. */
  readonly disrupting: boolean;
}

/** Whether a Node that is not Ready counts as being disrupted for `reason`: for all but `Unhealthy`. */
export function notReadyDisrupts(reason: DisruptionReason): boolean {
  return reason !== 'Unhealthy';
}

/**
 * How `claim` (with `node`, its Node if it has one) counts: `inCommand` when it is a candidate of a
 * disruption command in flight; `notReady` whether a Node that is not Ready counts as being
 * disrupted (see notReadyDisrupts).
 */
export function budgetStanding(
  claim: ClusterNodeClaim,
  node: BudgetNode | undefined,
  inCommand: boolean,
  notReady: boolean,
): BudgetStanding {
  const counted =
    node !== undefined && isConditionTrue(claim.status.conditions, NodeClaimConditionType.initialized);
  const disrupting = counted && (claim.deleting || node.deleting || inCommand || (notReady && !node.ready));
  return { counted, disrupting };
}

/**
 * Per NodePool (by the NodeClaims' `nodePoolName`), its nodes and those being disrupted for
 * `reason`'s budgets; `inCommand` names the NodeClaims in a disruption command in flight. A NodePool
 * without a NodeClaim is absent.
 */
export function budgetCounts(
  claims: readonly ClusterNodeClaim[],
  nodes: readonly BudgetNode[],
  inCommand: ReadonlySet<string>,
  reason: DisruptionReason,
): Map<string, BudgetCounts> {
  const nodeFor = nodeIndex(nodes);
  const counts = new Map<string, { nodes: number; disrupting: number }>();
  for (const claim of claims) {
    // A standalone NodeClaim is in no NodePool's budget.
    if (claim.nodePoolName === undefined) continue;
    const standing = budgetStanding(
      claim,
      nodeFor(claim),
      inCommand.has(claim.name),
      notReadyDisrupts(reason),
    );
    const count = counts.get(claim.nodePoolName) ?? { nodes: 0, disrupting: 0 };
    counts.set(claim.nodePoolName, count);
    if (standing.counted) count.nodes += 1;
    if (standing.disrupting) count.disrupting += 1;
  }
  return counts;
}
