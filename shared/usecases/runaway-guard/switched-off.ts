import { findCondition, NodePoolConditionType } from '../../core/index.ts';
import type { Cluster, ClusterNodePool } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { LAUNCH_BACKOFF_ANNOTATION } from './state.ts';

// The runaway guard switched off (the stack's `runawayGuard: false`), as Karpenter has none: no
// NodePool is paused or limited to probes, and what the guard left on a NodePool while it was on
// goes, so nothing still says launches wait. The counters annotation is removed; the
// `LaunchBackoff` condition, which a status patch cannot remove, turns False with the reason
// `RunawayGuardOff`. A NodePool the guard never touched is not written.

/** The reason of the `LaunchBackoff` condition and decision line when the guard is off. */
export const RUNAWAY_GUARD_OFF = 'RunawayGuardOff';

const MESSAGE = 'the runaway guard is off (the stack sets runawayGuard: false): launches never pause';

/**
 * Clears what the guard left on the NodePools: the annotation, a condition that does not say the
 * guard is off yet. A NodePool deleted meanwhile is skipped.
 * @throws ClusterApiError from the Cluster port
 */
export async function clearLaunchBackoff(
  ports: DecisionOutput & {
    readonly cluster: Pick<Cluster, 'patchNodePoolStatus' | 'patchNodePoolMetadata' | 'recordEvent'>;
  },
  pools: readonly ClusterNodePool[],
): Promise<void> {
  for (const pool of pools) {
    if (pool.deleting) continue;
    const condition = findCondition(pool.conditions, NodePoolConditionType.launchBackoff);
    const annotated = pool.annotations?.[LAUNCH_BACKOFF_ANNOTATION] !== undefined;
    const stale = condition !== undefined && condition.reason !== RUNAWAY_GUARD_OFF;
    if (!annotated && !stale) continue;
    const name = pool.pool.name;
    try {
      if (stale) {
        await ports.cluster.patchNodePoolStatus(name, {
          conditions: [
            {
              type: NodePoolConditionType.launchBackoff,
              status: 'False',
              reason: RUNAWAY_GUARD_OFF,
              message: MESSAGE,
            },
          ],
        });
      }
      if (annotated) {
        await ports.cluster.patchNodePoolMetadata(name, {
          annotations: { [LAUNCH_BACKOFF_ANNOTATION]: null },
        });
      }
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
    if (condition?.status === 'True') {
      await ports.cluster.recordEvent({
        subject: { kind: 'NodePool', name, uid: pool.uid },
        type: 'Normal',
        reason: 'LaunchBackoffEnded',
        message: `NodePool ${name} launches again: ${MESSAGE}`,
      });
    }
    writeDecision(ports, {
      kind: 'launchBackoff',
      reason: RUNAWAY_GUARD_OFF,
      action: 'end',
      nodePool: name,
      failures: 0,
    });
  }
}
