// When the simulated provisioner Lambda is invoked: its pod-event queue brings news of pods it has
// not seen yet (or a launch request), and its schedule looks at the pods still pending again every
// minute. The live provisioner and a shadow one keep one trigger each, by the same rule.

/** The provisioner's schedule: pending pods are looked at again this often even without news. */
export const PROVISION_SCHEDULE_MS = 60_000;

export interface ProvisionTrigger {
  /** Whether a run is due at `nowMs` with these pods pending and a launch `requested` or not. */
  due(pending: readonly { readonly uid: string }[], requested: boolean, nowMs: number): boolean;
  /**
   * A run started at `nowMs`: the pods pending before it and after it are no longer news, and the
   * schedule counts from then.
   */
  ran(
    nowMs: number,
    before: readonly { readonly uid: string }[],
    after: readonly { readonly uid: string }[],
  ): void;
  /**
   * With these pods pending and nothing else changing, when a run is next due: `news` when one of
   * them is not known yet (due at once), else the schedule's next look.
   */
  nextRunMs(pendingUids: readonly string[]): number | 'news';
}

export function makeProvisionTrigger(): ProvisionTrigger {
  let lastRunMs = Number.NEGATIVE_INFINITY;
  let seen = new Set<string>();
  return {
    due(pending, requested, nowMs) {
      if (pending.length === 0 && !requested) return false;
      const news = pending.some((p) => !seen.has(p.uid));
      return news || requested || nowMs - lastRunMs >= PROVISION_SCHEDULE_MS;
    },
    ran(nowMs, before, after) {
      lastRunMs = nowMs;
      seen = new Set([...after, ...before].map((p) => p.uid));
    },
    nextRunMs(pendingUids) {
      return pendingUids.every((uid) => seen.has(uid)) ? lastRunMs + PROVISION_SCHEDULE_MS : 'news';
    },
  };
}
