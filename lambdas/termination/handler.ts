import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { setUpTermination } from '../../shared/usecases/termination/setup.ts';
import { loadEnv, wire } from '../common/wiring.ts';
import { makeTerminationHandler } from './run.ts';

const config = loadEnv('termination', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-termination'),
  [EnvVar.terminationQueueUrl]: z.url(),
});

// Built once per cold start.
const { logger, metrics, sqs, cluster, cloud, withDeadline } = await wire(
  'termination',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);

/**
 * Termination-queue and garbage-collection schedule target: cordons, drains (PDB-aware, in
 * Karpenter's tiers, bounded by terminationGracePeriod), waits for volumes, terminates the
 * instance and releases the finalizers; a drain that outlives the invocation continues through a
 * delayed message.
 */
export const handler = withDeadline(
  makeTerminationHandler(
    setUpTermination({
      cluster,
      cloud,
      logger,
      metrics,
      terminationQueue: makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]),
      clock: systemClock,
      sleep: (ms) => sleep(ms),
    }),
  ),
);
