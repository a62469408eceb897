import type { NodeDeletion } from '../../messages/node-deletion.ts';
import type { QueueMessage } from '../../messages/pod-event.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { Logger } from '../../runtime/logger.ts';
import { DECISION_SAMPLE_SIZE, type MetricsSink, writeDecision } from '../decisions/decision.ts';
import type { BatchItem, BatchOutcome } from '../state/batch.ts';
import { decideFollowUp, type WaitingNodeClaim } from './follow-up-decide.ts';
import type { ProvisionResult } from './provision.ts';

// The provisioner Lambda's invocation, whatever triggered it: one provisioning run, then the
// controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools), then, while NodeClaims it
// launched have not initialized, a delayed follow-up so their Nodes register without waiting for
// the pending-pods schedule: every 5 s while they are young, less often as they age, and none for
// NodeClaims older than the registration timeout (follow-up-decide.ts).

/** What invoked a provisioner run: its schedule, or a message on the pod-event queue. */
export type ProvisionTrigger = 'schedule' | 'queue';

/** What one provisioner invocation uses. */
export interface ProvisionerDriverDeps {
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /**
   * One provisioning run under the given lease holder (the invocation id); `trigger` says what
   * invoked it (a queue message asks for something now: a pod, a follow-up, a replacement to launch);
   * `podEventAtMs`, when the latest pod event among the messages was observed.
   */
  readonly provision: (
    holder: string,
    trigger: ProvisionTrigger,
    podEventAtMs?: number,
  ) => Promise<ProvisionResult>;
  /** The controllers pass run after provisioning; reports the NodeClaims not initialized yet. */
  readonly reconcileLifecycle?: (
    holder: string,
  ) => Promise<{ readonly uninitialized: readonly WaitingNodeClaim[] }>;
  /**
   * Asks for another invocation after `delaySeconds` (a delayed follow-up message) because these
   * NodeClaims have not initialized yet; resolves to the message's delay, or undefined when a
   * follow-up is already on its way. When absent, the pending-pods schedule is the next chance.
   */
  readonly scheduleFollowUp?: (
    holder: string,
    nodeClaims: readonly string[],
    delaySeconds: number,
  ) => Promise<{ readonly delaySeconds: number } | undefined>;
  /** The ages of waiting NodeClaims are measured on it. @default systemClock */
  readonly clock?: Clock;
  /**
   * Sends the Node and NodeClaim deletions among the messages on to termination (never throws: a
   * send that fails leaves the object to the termination sweep). Absent, only the sweep finds them.
   */
  readonly relayDeletions?: (deletions: readonly NodeDeletion[]) => Promise<unknown>;
}

/**
 * One provisioner invocation: provisioning, the controllers pass, and a follow-up while NodeClaims
 * have not initialized. A follow-up that cannot be sent is logged, not thrown: the run succeeded
 * and the schedule registers the Nodes later.
 * @throws what provisioning or the controllers pass throws.
 */
export async function runProvisioner(
  deps: ProvisionerDriverDeps,
  holder: string,
  trigger: ProvisionTrigger = 'schedule',
  podEventAtMs?: number,
): Promise<ProvisionResult> {
  const result = await deps.provision(holder, trigger, podEventAtMs);
  if (deps.reconcileLifecycle === undefined) return result;
  const lifecycle = await deps.reconcileLifecycle(holder);
  const followUp = decideFollowUp(lifecycle.uninitialized, (deps.clock ?? systemClock).now().getTime());
  if (followUp.kind === 'followUp' && deps.scheduleFollowUp !== undefined) {
    const { nodeClaims } = followUp;
    try {
      const scheduled = await deps.scheduleFollowUp(holder, nodeClaims, followUp.delaySeconds);
      if (scheduled !== undefined) {
        writeDecision(deps, {
          kind: 'followUp',
          reason: 'nodeClaims not initialized yet',
          nodeClaims: nodeClaims.slice(0, DECISION_SAMPLE_SIZE),
          nodeClaimCount: nodeClaims.length,
          delaySeconds: scheduled.delaySeconds,
        });
      }
    } catch (error) {
      deps.logger.error('follow-up not scheduled', {
        error,
        nodeClaims: nodeClaims.slice(0, 10),
        fallback: 'pending-pods schedule',
      });
    }
  } else if (followUp.kind === 'none' && followUp.why === 'older than the registration timeout') {
    deps.logger.debug('no follow-up', { why: followUp.why, nodeClaimCount: followUp.stale });
  }
  return result;
}

/**
 * A batch of pod-event queue messages (pod events, node deletions and follow-ups): one invocation
 * for the lot, as the provisioner reads the pods from the cluster itself. When it throws, every
 * item fails, so the queue delivers them again and the next delivery triggers another run.
 */
export async function provisionForMessages(
  deps: ProvisionerDriverDeps,
  holder: string,
  items: readonly BatchItem<QueueMessage>[],
): Promise<BatchOutcome> {
  if (items.length === 0) return { failed: [] };
  // The drain of a deleted Node or NodeClaim starts at once, before this run plans for its pods.
  const deletions = items.flatMap(({ message: m }) => (m.kind === 'nodeDeletion' ? [m.deletion] : []));
  if (deletions.length > 0) await deps.relayDeletions?.(deletions);
  try {
    await runProvisioner(deps, holder, 'queue', latestPodEventAtMs(items));
    return { failed: [] };
  } catch (error) {
    deps.logger.error('provisioning failed', {
      error,
      pods: items
        .flatMap(({ message: m }) => (m.kind === 'podEvent' ? [`${m.event.namespace}/${m.event.name}`] : []))
        .slice(0, 10),
      deleting: items
        .flatMap(({ message: m }) =>
          m.kind === 'nodeDeletion' ? [`${m.deletion.object}/${m.deletion.name}`] : [],
        )
        .slice(0, 10),
    });
    return { failed: items.map((i) => i.id) };
  }
}

/** When the latest pod event among the messages was observed (epoch ms); undefined without one. */
export function latestPodEventAtMs(items: readonly BatchItem<QueueMessage>[]): number | undefined {
  let latest: number | undefined;
  for (const { message } of items) {
    if (message.kind !== 'podEvent') continue;
    const at = Date.parse(message.event.observedAt);
    if (Number.isFinite(at) && (latest === undefined || at > latest)) latest = at;
  }
  return latest;
}
