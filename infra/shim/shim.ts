import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { RawApi } from '../../shared/adapters/kube/http.ts';
import {
  type NodeDeletion,
  nodeDeletionVersion,
  type StandaloneNodeClaimMessage,
  standaloneNodeClaimVersion,
} from '../../shared/messages/node-deletion.ts';
import { type PodEvent, podEventVersion } from '../../shared/messages/pod-event.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { DeletionTracker, type WatchedObject } from './deletions.ts';
import { BatchForwarder } from './forwarder.ts';
import { StandaloneTracker, type WatchedNodeClaim } from './standalone.ts';
import { type SummaryKeeper, startSummaryKeeper } from './summary.ts';
import type { StoreSummaryObject } from './summary-publish.ts';
import { UnschedulableTracker } from './unschedulable.ts';

export interface ShimOptions {
  /** The API server, with the shim's ServiceAccount (kube-access.ts). */
  readonly api: RawApi;
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly clusterName: string;
  readonly logger: Logger;
  /**
   * Stores one object of the cluster summary (gzipped JSON: the whole document, or the changes since
   * it, summary-publish.ts) where the Lambdas read it, and gives the store's ETag. Without it the
   * summary is kept but not published (the Lambdas then read the API server). `metadata` goes
   * with it as the object's user metadata (summary-metadata.ts).
   */
  readonly publishSummary?: StoreSummaryObject;
  /** Quiet time before a batch of events is sent. @default 250 */
  readonly idleMs?: number;
  /** Longest an event waits in a burst. @default 1000 */
  readonly maxWaitMs?: number;
  /** Passed to the summary keeper (tests shorten them). */
  readonly summary?: {
    readonly minIntervalMs?: number;
    readonly heartbeatMs?: number;
    readonly relistEveryMs?: number;
  };
}

export interface Shim {
  /** Events sent so far. */
  readonly sent: () => number;
  readonly summary: SummaryKeeper;
  /** Stops watching and sends what is still pending. */
  stop(): Promise<void>;
}

/**
 * The shim's two jobs, on one set of watches: it sends a small, versioned event to the pod-event
 * queue each time a pod becomes unschedulable, a Node or NodeClaim starts being deleted, or a
 * standalone NodeClaim appears without an instance, so the
 * provisioner starts within seconds instead of at its next poll (batched with SendMessageBatch after a short quiet time, retried without losing
 * events while the queue cannot be reached); and it keeps and publishes the cluster summary
 * (summary.ts), so no Lambda lists the whole cluster. A lost watch lists again with backoff.
 */
export function startShim(options: ShimOptions): Shim {
  const { logger } = options;
  const tracker = new UnschedulableTracker();
  const deletions = new DeletionTracker();
  const standalone = new StandaloneTracker();
  let sent = 0;
  const forwarder = new BatchForwarder<PodEvent | NodeDeletion | StandaloneNodeClaimMessage>({
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
      const pods = batch.flatMap((e) => (e.kind === 'PodUnschedulable' ? [podRef(e)] : []));
      const deleting = batch.flatMap((e) => (e.kind === 'NodeDeleting' ? [`${e.object}/${e.name}`] : []));
      if (pods.length > 0)
        logger.info('forwarded pod events', { count: pods.length, pods: pods.slice(0, 10) });
      if (deleting.length > 0) {
        logger.info('forwarded node deletions', { count: deleting.length, objects: deleting.slice(0, 10) });
      }
      const standalones = batch.flatMap((e) => (e.kind === 'StandaloneNodeClaim' ? [e.name] : []));
      if (standalones.length > 0) {
        logger.info('forwarded standalone NodeClaims', {
          count: standalones.length,
          nodeClaims: standalones.slice(0, 10),
        });
      }
    },
    ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
    ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
    onError: (error, pending, retryInMs) =>
      logger.warn('sending pod events failed; retrying', { error, pending, retryInMs }),
    onDrop: (dropped) => logger.error('dropped pod events: queue unreachable for too long', { dropped }),
  });

  const onPod = (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: unknown) => {
    const raw = pod as Parameters<UnschedulableTracker['observe']>[0];
    if (type === 'DELETED') {
      tracker.forget(raw);
      return;
    }
    if (!tracker.observe(raw)) return;
    forwarder.add({
      version: podEventVersion,
      kind: 'PodUnschedulable',
      cluster: options.clusterName,
      namespace: raw.metadata?.namespace ?? 'default',
      name: raw.metadata?.name ?? '',
      uid: raw.metadata?.uid ?? '',
      observedAt: new Date().toISOString(),
    });
  };

  // A Node or NodeClaim whose deletion begins: the provisioner plans for its pods at once, as for a
  // pod turned unschedulable, while the drain waits.
  const onObject = (
    kind: 'nodes' | 'nodeClaims',
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: unknown,
  ) => {
    // A standalone NodeClaim without an instance yet: the provisioner launches it at once.
    const waiting = kind === 'nodeClaims' ? standalone.observe(type, object as WatchedNodeClaim) : undefined;
    if (waiting !== undefined) {
      forwarder.add({
        version: standaloneNodeClaimVersion,
        kind: 'StandaloneNodeClaim',
        cluster: options.clusterName,
        ...waiting,
        observedAt: new Date().toISOString(),
      });
    }
    const deletion = deletions.observe(kind, type, object as WatchedObject);
    if (deletion === undefined) return;
    forwarder.add({
      version: nodeDeletionVersion,
      kind: 'NodeDeleting',
      cluster: options.clusterName,
      ...deletion,
      observedAt: new Date().toISOString(),
    });
  };

  let warnedUnpublished = false;
  const summary = startSummaryKeeper({
    api: options.api,
    cluster: options.clusterName,
    logger,
    onPod,
    onPodsListed: (uids) => tracker.retain(uids),
    onObject,
    onObjectsListed: (kind, uids) => {
      deletions.retain(kind, uids);
      if (kind === 'nodeClaims') standalone.retain(uids);
    },
    publish:
      options.publishSummary ??
      (async () => {
        if (warnedUnpublished) return undefined;
        warnedUnpublished = true;
        logger.warn('cluster summary not published', {
          why: `${'FLOTILLA_SUMMARY_BUCKET'} is not set`,
          effect: 'the Lambdas list the cluster from the API server',
        });
        return undefined;
      }),
    ...options.summary,
  });
  logger.info('shim started', { cluster: options.clusterName, queueUrl: options.queueUrl });

  return {
    sent: () => sent,
    summary,
    stop: async () => {
      await summary.stop();
      await forwarder.close();
      logger.info('shim stopped', { sent });
    },
  };
}

function podRef(event: PodEvent): string {
  return `${event.namespace}/${event.name}`;
}
