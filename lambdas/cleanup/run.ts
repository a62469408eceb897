import { z } from 'zod';
import type { ClusterResources } from '../../shared/ports/cluster-resources.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { MetricsSink } from '../../shared/usecases/decisions/decision.ts';
import {
  type CleanUpResult,
  cleanUpCluster,
} from '../../shared/usecases/garbage-collection/cluster-cleanup.ts';

// The clean-up Lambda's event handling, apart from the cold-start wiring in handler.ts. Two events
// clean up (shared/usecases/garbage-collection/cluster-cleanup.ts): the stack's custom resource
// being deleted with the stack (`cdk destroy`: CloudFormation says the stack is DELETE_IN_PROGRESS;
// an update or a rollback that removes the resource, or a resource whose `onDelete` is `keep`,
// cleans nothing up), answered to CloudFormation as a Lambda-backed custom resource answers
// (SUCCESS, or FAILED with why, so that a clean-up that failed stops the deletion instead of
// leaving instances behind in silence), and EKS's DeleteCluster of this cluster as CloudTrail
// reports it (only a call that succeeded). Every other event is logged and left alone.

export interface CleanUpDeps {
  readonly clusterName: string;
  readonly resources: ClusterResources;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /** Sends CloudFormation the custom resource's answer (an HTTPS PUT of the JSON body). */
  readonly respond: (url: string, body: string) => Promise<void>;
  /** A stack's status by its id (DescribeStacks). */
  readonly stackStatus: (stackId: string) => Promise<string | undefined>;
}

/** Sends CloudFormation's pre-signed answer URL the answer: a PUT with no content type. */
export async function answerCloudFormation(url: string, body: string): Promise<void> {
  const response = await fetch(url, { method: 'PUT', body, headers: { 'content-type': '' } });
  if (!response.ok) throw new Error(`CloudFormation refused the answer: HTTP ${response.status}`);
}

/** Stack statuses in which the stack itself is being (or has been) deleted. */
const STACK_DELETED: ReadonlySet<string> = new Set(['DELETE_IN_PROGRESS', 'DELETE_COMPLETE']);

const CustomResourceEvent = z.object({
  RequestType: z.enum(['Create', 'Update', 'Delete']),
  ResponseURL: z.url(),
  StackId: z.string(),
  RequestId: z.string(),
  LogicalResourceId: z.string(),
  PhysicalResourceId: z.string().optional(),
  ResourceProperties: z
    .object({ cluster: z.string().optional(), onDelete: z.string().optional() })
    .loose()
    .default({}),
});

const DeleteClusterEvent = z.object({
  source: z.literal('aws.eks'),
  'detail-type': z.literal('AWS API Call via CloudTrail'),
  detail: z.object({
    eventName: z.literal('DeleteCluster'),
    errorCode: z.string().optional(),
    requestParameters: z.object({ name: z.string() }),
  }),
});

export type CleanUpOutcome =
  | { readonly kind: 'cleaned'; readonly result: CleanUpResult }
  | { readonly kind: 'ignored'; readonly why: string }
  /** The clean-up failed and CloudFormation was told so (FAILED): the deletion stops there. */
  | { readonly kind: 'failed'; readonly why: string };

export function makeCleanUpHandler(deps: CleanUpDeps) {
  const { clusterName, logger } = deps;
  const ports = { resources: deps.resources, logger, metrics: deps.metrics };
  return async function handler(event: unknown): Promise<CleanUpOutcome> {
    const resource = CustomResourceEvent.safeParse(event);
    if (resource.success) {
      const request = resource.data;
      const answer = (status: 'SUCCESS' | 'FAILED', reason: string) =>
        deps.respond(
          request.ResponseURL,
          JSON.stringify({
            Status: status,
            Reason: reason,
            PhysicalResourceId: request.PhysicalResourceId ?? `flotilla-cleanup-${clusterName}`,
            StackId: request.StackId,
            RequestId: request.RequestId,
            LogicalResourceId: request.LogicalResourceId,
          }),
        );
      if (request.RequestType !== 'Delete') {
        await answer('SUCCESS', `nothing to do on ${request.RequestType}`);
        return { kind: 'ignored', why: `custom resource ${request.RequestType}` };
      }
      try {
        const keep = await keepsInstances(deps, request.StackId, request.ResourceProperties);
        if (keep !== undefined) {
          logger.warn('cluster clean-up skipped', { reason: keep });
          await answer('SUCCESS', `nothing removed: ${keep}`);
          return { kind: 'ignored', why: keep };
        }
        const result = await cleanUpCluster(ports, clusterName, 'stackDeleted');
        await answer(
          'SUCCESS',
          `terminated ${result.instances.length} instances and deleted ${result.launchTemplates.length} launch templates`,
        );
        return { kind: 'cleaned', result };
      } catch (error) {
        // CloudFormation has the failure and stops the deletion: the invocation itself ends here,
        // not retried by Lambda (a retry would find the stack DELETE_FAILED and remove nothing).
        const why = error instanceof Error ? error.message : String(error);
        logger.error('cluster clean-up failed', { error: why, retry: 'delete the stack again' });
        await answer('FAILED', `clean-up of cluster ${clusterName} failed: ${why}`.slice(0, 1000));
        return { kind: 'failed', why };
      }
    }
    const deleted = DeleteClusterEvent.safeParse(event);
    if (deleted.success) {
      const { detail } = deleted.data;
      if (detail.requestParameters.name !== clusterName) {
        return ignored(logger, `DeleteCluster of another cluster (${detail.requestParameters.name})`);
      }
      if (detail.errorCode !== undefined) {
        return ignored(logger, `DeleteCluster of ${clusterName} was refused (${detail.errorCode})`);
      }
      return { kind: 'cleaned', result: await cleanUpCluster(ports, clusterName, 'clusterDeleted') };
    }
    return ignored(logger, 'neither the stack deleting its clean-up resource nor EKS deleting the cluster');
  };
}

/**
 * Why the custom resource's deletion removes nothing, or undefined when it is the stack's own
 * deletion for this cluster with `onDelete: cleanUp`.
 */
async function keepsInstances(
  deps: CleanUpDeps,
  stackId: string,
  properties: { readonly cluster?: string | undefined; readonly onDelete?: string | undefined },
): Promise<string | undefined> {
  if (properties.onDelete !== 'cleanUp') {
    return `the stack was deployed with cleanUpOnDestroy false (onDelete: ${properties.onDelete ?? 'none'})`;
  }
  if (properties.cluster !== deps.clusterName) {
    return `the resource names cluster ${properties.cluster ?? 'none'}, not ${deps.clusterName}`;
  }
  const status = await deps.stackStatus(stackId);
  if (status === undefined || !STACK_DELETED.has(status)) {
    return `the stack is ${status ?? 'not found'}, not being deleted: an update or a rollback removed the resource`;
  }
  return undefined;
}

function ignored(logger: Logger, why: string): CleanUpOutcome {
  logger.warn('event ignored', { why });
  return { kind: 'ignored', why };
}
