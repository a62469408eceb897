import type { CloudInstance, EC2NodeClass, InstanceType } from '../../ports/cloud.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { SchedulingInput } from '../state/cluster-state.ts';
import { nodeIndex } from '../state/node-index.ts';
import type { ClaimWrite } from './condition-writes.ts';
import { type ClaimChanges, computeClaimChanges } from './conditions.ts';

// The NodeClaims as a pass's conditions make them (conditions.ts), for the NodeClaims as listed
// and again for one NodeClaim as the API server has it (confirm.ts, condition-writes.ts). Pure.

/** What the conditions of any NodeClaim of the pass are computed from, but the NodeClaim and its Node. */
export interface ConditionContext {
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  /** EC2's instances as the pass began, by provider id. */
  readonly instances: ReadonlyMap<string, CloudInstance>;
  readonly input: SchedulingInput | undefined;
  readonly nowMs: number;
}

/** The changes one NodeClaim needs now, with its Node (undefined when it has none). */
export type ClaimConditions = (claim: ClusterNodeClaim, node: ClusterNode | undefined) => ClaimChanges;

export function claimConditions(context: ConditionContext): ClaimConditions {
  return (claim, node) => {
    const { providerId } = claim.status;
    return computeClaimChanges({
      claim,
      node,
      pool: claim.nodePoolName === undefined ? undefined : context.pools.get(claim.nodePoolName),
      nodeClass: context.classes.get(claim.nodeClassRef.name),
      instance: providerId === undefined ? undefined : context.instances.get(providerId),
      ...instanceTypesOf(context.input, claim.nodeClassRef.name),
      nowMs: context.nowMs,
    });
  };
}

/** The NodeClaims with this pass's conditions, the writes that make them so, and the problems seen. */
export function claimViews(
  context: ConditionContext,
  claims: readonly ClusterNodeClaim[],
  nodes: readonly ClusterNode[],
): { claims: ClusterNodeClaim[]; writes: ClaimWrite[]; problems: Set<string> } {
  const nodeFor = nodeIndex(nodes);
  const compute = claimConditions(context);
  const problems = new Set<string>();
  const writes: ClaimWrite[] = [];
  const views = claims.map((claim) => {
    // A standalone NodeClaim gets no disruption conditions: no NodePool disrupts it (as Karpenter).
    if (claim.deleting || claim.nodePoolName === undefined) return claim;
    const node = nodeFor(claim);
    const changes = compute(claim, node);
    if (changes.problem !== undefined) problems.add(`nodePool "${claim.nodePoolName}": ${changes.problem}`);
    if (changes.metadata !== undefined || changes.status !== undefined) {
      // A write that leads to disruption is computed again on the NodeClaim the API server has.
      writes.push({ claim, changes, recompute: (fresh) => compute(fresh, node) });
    }
    return changes.view;
  });
  return { claims: views, writes, problems };
}

/** The instance types of a class the scheduling input knows (the class of an eligible NodePool). */
function instanceTypesOf(
  input: SchedulingInput | undefined,
  nodeClassName: string,
): { instanceTypes?: readonly InstanceType[] } {
  const types = input?.instanceTypes.get(nodeClassName);
  return types === undefined ? {} : { instanceTypes: types };
}
