import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type FollowUp, type PodEvent, parseQueueMessage } from '../../shared/messages/pod-event.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { ProvisionResult } from '../../shared/usecases/provision.ts';

// The provisioner's event handling, apart from the cold-start wiring in handler.ts so it can be
// tested with real event JSON and fake use cases.

const sqsEvent = z.object({
  Records: z.array(z.object({ messageId: z.string().min(1), body: z.string() }).loose()).min(1),
});

const scheduleEvent = z
  .object({ 'detail-type': z.literal('Scheduled Event'), source: z.literal('aws.events') })
  .loose();

/** What invoked the provisioner. */
export type ProvisionerTrigger =
  | { readonly kind: 'schedule' }
  | {
      readonly kind: 'podEvents';
      readonly messageIds: readonly string[];
      readonly events: readonly { readonly messageId: string; readonly event: PodEvent }[];
      readonly followUps: readonly { readonly messageId: string; readonly followUp: FollowUp }[];
      readonly rejected: readonly { readonly messageId: string; readonly problem: string }[];
    }
  | { readonly kind: 'unknown' };

/**
 * Parses the invocation event: an SQS batch of pod events from the shim, or the EventBridge
 * schedule. Pod events for another cluster are rejected like malformed ones.
 */
export function parseTrigger(event: unknown, clusterName: string): ProvisionerTrigger {
  const sqs = sqsEvent.safeParse(event);
  if (sqs.success) {
    const events: { messageId: string; event: PodEvent }[] = [];
    const followUps: { messageId: string; followUp: FollowUp }[] = [];
    const rejected: { messageId: string; problem: string }[] = [];
    for (const record of sqs.data.Records) {
      const parsed = parseQueueMessage(record.body);
      if (!parsed.ok) {
        rejected.push({ messageId: record.messageId, problem: parsed.problem });
        continue;
      }
      const message = parsed.message;
      const cluster = message.kind === 'podEvent' ? message.event.cluster : message.followUp.cluster;
      if (cluster !== clusterName) {
        rejected.push({
          messageId: record.messageId,
          problem: `message is for cluster "${cluster}", this provisioner serves "${clusterName}"`,
        });
      } else if (message.kind === 'podEvent') {
        events.push({ messageId: record.messageId, event: message.event });
      } else followUps.push({ messageId: record.messageId, followUp: message.followUp });
    }
    return {
      kind: 'podEvents',
      messageIds: sqs.data.Records.map((r) => r.messageId),
      events,
      followUps,
      rejected,
    };
  }
  if (scheduleEvent.safeParse(event).success) return { kind: 'schedule' };
  return { kind: 'unknown' };
}

/** The SQS partial batch response. */
export interface BatchResponse {
  readonly batchItemFailures: readonly { readonly itemIdentifier: string }[];
}

export interface ProvisionerDeps {
  readonly clusterName: string;
  readonly logger: Logger;
  /** One provisioning run under the given lease holder (the invocation id). */
  readonly provision: (holder: string) => Promise<ProvisionResult>;
  /** The controllers pass (EC2NodeClasses, NodeClaim lifecycle, NodePools) run after provisioning. */
  readonly reconcileLifecycle?: (holder: string) => Promise<{ readonly uninitialized: readonly string[] }>;
  /**
   * Asks for another invocation soon (a delayed follow-up message) because these NodeClaims have
   * not initialized yet; when absent, the pending-pods schedule is the next chance.
   */
  readonly scheduleFollowUp?: (holder: string, nodeClaims: readonly string[]) => Promise<void>;
}

/** The Lambda entry point's logic: one provisioning run per invocation, whatever triggered it. */
export function makeProvisionerHandler(deps: ProvisionerDeps) {
  const { logger } = deps;
  async function run(holder: string): Promise<ProvisionResult> {
    const result = await deps.provision(holder);
    if (deps.reconcileLifecycle === undefined) return result;
    const lifecycle = await deps.reconcileLifecycle(holder);
    if (lifecycle.uninitialized.length > 0 && deps.scheduleFollowUp !== undefined) {
      try {
        await deps.scheduleFollowUp(holder, lifecycle.uninitialized);
      } catch (error) {
        // The run itself succeeded; without the follow-up the schedule registers the Nodes later.
        logger.error('follow-up not scheduled', {
          error,
          nodeClaims: lifecycle.uninitialized.slice(0, 10),
          fallback: 'pending-pods schedule',
        });
      }
    }
    return result;
  }

  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<BatchResponse | ProvisionResult | { readonly kind: 'ignored' }> {
    const holder = context?.awsRequestId ?? randomUUID();
    const trigger = parseTrigger(event, deps.clusterName);
    switch (trigger.kind) {
      case 'schedule':
        // Errors propagate: the schedule's retries and on-failure queue take over.
        return run(holder);
      case 'podEvents': {
        for (const r of trigger.rejected) {
          logger.warn('pod event rejected', { messageId: r.messageId, problem: r.problem });
        }
        const failures = trigger.rejected.map((r) => ({ itemIdentifier: r.messageId }));
        if (trigger.events.length === 0 && trigger.followUps.length === 0)
          return { batchItemFailures: failures };
        try {
          await run(holder);
        } catch (error) {
          logger.error('provisioning failed', {
            error,
            pods: trigger.events.slice(0, 10).map((e) => `${e.event.namespace}/${e.event.name}`),
          });
          // Valid messages go back to the queue: the next delivery triggers another run.
          return {
            batchItemFailures: [
              ...failures,
              ...[...trigger.events, ...trigger.followUps].map((e) => ({ itemIdentifier: e.messageId })),
            ],
          };
        }
        return { batchItemFailures: failures };
      }
      case 'unknown':
        logger.warn('event ignored', { why: 'neither an SQS batch nor an EventBridge schedule' });
        return { kind: 'ignored' };
    }
  };
}
