/**
 * One-time wake-ups of the provisioner, one per NodePool whose schedules (`flotilla.io/schedules`)
 * change what they hold at a known instant: the provisioning run then launches for the pods a
 * closing window lets go, and keeps the replicas a window sets, without waiting for the next poll.
 */
export interface WakeUps {
  /**
   * Makes the armed wake-ups exactly `wanted` (NodePool name → epoch ms): arms each one not armed
   * at that instant yet, and removes those of NodePools not in it. Returns the NodePools whose
   * wake-up it armed or moved, and the wake-ups (by their schedule's name) it removed.
   * @throws CloudApiError when the scheduler refuses or cannot be reached (what was done stays done).
   */
  arm(wanted: ReadonlyMap<string, number>): Promise<{
    readonly armed: readonly string[];
    readonly removed: readonly string[];
  }>;
}
