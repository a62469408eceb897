import { nextTransition } from '../../core/index.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';
import { CloudApiError } from '../../ports/errors.ts';
import type { WakeUps } from '../../ports/wake-ups.ts';
import type { Logger } from '../../runtime/logger.ts';

// The provisioner's wake-ups (Flotilla's own): for each NodePool whose schedules
// (`flotilla.io/schedules`) change what they hold at a known instant, one wake-up then, so a
// closing window's pods launch, and a window's replicas are kept, at that instant rather than at
// the next pending-pods poll. Armed by every controllers pass; a NodePool gone, or whose schedules
// do not read or never change again within a year, has none.

/** Per NodePool, the instant its wake-up is for at `nowMs`. Pure. */
export function wantedWakeUps(pools: readonly ClusterNodePool[], nowMs: number): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const pool of pools) {
    if (pool.deleting || pool.schedules?.kind !== 'schedules') continue;
    const at = nextTransition(pool.schedules.schedules, nowMs);
    if (at !== undefined) wanted.set(pool.pool.name, at);
  }
  return wanted;
}

/**
 * Arms the NodePools' wake-ups, logging what changed. A scheduler that refuses or cannot be reached
 * fails nothing else: it is logged, and the next pass tries again (the windows still take effect at
 * the pending-pods poll).
 * @throws whatever is not the scheduler's answer (a defect).
 */
export async function armWakeUps(
  wakeUps: WakeUps,
  pools: readonly ClusterNodePool[],
  nowMs: number,
  logger: Logger,
): Promise<void> {
  const wanted = wantedWakeUps(pools, nowMs);
  try {
    const { armed, removed } = await wakeUps.arm(wanted);
    if (armed.length === 0 && removed.length === 0) return;
    logger.info('wake-ups armed', {
      armed: armed.slice(0, 20).map((nodePool) => ({
        nodePool,
        at: new Date(wanted.get(nodePool) ?? 0).toISOString(),
      })),
      removed: removed.slice(0, 20),
    });
  } catch (error) {
    if (!(error instanceof CloudApiError)) throw error;
    logger.warn('wake-ups not armed', {
      error,
      nodePools: wanted.size,
      why: 'the next controllers pass tries again; until then a window takes effect at the pending-pods poll',
    });
  }
}
