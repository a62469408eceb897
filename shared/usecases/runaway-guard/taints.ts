import {
  DISRUPTED_TAINT,
  firstUntolerated,
  INSTANCE_TYPE_LABEL_KEYS,
  isEphemeralTaint,
  isReschedulable,
  nodePoolRequirements,
  type Pod,
  Requirement,
  Requirements,
  type Taint,
  volumeAlternatives,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';

// What the runaway guard makes of a node's taints: which ones neither its NodePool nor its
// NodeClaim asked for, and which pending pods a NodePool could host but for them. Pure.

/** Taint keys Kubernetes itself manages on nodes (cordon, pressure, out-of-service, …). */
const KUBERNETES_TAINT_PREFIX = 'node.kubernetes.io/';

export const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;

/**
 * The taints of an initialized Node that keep pods away and that neither its NodePool nor its
 * NodeClaim asked for: not in the template's taints or startupTaints, not a known ephemeral taint,
 * not Karpenter's disrupted taint, not one Kubernetes manages.
 */
export function unexpectedTaints(
  node: Pick<ClusterNode, 'taints'>,
  pool: ClusterNodePool,
  claim?: Pick<ClusterNodeClaim, 'taints' | 'startupTaints'>,
): Taint[] {
  const expected = [
    ...(pool.pool.taints ?? []),
    ...(pool.pool.startupTaints ?? []),
    ...(claim?.taints ?? []),
    ...(claim?.startupTaints ?? []),
    DISRUPTED_TAINT,
  ];
  return (node.taints ?? []).filter(
    (t) =>
      t.effect !== 'PreferNoSchedule' &&
      !isEphemeralTaint(t) &&
      !t.key.startsWith(KUBERNETES_TAINT_PREFIX) &&
      !expected.some((e) => sameTaint(e, t)),
  );
}

/**
 * Whether a pod's node selector, required node affinity (any of its terms) and volume topology
 * admit a node of the pool, whose labels are `poolReqs` (nodePoolRequirements): as the scheduler
 * merges them, a key the pool does not mention is absent on its nodes unless the instance type
 * supplies it. A pod whose constraints do not parse is not one the pool could host.
 */
function poolAdmits(poolReqs: Requirements, pod: Pod): boolean {
  const object = `pod "${pod.namespace}/${pod.name}"`;
  const compatible = (reqs: Requirements) =>
    [...reqs.values()].every((r) => {
      if (r.isAny()) return true;
      const n =
        poolReqs.get(r.key) ?? (INSTANCE_TYPE_LABEL_KEYS.has(r.key) ? undefined : Requirement.absent(r.key));
      return n === undefined ? !r.isEmpty() : !n.intersect(r).isEmpty();
    });
  try {
    const base = Requirements.parse(
      Object.entries(pod.nodeSelector ?? {}).map(([key, value]) => ({
        key,
        operator: 'In',
        values: [value],
      })),
      { object, field: 'spec.nodeSelector' },
    );
    const volumes = volumeAlternatives(pod, object);
    const terms = (
      pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []
    ).map((t) =>
      Requirements.parse(t.matchExpressions ?? [], {
        object,
        field: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution',
      }),
    );
    return (terms.length === 0 ? [Requirements.none] : terms).some((t) =>
      volumes.some((v) => compatible(base.intersect(t).intersect(v))),
    );
  } catch {
    return false;
  }
}

/**
 * Whether a pod on a node stays there: one the node's unexpected NoExecute taints are evicting
 * (the taint landed just after kube-scheduler bound it) is as good as gone, and a node left with
 * only such pods is as useless as an empty one.
 */
export function stays(pod: Pod, unexpected: readonly Taint[]): boolean {
  if (!isReschedulable(pod)) return false;
  const evicting = unexpected.filter((t) => t.effect === 'NoExecute');
  return firstUntolerated(evicting, pod.tolerations ?? []) === undefined;
}

/**
 * The pending pods the pool could host but for taints it did not set: they tolerate its template
 * taints and its requirements and labels admit them. None for a pool whose requirements do not
 * parse (it launches nothing anyway).
 */
export function hostablePendingPods(pool: ClusterNodePool, pending: readonly Pod[]): Pod[] {
  let poolReqs: Requirements;
  try {
    poolReqs = nodePoolRequirements(pool.pool);
  } catch {
    return [];
  }
  return pending.filter(
    (p) =>
      firstUntolerated(pool.pool.taints ?? [], p.tolerations ?? [], true) === undefined &&
      poolAdmits(poolReqs, p),
  );
}
