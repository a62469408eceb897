import type { V1Condition, V1OwnerReference, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { matchesSelector } from '../../core/index.ts';
import type { PodDisruptionBudget } from '../../ports/cluster.ts';

// PodDisruptionBudget status as kube-controller-manager's disruption controller keeps it, for the
// in-memory cluster's eviction checks. The budget counts against the pods it selects (every phase,
// as the controller lists them):
// - integer minAvailable: expected is the number of those pods;
// - maxUnavailable and percentage minAvailable: expected is the sum of the scale (spec.replicas) of
//   the pods' controllers, each counted once (a Deployment's, through its ReplicaSet, once for all
//   its ReplicaSets). Pods without a controller are left out; a controller that has no scale (a
//   Job) or cannot be found fails the sync, and a failed sync allows no disruption.
// currentHealthy counts Ready pods not being deleted. Eviction deletes the pod it allows, so the
// status computed again right after equals the API server's decremented one: the evicted pod is no
// longer healthy.

/** Looks up a stored pod controller by kind, namespace and name (read as a ScaledObject). */
export type ControllerLookup = (
  kind: 'ReplicaSet' | 'Deployment' | 'StatefulSet' | 'ReplicationController',
  namespace: string,
  name: string,
) => object | undefined;

/** The parts of a stored controller the disruption controller reads. */
export interface ScaledObject {
  readonly metadata?: { readonly uid?: string; readonly ownerReferences?: readonly V1OwnerReference[] };
  readonly spec?: { readonly replicas?: number };
}

/** Why the disruption controller could not compute the expected count. */
class SyncFailure {
  constructor(readonly message: string) {}
}

/** Percent or integer of `total`, rounding up as the disruption controller does; undefined when malformed. */
function scaled(value: number | string, total: number): number | undefined {
  if (typeof value === 'number') return value;
  const match = /^(\d+)%$/.exec(value);
  return match === null ? undefined : Math.ceil((Number(match[1]) * total) / 100);
}

const controllerOf = (o: { readonly ownerReferences?: readonly V1OwnerReference[] } | undefined) =>
  (o?.ownerReferences ?? []).find((r) => r.controller === true);

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');

const isApps = (ref: V1OwnerReference) => ['apps', 'extensions'].includes(groupOf(ref.apiVersion) ?? '');

/** `spec.replicas`, which the API server defaults to 1. */
const replicasOf = (o: ScaledObject) => o.spec?.replicas ?? 1;

/** The controller behind `ref` with its scale, as the disruption controller's finders resolve it. */
function scaleOf(
  ref: V1OwnerReference,
  namespace: string,
  find: ControllerLookup,
): { uid: string; replicas: number } | SyncFailure | undefined {
  const lookup = (kind: Parameters<ControllerLookup>[0], name: string) =>
    find(kind, namespace, name) as ScaledObject | undefined;
  if (ref.kind === 'ReplicaSet' && isApps(ref)) {
    const rs = lookup('ReplicaSet', ref.name);
    if (rs === undefined || rs.metadata?.uid !== ref.uid) return undefined;
    const owner = controllerOf(rs.metadata);
    if (owner === undefined || owner.kind !== 'Deployment') return { uid: ref.uid, replicas: replicasOf(rs) };
    if (!isApps(owner)) return undefined;
    const deployment = lookup('Deployment', owner.name);
    if (deployment === undefined || deployment.metadata?.uid !== owner.uid) return undefined;
    return { uid: owner.uid, replicas: replicasOf(deployment) };
  }
  if (
    (ref.kind === 'StatefulSet' && isApps(ref)) ||
    (ref.kind === 'ReplicationController' && groupOf(ref.apiVersion) === '')
  ) {
    const found = lookup(ref.kind, ref.name);
    return found === undefined || found.metadata?.uid !== ref.uid
      ? undefined
      : { uid: ref.uid, replicas: replicasOf(found) };
  }
  return new SyncFailure(
    `${ref.kind} "${ref.name}" (${ref.apiVersion}) does not implement the scale subresource`,
  );
}

/** The sum of the scales of the pods' controllers, or why it cannot be known. */
function expectedScale(pods: readonly V1Pod[], lookup: ControllerLookup): number | SyncFailure {
  const scales = new Map<string, number>();
  for (const pod of pods) {
    const ref = controllerOf(pod.metadata);
    if (ref === undefined) continue;
    const found = scaleOf(ref, pod.metadata?.namespace ?? '', lookup);
    if (found instanceof SyncFailure) return found;
    if (found === undefined) return new SyncFailure(`found no controllers for pod "${pod.metadata?.name}"`);
    scales.set(found.uid, found.replicas);
  }
  return [...scales.values()].reduce((a, b) => a + b, 0);
}

/** Expected pods and desired healthy ones, as the disruption controller's getExpectedPodCount. */
function expectedCounts(
  budget: PodDisruptionBudget,
  pods: readonly V1Pod[],
  lookup: ControllerLookup,
): { expected: number; desired: number } | SyncFailure {
  if (budget.minAvailable !== undefined && typeof budget.minAvailable === 'number') {
    return { expected: pods.length, desired: budget.minAvailable };
  }
  const bound = budget.maxUnavailable ?? budget.minAvailable;
  // Neither set (policy/v1 defaults none): nothing is expected, so nothing is allowed.
  if (bound === undefined) return { expected: 0, desired: 0 };
  const expected = expectedScale(pods, lookup);
  if (expected instanceof SyncFailure) return expected;
  const value = scaled(bound, expected);
  if (value === undefined) return new SyncFailure(`invalid value for IntOrString: "${bound}"`);
  return { expected, desired: budget.maxUnavailable !== undefined ? Math.max(0, expected - value) : value };
}

function allowedCondition(status: 'True' | 'False', reason: string, message: string): V1Condition {
  return { type: 'DisruptionAllowed', status, reason, message, lastTransitionTime: new Date(0) };
}

/** The budget with the status kube-controller-manager would write, from every pod stored. */
export function pdbWithStatus(
  raw: V1PodDisruptionBudget,
  budget: PodDisruptionBudget,
  pods: readonly V1Pod[],
  lookup: ControllerLookup,
): V1PodDisruptionBudget {
  const namespace = raw.metadata?.namespace;
  const selected = pods.filter(
    (p) =>
      p.metadata?.namespace === namespace &&
      budget.selector !== undefined &&
      matchesSelector(budget.selector, p.metadata?.labels ?? {}),
  );
  const healthy = selected.filter((p) => p.metadata?.deletionTimestamp === undefined && isPodReady(p)).length;
  const counts = expectedCounts(budget, selected, lookup);
  if (counts instanceof SyncFailure) {
    // The controller's fail-safe: nothing allowed, the reason on the condition.
    return {
      ...raw,
      status: {
        currentHealthy: healthy,
        desiredHealthy: 0,
        expectedPods: 0,
        ...(raw.status ?? {}),
        disruptionsAllowed: 0,
        conditions: [allowedCondition('False', 'SyncFailed', counts.message)],
      },
    };
  }
  const { expected, desired } = counts;
  // A budget over no expected pods allows nothing: its first pods may come before a recount.
  const allowed = expected <= 0 ? 0 : Math.max(0, healthy - desired);
  return {
    ...raw,
    status: {
      ...(raw.status ?? {}),
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      disruptionsAllowed: allowed,
      observedGeneration: 1,
      conditions: [
        allowed > 0
          ? allowedCondition('True', 'SufficientPods', '')
          : allowedCondition('False', 'InsufficientPods', ''),
      ],
    },
  };
}

/** The pod's Ready condition is True (as the API server's IsPodReady reads it). */
export function isPodReady(pod: V1Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}
