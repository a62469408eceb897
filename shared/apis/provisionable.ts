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
