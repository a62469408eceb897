import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { CoreV1Api, type Informer, type KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';
import { type PodEvent, podEventVersion } from '../../shared/messages/pod-event.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { BatchForwarder } from './forwarder.ts';
import { UnschedulableTracker } from './unschedulable.ts';

export interface ShimOptions {
  readonly kubeConfig: KubeConfig;
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly clusterName: string;
  readonly logger: Logger;
  /** Quiet time before a batch of events is sent. @default 250 */
  readonly idleMs?: number;
  /** Longest an event waits in a burst. @default 1000 */
  readonly maxWaitMs?: number;
}

export interface Shim {
  /** Events sent so far. */
  readonly sent: () => number;
  /** Stops watching and sends what is still pending. */
  stop(): Promise<void>;
}

/**
 * Watches every pod and sends a small, versioned event to the pod-event queue each time a pod
 * becomes unschedulable, so the provisioner starts within seconds instead of at its next poll.
 * Events are batched (SendMessageBatch) after a short quiet time; a lost watch reconnects with
 * exponential backoff, and a queue that cannot be reached is retried without losing events.
 */
export function startShim(options: ShimOptions): Shim {
  const { logger } = options;
  const tracker = new UnschedulableTracker();
  let sent = 0;
  const forwarder = new BatchForwarder<PodEvent>({
    send: async (batch) => {
      const result = await options.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: options.queueUrl,
          Entries: batch.map((event, index) => ({ Id: String(index), MessageBody: JSON.stringify(event) })),
        }),
      );
      const failed = result.Failed ?? [];
      if (failed.length > 0) {
        throw new Error(
          `SQS refused ${failed.length} of ${batch.length} pod events: ${failed[0]?.Code} ${failed[0]?.Message}`,
        );
      }
      sent += batch.length;
      logger.info('forwarded pod events', { count: batch.length, pods: batch.slice(0, 10).map(podRef) });
    },
    ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
    ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
    onError: (error, pending, retryInMs) =>
      logger.warn('sending pod events failed; retrying', { error, pending, retryInMs }),
    onDrop: (dropped) => logger.error('dropped pod events: queue unreachable for too long', { dropped }),
  });

  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const informer: Informer<V1Pod> = makeInformer(options.kubeConfig, '/api/v1/pods', () =>
    core.listPodForAllNamespaces(),
  );
  const consider = (pod: V1Pod) => {
    if (!tracker.observe(pod)) return;
    forwarder.add({
      version: podEventVersion,
      kind: 'PodUnschedulable',
      cluster: options.clusterName,
      namespace: pod.metadata?.namespace ?? 'default',
      name: pod.metadata?.name ?? '',
      uid: pod.metadata?.uid ?? '',
      observedAt: new Date().toISOString(),
    });
  };
  informer.on('add', consider);
  informer.on('update', consider);
  informer.on('delete', (pod) => tracker.forget(pod));

  let stopped = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  informer.on('connect', () => {
    if (failures > 0) logger.info('pod watch reconnected', { after: failures });
    failures = 0;
  });
  informer.on('error', (error) => {
    if (stopped) return;
    failures += 1;
    const base = Math.min(30_000, 500 * 2 ** (failures - 1));
    const retryInMs = Math.round(base / 2 + Math.random() * (base / 2));
    logger.warn('pod watch failed; reconnecting', { error, attempt: failures, retryInMs });
    retry = setTimeout(() => {
      informer
        .start()
        .catch((startError: unknown) => logger.warn('pod watch restart failed', { error: startError }));
    }, retryInMs);
  });
  informer.start().catch((error: unknown) => logger.warn('pod watch start failed', { error }));
  logger.info('shim started', { cluster: options.clusterName, queueUrl: options.queueUrl });

  return {
    sent: () => sent,
    stop: async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      await informer.stop();
      await forwarder.close();
      logger.info('shim stopped', { sent });
    },
  };
}

function podRef(event: PodEvent): string {
  return `${event.namespace}/${event.name}`;
}
