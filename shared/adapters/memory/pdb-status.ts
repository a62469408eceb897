import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { matchesSelector } from '../../core/index.ts';
import type { PodDisruptionBudget } from '../../ports/cluster.ts';

// PodDisruptionBudget status as kube-controller-manager's disruption controller keeps it, for the
// in-memory cluster's eviction checks.

/** Percent or integer of `total`, rounding up as the disruption controller does. */
function scaled(value: number | string, total: number): number {
  if (typeof value === 'number') return value;
  const match = /^(\d+)%$/.exec(value);
  return match === null ? Number(value) : Math.ceil((Number(match[1]) * total) / 100);
}

/**
 * The budget with the status kube-controller-manager would write, from the active pods it selects.
 */
export function pdbWithStatus(
  raw: V1PodDisruptionBudget,
  budget: PodDisruptionBudget,
  activePods: readonly V1Pod[],
): V1PodDisruptionBudget {
  const namespace = raw.metadata?.namespace;
  const selected = activePods.filter(
    (p) =>
      p.metadata?.namespace === namespace &&
      p.metadata?.deletionTimestamp === undefined &&
      budget.selector !== undefined &&
      matchesSelector(budget.selector, p.metadata?.labels ?? {}),
  );
  const expected = selected.length;
  const healthy = selected.filter((p) => isPodReady(p)).length;
  // maxUnavailable and percentages need the pods' controller for the expected count; with a
  // pod that has none, the disruption controller fails safe and allows nothing.
  const needsScale = budget.maxUnavailable !== undefined || typeof budget.minAvailable === 'string';
  if (needsScale && selected.some((p) => !(p.metadata?.ownerReferences ?? []).some((o) => o.controller))) {
    return {
      ...raw,
      status: {
        ...(raw.status ?? {}),
        currentHealthy: healthy,
        desiredHealthy: 0,
        expectedPods: 0,
        disruptionsAllowed: 0,
      },
    };
  }
  const desired =
    budget.minAvailable !== undefined
      ? scaled(budget.minAvailable, expected)
      : budget.maxUnavailable !== undefined
        ? Math.max(0, expected - scaled(budget.maxUnavailable, expected))
        : 0;
  return {
    ...raw,
    status: {
      ...(raw.status ?? {}),
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      disruptionsAllowed: Math.max(0, healthy - desired),
      observedGeneration: 1,
    },
  };
}

/** Running with a Ready condition that is True. */
export function isPodReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}
