import type { WakeUps } from '../../ports/wake-ups.ts';

// The NodePools' wake-ups in memory, for the simulator: EventBridge Scheduler's one-time schedules
// as instants by NodePool; the simulator wakes the provisioner at the earliest one due.

export interface MemoryWakeUps extends WakeUps {
  /** The earliest armed instant, epoch ms; undefined when none is armed. */
  next(): number | undefined;
  /** Whether a wake-up is due at `nowMs`: those due fire (they are one-time), and are gone. */
  fire(nowMs: number): boolean;
}

export function makeMemoryWakeUps(): MemoryWakeUps {
  const armed = new Map<string, number>();
  return {
    async arm(wanted) {
      const changed: string[] = [];
      const removed: string[] = [];
      for (const [pool, atMs] of wanted) {
        if (armed.get(pool) === atMs) continue;
        armed.set(pool, atMs);
        changed.push(pool);
      }
      for (const pool of [...armed.keys()]) {
        if (wanted.has(pool)) continue;
        armed.delete(pool);
        removed.push(pool);
      }
      return { armed: changed, removed };
    },
    next() {
      let earliest: number | undefined;
      for (const at of armed.values()) if (earliest === undefined || at < earliest) earliest = at;
      return earliest;
    },
    fire(nowMs) {
      let fired = false;
      for (const [pool, at] of [...armed]) {
        if (at > nowMs) continue;
        armed.delete(pool);
        fired = true;
      }
      return fired;
    },
  };
}
