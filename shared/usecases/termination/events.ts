import type { ClusterEvent, ClusterNodeClaim, DrainPod } from '../../ports/cluster.ts';
import type { ForcedDelete } from './decide.ts';

// The Events of termination, on the objects Karpenter records them on, with its reasons, types
// and dedupe keys: a pod evicted (Evicted) or deleted at the terminationGracePeriod deadline
// (Disrupted), a Node whose drain waits on pods (FailedDraining) or on volumes
// (AwaitingVolumeDetachment), a deadline set (TerminationGracePeriodExpiring), an instance EC2
// would not terminate (FailedTermination). Pure.

const podSubject = (pod: DrainPod) =>
  ({ kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid }) as const;

/** A pod the drain evicted through the Eviction API. */
export function evicted(pod: DrainPod): ClusterEvent {
  return {
    subject: podSubject(pod),
    type: 'Normal',
    reason: 'Evicted',
    message: 'Evicted pod',
    dedupeValues: [pod.namespace, pod.name],
  };
}

/** A pod deleted because its node's terminationGracePeriod runs out: PDBs and do-not-disrupt bypassed. */
export function disrupted(forced: ForcedDelete, deadline: string): ClusterEvent {
  return {
    subject: podSubject(forced.pod),
    type: 'Normal',
    reason: 'Disrupted',
    message:
      `Deleted so its node can terminate by ${deadline} (the NodeClaim's terminationGracePeriod): ` +
      `${forced.gracePeriodSeconds}s of its ${forced.pod.terminationGracePeriodSeconds}s grace period, ` +
      'bypassing its PodDisruptionBudget and karpenter.sh/do-not-disrupt',
    dedupeValues: [forced.pod.namespace, forced.pod.name],
  };
}

/** A Node whose drain waits on pods the Eviction API refused (a PDB, mostly). */
export function failedDraining(nodeName: string, blocked: readonly string[]): ClusterEvent {
  const first = blocked.slice(0, 3).join(', ');
  const more = blocked.length > 3 ? ` and ${blocked.length - 3} more` : '';
  return {
    subject: { kind: 'Node', name: nodeName },
    type: 'Warning',
    reason: 'FailedDraining',
    message: `Failed to drain node: ${blocked.length} pods wait to be evicted (${first}${more})`,
    dedupeValues: [],
  };
}

/** A drained Node whose volumes are still attached. */
export function awaitingVolumeDetachment(nodeName: string, detail: string): ClusterEvent {
  return {
    subject: { kind: 'Node', name: nodeName },
    type: 'Normal',
    reason: 'AwaitingVolumeDetachment',
    message: `Waiting before terminating the instance: ${detail}`,
    dedupeValues: [],
  };
}

/** The deadline by which every pod goes, on the NodeClaim and its Node. */
export function terminationGracePeriodExpiring(claim: ClusterNodeClaim, deadline: string): ClusterEvent[] {
  const e = {
    type: 'Warning',
    reason: 'TerminationGracePeriodExpiring',
    message: `All pods will be deleted by ${deadline}`,
    dedupeValues: [],
  } as const;
  return [
    { ...e, subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid } },
    ...(claim.status.nodeName === undefined
      ? []
      : [{ ...e, subject: { kind: 'Node' as const, name: claim.status.nodeName } }]),
  ];
}

/** EC2 refused to terminate the NodeClaim's instance; termination tries again. */
export function failedTermination(claim: ClusterNodeClaim, instanceId: string, error: unknown): ClusterEvent {
  const why = error instanceof Error ? error.message : String(error);
  return {
    subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
    type: 'Warning',
    reason: 'FailedTermination',
    message: `Failed to terminate instance ${instanceId}, retrying: ${why}`,
    dedupeValues: [instanceId],
  };
}
