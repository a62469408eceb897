import type { V1Pod } from '@kubernetes/client-node';
import { isUnschedulable } from '../../shared/apis/provisionable.ts';

export { isUnschedulable };

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

  /** Forgets every pod not among `uids` (a fresh list: pods deleted while the watch was down). */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of this.reported) if (!uids.has(uid)) this.reported.delete(uid);
  }

  forget(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (uid) this.reported.delete(uid);
  }

  get size(): number {
    return this.reported.size;
  }
}
