import type { Interruption, StatusPollKind } from '../../messages/interruption-kinds.ts';
import type { InstanceHealth, InstanceHealthReader } from '../../ports/instance-status.ts';
import {
  handleInterruption,
  type InterruptionOptions,
  type InterruptionOutcome,
  type InterruptionPorts,
  indexNodeClaims,
} from './interruption.ts';

// EC2's instance status poll, as Karpenter's AWS instance status controller runs it: an instance
// whose instance or system status check has failed for 2 minutes is replaced forcefully, one with a
// scheduled reboot, maintenance, retirement or stop is drained gracefully, whatever its NodePool's
// settings (always on; node repair, behind its gate, covers what only the Node's conditions say).
// Each becomes an interruption of its category's kind, handled as EventBridge's are.

/** How long a status check must have failed before its instance is replaced (Karpenter's 120 s). */
export const UNHEALTHY_THRESHOLD_MS = 120_000;

/** The interruptions one poll's health reports call for, at `nowMs`. Pure. */
export function statusInterruptions(
  health: readonly InstanceHealth[],
  nowMs: number,
): readonly Interruption[] {
  const interruptions: Interruption[] = [];
  for (const instance of health) {
    const kinds = new Set<StatusPollKind>();
    for (const problem of instance.problems) {
      if (problem.category === 'eventStatus') kinds.add('eventStatus');
      // EC2 gives every failed check its ImpairedSince; one without a time is not acted on.
      else if (problem.sinceMs !== undefined && nowMs - problem.sinceMs >= UNHEALTHY_THRESHOLD_MS)
        kinds.add(problem.category);
    }
    // The forceful kinds first: a broken instance with a scheduled event too is not drained gently.
    for (const kind of ['instanceStatus', 'systemStatus', 'eventStatus'] as const) {
      if (!kinds.has(kind)) continue;
      interruptions.push({
        kind,
        eventId: `status:${instance.instanceId}:${kind}`,
        instanceIds: [instance.instanceId],
      });
      break;
    }
  }
  return interruptions;
}

/** What one poll found and did. */
export interface InstanceStatusPollResult {
  /** Instances of the account EC2 reports failing or with a scheduled event. */
  readonly reported: number;
  readonly outcomes: readonly InterruptionOutcome[];
}

/**
 * One instance status poll: reads EC2's reports, keeps the instances of this cluster's NodeClaims
 * (another cluster's are not this stack's to act on) and handles each due one as an interruption.
 * The NodeClaims are read only when EC2 reports something.
 * @throws CloudApiError, ClusterApiError, QueueSendError; the next poll acts again.
 */
export async function pollInstanceStatus(
  ports: InterruptionPorts & { readonly readHealth: InstanceHealthReader },
  nowMs: number,
  options: InterruptionOptions = {},
): Promise<InstanceStatusPollResult> {
  const health = await ports.readHealth();
  const due = statusInterruptions(health, nowMs);
  if (due.length === 0) return { reported: health.length, outcomes: [] };
  const claims = await indexNodeClaims(ports.cluster);
  const outcomes: InterruptionOutcome[] = [];
  for (const interruption of due) {
    if (!interruption.instanceIds.some((id) => claims.has(id))) continue;
    outcomes.push(...(await handleInterruption(ports, interruption, claims, options)));
  }
  // Each instance acted on has its own handleInterruption decision; the poll adds only a count.
  ports.logger.info('instance status polled', {
    reported: health.length,
    due: due.length,
    acted: outcomes.length,
  });
  return { reported: health.length, outcomes };
}
