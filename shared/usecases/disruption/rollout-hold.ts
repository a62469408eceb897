import { FlotillaError } from '../../core/errors.ts';
import { findCondition, NodePoolConditionType } from '../../core/index.ts';
import type { AlarmReader, AlarmState } from '../../ports/alarms.ts';
import type { Cluster, ClusterNodePool } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, writeDecision } from '../decisions/decision.ts';
import {
  MAX_ROLLOUT_ALARMS,
  parseRolloutAlarms,
  type RolloutAlarms,
  type RolloutVerdict,
  rolloutCondition,
  rolloutVerdict,
} from './rollout-alarms.ts';

// A disruption pass asks, once before expiry and its methods, which NodePools' rollouts wait on
// their alarms (rollout-alarms.ts decides): it reads every alarm the NodePools name with one
// DescribeAlarms call a hundred names (none when no NodePool names any), writes the `RolloutPaused`
// condition where it changes, with an Event and a decision line, and answers the NodePools held.

export interface RolloutHoldPorts {
  readonly cluster: Pick<Cluster, 'patchNodePoolStatus' | 'recordEvent'>;
  /** Absent where the stack gives no CloudWatch access: a NodePool naming alarms is then held. */
  readonly alarms?: AlarmReader;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

/**
 * The NodePools whose drift and expiration replacements wait now, by name, with why. `write`
 * false (a shadow pass) computes the same without writing conditions or Events.
 */
export async function rolloutHolds(
  ports: RolloutHoldPorts,
  pools: Iterable<ClusterNodePool>,
  write = true,
): Promise<ReadonlyMap<string, string>> {
  const named = new Map<ClusterNodePool, RolloutAlarms>();
  for (const pool of pools) {
    if (pool.deleting) continue;
    named.set(pool, parseRolloutAlarms(pool.annotations));
  }
  const names = [...new Set([...named.values()].flatMap((a) => (a.kind === 'alarms' ? a.names : [])))].sort();
  const read = await readStates(ports.alarms, names);
  const held = new Map<string, string>();
  for (const [pool, alarms] of named) {
    const verdict = alarms.kind === 'none' ? undefined : rolloutVerdict(alarms, read.states, read.problem);
    if (verdict?.hold === true) held.set(pool.pool.name, verdict.message);
    if (write) await apply(ports, pool, verdict, alarms);
  }
  return held;
}

async function readStates(
  reader: AlarmReader | undefined,
  names: readonly string[],
): Promise<{ states?: ReadonlyMap<string, AlarmState>; problem?: string }> {
  if (names.length === 0) return { states: new Map() };
  if (reader === undefined) return { problem: 'this stack gives the disruption Lambda no CloudWatch access' };
  const states = new Map<string, AlarmState>();
  try {
    for (let i = 0; i < names.length; i += MAX_ROLLOUT_ALARMS) {
      for (const [name, state] of await reader.states(names.slice(i, i + MAX_ROLLOUT_ALARMS))) {
        states.set(name, state);
      }
    }
  } catch (error) {
    if (!(error instanceof FlotillaError)) throw error;
    return { problem: error.message };
  }
  return { states };
}

/** Writes the condition where it changes, with its Event and decision line. */
async function apply(
  ports: RolloutHoldPorts,
  pool: ClusterNodePool,
  verdict: RolloutVerdict | undefined,
  alarms: RolloutAlarms,
): Promise<void> {
  const condition = rolloutCondition(pool, verdict);
  if (condition === undefined) return;
  const name = pool.pool.name;
  try {
    await ports.cluster.patchNodePoolStatus(name, { conditions: [condition] });
  } catch (error) {
    if (isNotFound(error)) return;
    // The hold itself stands (the caller has it); only its words on the NodePool wait for the
    // next pass, which writes them again.
    ports.logger.error('nodepool condition not written', {
      nodePool: name,
      condition: NodePoolConditionType.rolloutPaused,
      error: error instanceof Error ? error.message : String(error),
      retry: 'the next pass writes it',
    });
    return;
  }
  // A new message with the same status (other alarms firing, an edited list) is written quietly:
  // an Event and a line say only that a hold started or ended.
  const was = findCondition(pool.conditions, NodePoolConditionType.rolloutPaused)?.status;
  if (was === condition.status || (was === undefined && condition.status === 'False')) return;
  const start = condition.status === 'True';
  await ports.cluster.recordEvent({
    subject: { kind: 'NodePool', name, uid: pool.uid },
    type: start ? 'Warning' : 'Normal',
    reason: start ? 'RolloutPaused' : 'RolloutResumed',
    message: `NodePool ${name}: ${condition.message}`,
  });
  writeDecision(ports, {
    kind: 'rolloutHold',
    reason: condition.reason,
    action: start ? 'start' : 'end',
    nodePool: name,
    alarms: verdict?.hold === true ? verdict.alarms : alarms.kind === 'alarms' ? alarms.names : [],
    detail: condition.message,
  });
}
