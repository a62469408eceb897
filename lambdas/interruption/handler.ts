import { z } from 'zod';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeInstanceHealthReader } from '../../shared/adapters/aws/instance-status.ts';
import { makeNodeDeletionSender } from '../../shared/adapters/aws/node-deletion.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { setUpInterruption } from '../../shared/usecases/interruption/setup.ts';
import { loadEnv, wire } from '../common/wiring.ts';
import { makeInterruptionHandler } from './run.ts';

const config = loadEnv('interruption', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-interruption'),
  [EnvVar.terminationQueueUrl]: z.url(),
  [EnvVar.rebalanceAction]: z.enum(['event', 'drain']).default('event'),
  /** Optional: without it, the shim alone tells the provisioner of the deletions. */
  [EnvVar.podEventQueueUrl]: z.url().optional(),
});

// Built once per cold start.
const { logger, metrics, clients, sqs, cluster, cloud, withDeadline } = await wire(
  'interruption',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);
const terminationQueue = makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]);
const podEventQueueUrl = config[EnvVar.podEventQueueUrl];
const reportDeletion =
  podEventQueueUrl === undefined
    ? undefined
    : makeNodeDeletionSender({
        sqs,
        queueUrl: podEventQueueUrl,
        clusterName: config[EnvVar.clusterName],
        clock: systemClock,
      });

/**
 * Interruption-queue target: EC2 spot interruption warnings, rebalance recommendations, instance
 * state changes, AWS Health scheduled changes and capacity-reservation interruptions become
 * graceful NodeClaim deletions whose drain starts on the termination queue, and the provisioner is
 * told at once so the replacements launch while the drain runs. Instance-status schedule target:
 * EC2's failed status checks (2 minutes) and scheduled events do the same (forcefully for a failed
 * check).
 */
export const handler = withDeadline(
  makeInterruptionHandler(
    setUpInterruption(
      {
        cluster,
        cloud,
        terminationQueue,
        logger,
        metrics,
        ...(reportDeletion === undefined ? {} : { reportDeletion }),
        readHealth: makeInstanceHealthReader(clients.ec2),
        clock: systemClock,
        eventLeases: {
          store: new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]),
          clusterName: config[EnvVar.clusterName],
          clock: systemClock,
        },
      },
      { rebalance: config[EnvVar.rebalanceAction] },
    ),
  ),
);
