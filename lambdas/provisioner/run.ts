import { randomUUID } from 'node:crypto';
import type { Decoded } from '../../shared/messages/decoded.ts';
import {
  parseQueueMessage,
  type QueueMessage,
  queueMessageCluster,
} from '../../shared/messages/pod-event.ts';
import {
  type ProvisionerDriverDeps,
  provisionForMessages,
  runProvisioner,
} from '../../shared/usecases/provisioning/driver.ts';
import type { ProvisionResult } from '../../shared/usecases/provisioning/provision.ts';
import { type BatchResponse, isScheduleEvent, parseSqsBatch, processPartialResponse } from '../common/sqs.ts';

// The provisioner's event handling, apart from the cold-start wiring in handler.ts so it can be
// tested with real event JSON. The invocation's work is the use case's
// (shared/usecases/provisioning/driver.ts).

export interface ProvisionerDeps extends ProvisionerDriverDeps {
  readonly clusterName: string;
}

/**
 * Decodes one pod-event queue body (a pod event or a node deletion from the shim, or a follow-up
 * from the provisioner); a message for another cluster is rejected like a malformed one.
 */
export function decodeQueueMessage(body: string, clusterName: string): Decoded<QueueMessage> {
  const parsed = parseQueueMessage(body);
  if (!parsed.ok) return parsed;
  const message = parsed.message;
  const cluster = queueMessageCluster(message);
  if (cluster === clusterName) return parsed;
  return {
    ok: false,
    problem: `message is for cluster "${cluster}", this provisioner serves "${clusterName}"`,
  };
}

/**
 * Pod-event queue (SQS batch) and pending-pods schedule (EventBridge) target: one provisioner
 * invocation (provisioning, the controllers pass, a follow-up while NodeClaims initialize) per
 * Lambda invocation, holding the lease as the invocation. Malformed messages are batch item
 * failures; when the run fails every valid message is, so the queue triggers another; schedule
 * failures propagate to the schedule's retries.
 */
export function makeProvisionerHandler(deps: ProvisionerDeps) {
  const { logger } = deps;
  return async function handler(
    event: unknown,
    context?: { readonly awsRequestId?: string },
  ): Promise<BatchResponse | ProvisionResult | { readonly kind: 'ignored' }> {
    const holder = context?.awsRequestId ?? randomUUID();
    const batch = parseSqsBatch(event);
    if (batch !== undefined) {
      return processPartialResponse(batch, {
        logger,
        decode: (body) => decodeQueueMessage(body, deps.clusterName),
        rejected: 'pod event rejected',
        handle: (items) => provisionForMessages(deps, holder, items),
      });
    }
    if (isScheduleEvent(event)) return runProvisioner(deps, holder);
    logger.warn('event ignored', { why: 'neither an SQS batch nor an EventBridge schedule' });
    return { kind: 'ignored' };
  };
}
