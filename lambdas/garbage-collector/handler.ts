import { z } from 'zod';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { collectGarbage } from '../../shared/usecases/garbage-collection.ts';
import { loadEnv, wire } from '../common/wiring.ts';
import { makeGarbageCollectorHandler } from './run.ts';

const config = loadEnv('garbage-collector', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-garbage-collector'),
  [EnvVar.terminationQueueUrl]: z.url(),
});

// Built once per cold start.
const { logger, sqs, cluster, cloud, withDeadline } = await wire(
  'garbage-collector',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);
const queue = makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]);

/**
 * Garbage-collection schedule target: terminates instances this cluster launched that no NodeClaim
 * accounts for (older than 30 s), and deletes NodeClaims whose instance is gone, handing them to
 * termination.
 */
export const handler = withDeadline(
  makeGarbageCollectorHandler({
    logger,
    pass: () =>
      collectGarbage(
        { cluster, cloud, logger, requestTermination: (nodeClaim) => queue.enqueue({ nodeClaim }, 0) },
        systemClock.now(),
      ),
  }),
);
