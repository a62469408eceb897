import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type FollowUp, followUpVersion } from '../../messages/pod-event.ts';
import type { Clock } from '../../ports/clock.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import { toCloudApiError } from './errors.ts';

export interface FollowUpSchedulerOptions {
  readonly sqs: SQSClient;
  /** The pod-event queue: the provisioner's own trigger. */
  readonly queueUrl: string;
  readonly clusterName: string;
  /** Keeps one follow-up in flight per cluster however many invocations ask. */
  readonly leases: LeaseStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * How long SQS holds the message back (0–900) when the caller names no delay.
   * @default FOLLOW_UP_DELAY_SECONDS
   */
  readonly delaySeconds?: number;
}

/**
 * Seconds between lifecycle passes while launched NodeClaims wait for their Nodes: the longest a
 * joined Node keeps its `karpenter.sh/unregistered` taint, so it bounds the wait of pods bound
 * for it. Each pass is a short invocation, only while claims are on their way.
 */
export const FOLLOW_UP_DELAY_SECONDS = 5;

/**
 * Sends the provisioner a delayed follow-up message on its own queue. A lease per delay
 * (`follow-up#<cluster>`, or `follow-up#<cluster>#<delay>s` for another delay than the default,
 * expiring just before the message is delivered) keeps concurrent invocations from each starting a
 * chain of follow-ups; the invocation the message triggers may then schedule the next one.
 * @returns a function for `ProvisionerDriverDeps.scheduleFollowUp`: it sends the message with the
 *   delay asked for (the driver's decideFollowUp; else the configured one) and resolves to it, or
 *   to undefined when a follow-up is already on its way. The decision line is the driver's.
 * @throws RangeError when a delay is not an integer from 0 to 900 (the SQS limit).
 */
export function makeFollowUpScheduler(options: FollowUpSchedulerOptions) {
  const checked = (delaySeconds: number) => {
    if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > 900) {
      throw new RangeError(
        `follow-up delay ${delaySeconds} s must be an integer from 0 to 900 (the SQS limit)`,
      );
    }
    return delaySeconds;
  };
  const defaultDelay = checked(options.delaySeconds ?? FOLLOW_UP_DELAY_SECONDS);
  const leaseName = `follow-up#${options.clusterName}`;
  return async (
    holder: string,
    nodeClaims: readonly string[],
    delay?: number,
  ): Promise<{ readonly delaySeconds: number } | undefined> => {
    const delaySeconds = delay === undefined ? defaultDelay : checked(delay);
    const now = options.clock.now();
    // One lease per delay: a long follow-up for old NodeClaims never holds back the short one a
    // NodeClaim launched meanwhile needs, and the few delays the driver uses bound the chains.
    const lease = await options.leases.acquire(
      delaySeconds === defaultDelay ? leaseName : `${leaseName}#${delaySeconds}s`,
      holder,
      now,
      Math.max(1, delaySeconds - 1),
    );
    if (lease === undefined) {
      options.logger.debug('follow-up already scheduled', { nodeClaims: nodeClaims.length });
      return undefined;
    }
    const body: FollowUp = {
      version: followUpVersion,
      kind: 'LifecycleFollowUp',
      cluster: options.clusterName,
      nodeClaims: nodeClaims.slice(0, 50),
      requestedAt: now.toISOString(),
    };
    try {
      await options.sqs.send(
        new SendMessageCommand({
          QueueUrl: options.queueUrl,
          MessageBody: JSON.stringify(body),
          DelaySeconds: delaySeconds,
        }),
      );
    } catch (error) {
      // Let another invocation try at once rather than after the lease expires.
      await options.leases.release(lease);
      throw toCloudApiError('SendMessage (provisioner follow-up)', error);
    }
    return { delaySeconds };
  };
}

/**
 * Asks the provisioner, through its own queue and without delay, to launch NodeClaims another
 * controller created (the disruption controller's replacements): the message is a follow-up, so
 * the provisioner's invocation launches unlaunched NodeClaims and runs its lifecycle pass.
 */
export function makeLaunchRequester(
  options: Pick<FollowUpSchedulerOptions, 'sqs' | 'queueUrl' | 'clusterName' | 'clock'>,
) {
  return async (nodeClaims: readonly string[]): Promise<void> => {
    const body: FollowUp = {
      version: followUpVersion,
      kind: 'LifecycleFollowUp',
      cluster: options.clusterName,
      nodeClaims: nodeClaims.slice(0, 50),
      requestedAt: options.clock.now().toISOString(),
    };
    try {
      await options.sqs.send(
        new SendMessageCommand({ QueueUrl: options.queueUrl, MessageBody: JSON.stringify(body) }),
      );
    } catch (error) {
      throw toCloudApiError('SendMessage (launch request)', error);
    }
  };
}
