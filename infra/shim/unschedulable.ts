import type { V1Pod } from '@kubernetes/client-node';

/**
 * Whether kube-scheduler has given up on this pod for now, the way Karpenter decides a pod is
 * provisionable: PodScheduled is False with reason Unschedulable, it is not bound and not
 * nominated (preemption), and it is neither a DaemonSet pod nor a static (mirror) pod.
 */
export function isUnschedulable(pod: V1Pod): boolean {
  if (pod.spec?.nodeName || pod.status?.nominatedNodeName || pod.metadata?.deletionTimestamp) return false;
  const owners = pod.metadata?.ownerReferences ?? [];
  if (owners.some((owner) => owner.kind === 'DaemonSet' || owner.kind === 'Node')) return false;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror']) return false;
  return (pod.status?.conditions ?? []).some(
    (condition) =>
      condition.type === 'PodScheduled' &&
      condition.status === 'False' &&
      condition.reason === 'Unschedulable',
  );
}

/**
 * Remembers which pods were already reported unschedulable, so each pod is forwarded once per
 * time it becomes unschedulable: again after it was scheduled (or gone) and turned
 * unschedulable anew, but not on every status update in between.
 */
export class UnschedulableTracker {
  private readonly reported = new Set<string>();

  /** True when this observation is a new transition to unschedulable that should be forwarded. */
  observe(pod: V1Pod): boolean {
    const uid = pod.metadata?.uid;
    if (!uid) return false;
    if (!isUnschedulable(pod)) {
      this.reported.delete(uid);
      return false;
    }
    if (this.reported.has(uid)) return false;
    this.reported.add(uid);
    return true;
  }

  forget(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (uid) this.reported.delete(uid);
  }

  get size(): number {
    return this.reported.size;
  }
}
