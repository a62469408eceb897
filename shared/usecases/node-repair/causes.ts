import { parseInstanceId } from '../../core/index.ts';
import type { NodeInfo } from '../../ports/cluster.ts';
import type { ImpairedInstance } from '../../ports/instance-status.ts';

// What makes a node unhealthy for node repair, and for how long each cause is tolerated: the AWS
// provider's repair policies on Node conditions, and instances EC2 reports impaired. Pure.

/** A Node condition that makes a node unhealthy, and for how long it is tolerated. */
export interface RepairPolicy {
  readonly conditionType: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly tolerationMs: number;
}

/** The AWS provider's repair policies (its `RepairPolicies`): kubelet and Node Monitoring Agent conditions. */
export const REPAIR_POLICIES: readonly RepairPolicy[] = [
  { conditionType: 'Ready', status: 'False', tolerationMs: 30 * 60_000 },
  { conditionType: 'Ready', status: 'Unknown', tolerationMs: 30 * 60_000 },
  { conditionType: 'AcceleratedHardwareReady', status: 'False', tolerationMs: 10 * 60_000 },
  { conditionType: 'StorageReady', status: 'False', tolerationMs: 30 * 60_000 },
  { conditionType: 'NetworkingReady', status: 'False', tolerationMs: 30 * 60_000 },
  { conditionType: 'KernelReady', status: 'False', tolerationMs: 30 * 60_000 },
  { conditionType: 'ContainerRuntimeReady', status: 'False', tolerationMs: 30 * 60_000 },
];

/**
 * How long EC2 may report an instance impaired (instance or system status check failed) before
 * its node is repaired. Karpenter's status polling acts after 2 minutes; Flotilla waits as long as
 * the shortest condition toleration, because a failed reachability check on a node whose kubelet
 * still reports Ready is often transient (EC2 retries the check every minute) and the node is
 * force-terminated, PDBs and all.
 */
export const IMPAIRED_INSTANCE_TOLERATION_MS = 10 * 60_000;

/** Why a node is unhealthy. */
export type UnhealthyCause =
  | {
      readonly source: 'condition';
      readonly conditionType: string;
      readonly status: string;
      /** When the condition took its status (else the Node's creation); undefined when unknown. */
      readonly sinceMs?: number;
      readonly tolerationMs: number;
    }
  | {
      readonly source: 'instanceStatus';
      readonly instanceId: string;
      readonly checks: readonly string[];
      readonly sinceMs?: number;
      readonly tolerationMs: number;
    };

/** Every unhealthy cause of a node, whatever its toleration. */
export function unhealthyCauses(
  node: NodeInfo,
  impaired: ReadonlyMap<string, ImpairedInstance>,
): UnhealthyCause[] {
  const causes: UnhealthyCause[] = [];
  for (const condition of node.conditions ?? []) {
    for (const policy of REPAIR_POLICIES) {
      if (policy.conditionType !== condition.type || policy.status !== condition.status) continue;
      // The transition time as the kubelet wrote it (Karpenter v1 reads it as is); without one,
      // the Node's creation is the latest the condition can have started.
      const sinceMs = condition.lastTransitionMs ?? node.createdAtMs;
      causes.push({
        source: 'condition',
        conditionType: condition.type,
        status: condition.status,
        tolerationMs: policy.tolerationMs,
        ...(sinceMs === undefined ? {} : { sinceMs }),
      });
    }
  }
  const instanceId = parseInstanceId(node.providerId);
  const instance = instanceId === undefined ? undefined : impaired.get(instanceId);
  if (instance !== undefined) {
    causes.push({
      source: 'instanceStatus',
      instanceId: instance.instanceId,
      checks: instance.checks,
      tolerationMs: IMPAIRED_INSTANCE_TOLERATION_MS,
      ...(instance.impairedSinceMs === undefined ? {} : { sinceMs: instance.impairedSinceMs }),
    });
  }
  return causes;
}

/** The cause whose toleration ends first, among those with a known start. */
export function earliestDue(
  causes: readonly UnhealthyCause[],
): { cause: UnhealthyCause; dueMs: number } | undefined {
  let best: { cause: UnhealthyCause; dueMs: number } | undefined;
  for (const cause of causes) {
    if (cause.sinceMs === undefined) continue;
    const dueMs = cause.sinceMs + cause.tolerationMs;
    if (best === undefined || dueMs < best.dueMs) best = { cause, dueMs };
  }
  return best;
}

/** The cause in words, for Events and the decision line. */
export function describeCause(cause: UnhealthyCause): string {
  const minutes = `${Math.round(cause.tolerationMs / 60_000)}m`;
  return cause.source === 'condition'
    ? `condition ${cause.conditionType}=${cause.status} for longer than ${minutes}`
    : `EC2 reports instance ${cause.instanceId} impaired (${cause.checks.join(', ')}) for longer than ${minutes}`;
}
