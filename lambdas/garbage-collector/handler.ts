import { z } from 'zod';
import { makeImpairedInstanceReader } from '../../shared/adapters/aws/instance-status.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { setUpGarbageCollector } from '../../shared/usecases/garbage-collection/setup.ts';
import { viaQueue } from '../../shared/usecases/termination/handover.ts';
import { loadEnv, nodeRepairSwitch, wire } from '../common/wiring.ts';
import { makeGarbageCollectorHandler } from './run.ts';

const config = loadEnv('garbage-collector', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-garbage-collector'),
  [EnvVar.terminationQueueUrl]: z.url(),
  [EnvVar.nodeRepair]: nodeRepairSwitch,
});

// Built once per cold start.
const { logger, metrics, clients, sqs, cluster, cloud, withDeadline, deadlineMs } = await wire(
  'garbage-collector',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);
const queue = makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]);

/**
 * Garbage-collection schedule target: terminates instances this cluster launched that no NodeClaim
 * accounts for (older than 30 s), and deletes NodeClaims whose instance is gone, handing them to
 * termination; reports NodeClaims whose Node contradicts them (FailedConsistencyCheck); with node
 * repair on, then replaces nodes unhealthy past their toleration.
 */
export const handler = withDeadline(
  makeGarbageCollectorHandler(
    setUpGarbageCollector(
      {
        cluster,
        cloud,
        logger,
        metrics,
        clock: systemClock,
        requestTermination: viaQueue(queue),
        impairedInstances: makeImpairedInstanceReader(clients.ec2),
        deadlineMs,
      },
      { nodeRepair: config[EnvVar.nodeRepair] },
    ),
  ),
);
