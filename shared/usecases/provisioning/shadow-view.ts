import { isConditionTrue, NodeClaimConditionType } from '../../core/index.ts';
import type { ClusterState } from '../state/cluster-state.ts';

// What a shadow run plans on. Beside a live autoscaler, the pods a shadow run finds pending are
// often already answered: the live autoscaler made NodeClaims for them that have not joined yet.
// Counted as capacity on its way (as a live run counts its own), those would make the shadow
// launch nothing and so never say what Flotilla would have launched. A shadow run therefore plans
// as if the NodeClaims made after its oldest pending pod, and not yet initialized, were not there
// (with their Nodes): the live autoscaler's answer to those pods is what it is compared with.

/** The state without the live autoscaler's NodeClaims (and Nodes) made for its pending pods. */
export function withoutLiveAnswers(state: ClusterState): ClusterState {
  const created = state.pendingPods.flatMap((p) => (p.createdAtMs === undefined ? [] : [p.createdAtMs]));
  if (created.length === 0) return state;
  const oldest = Math.min(...created);
  const answers = state.nodeClaims.filter(
    (c) =>
      !c.deleting &&
      c.createdAtMs !== undefined &&
      c.createdAtMs >= oldest &&
      !isConditionTrue(c.status.conditions, NodeClaimConditionType.initialized),
  );
  if (answers.length === 0) return state;
  const names = new Set(answers.map((c) => c.name));
  const providers = new Set(
    answers.flatMap((c) => (c.status.providerId === undefined ? [] : [c.status.providerId])),
  );
  const nodeNames = new Set(
    answers.flatMap((c) => (c.status.nodeName === undefined ? [] : [c.status.nodeName])),
  );
  return {
    ...state,
    nodeClaims: state.nodeClaims.filter((c) => !names.has(c.name)),
    nodes: state.nodes.filter(
      (n) => !nodeNames.has(n.name) && (n.providerId === undefined || !providers.has(n.providerId)),
    ),
  };
}
