import type { Pod } from './pod.ts';
import { DISRUPTED_TAINT, tolerates } from './taints.ts';

/**
 * Whether a pod bound to a node being deleted needs a place elsewhere, and so is scheduled with the
 * pending pods while its node drains (Karpenter's reschedulable pods of deleting nodes): not a
 * DaemonSet's pod, not a static pod's mirror, not one that tolerates `karpenter.sh/disrupted:
 * NoSchedule` (the drain leaves it where it is), and not already terminating, unless a StatefulSet
 * owns it (its successor is created only once it is gone, so it still needs the room). A terminating
 * pod of another owner has a successor of its own, pending or bound, that is counted instead.
 */
export function needsPlaceOffDeletingNode(pod: Pod): boolean {
  if (pod.daemonSetName !== undefined || pod.disruption?.mirror === true) return false;
  if ((pod.tolerations ?? []).some((t) => tolerates(t, DISRUPTED_TAINT))) return false;
  return pod.disruption?.deletedAtMs === undefined || pod.disruption.statefulSet === true;
}
