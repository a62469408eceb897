// Why pods could not be placed, as values.
import { type Pod, toPodRef } from '../pod.ts';
import type { UnschedulablePod } from '../scheduling-types.ts';
import type { PodState } from './model.ts';

/**
 * Why a pod that asks for devices through Dynamic Resource Allocation is not provisioned for:
 * Flotilla plans as Karpenter with its default `IGNORE_DRA_REQUESTS=true`, which leaves such pods
 * to the devices of nodes that exist.
 */
export const DYNAMIC_RESOURCES_UNSUPPORTED =
  'pod has Dynamic Resource Allocation requirements (resourceClaims), which Flotilla does not provision for';

/**
 * A pod with Dynamic Resource Allocation requirements: never tried, the same reason for each
 * NodePool (or alone when there is none), and that reason as its message.
 */
export function dynamicResourcesValue(pod: Pod, nodePools: readonly string[]): UnschedulablePod {
  const reason = DYNAMIC_RESOURCES_UNSUPPORTED;
  return {
    pod: toPodRef(pod),
    reasons:
      nodePools.length === 0
        ? [{ nodePool: '', reason }]
        : nodePools.map((nodePool) => ({ nodePool, reason })),
    message: reason,
  };
}

/** The pod with the reasons of its last attempt, one per NodePool, and a one-line message. */
export function unschedulableValue(ps: PodState): UnschedulablePod {
  const reasons = ps.lastReasons;
  return {
    pod: toPodRef(ps.pod),
    reasons,
    message: reasons
      .map((r) => (r.nodePool === '' ? r.reason : `nodePool ${r.nodePool}: ${r.reason}`))
      .join('; '),
  };
}
