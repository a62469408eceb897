import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { sweepTerminations, terminateNodeClaim } from '../../shared/usecases/termination/termination.ts';
import { loadEnv, wire } from '../common/wiring.ts';
import { makeTerminationHandler } from './run.ts';

const config = loadEnv('termination', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-termination'),
  [EnvVar.terminationQueueUrl]: z.url(),
});

/** Passes over one NodeClaim per invocation; well inside the function's 2-minute timeout. */
const BUDGET_MS = 60_000;

// Built once per cold start.
const { logger, sqs, cluster, cloud, withDeadline } = await wire(
  'termination',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);
const queue = makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]);

/**
 * Termination-queue and garbage-collection schedule target: cordons, drains (PDB-aware, in
 * Karpenter's tiers, bounded by terminationGracePeriod), waits for volumes, terminates the
 * instance and releases the finalizers; a drain that outlives the invocation continues through a
 * delayed message.
 */
export const handler = withDeadline(
  makeTerminationHandler({
    logger,
    terminate: (name) => terminateNodeClaim({ cluster, cloud, logger }, name, systemClock.now()),
    enqueue: (nodeClaim, delaySeconds) => queue.enqueue({ nodeClaim }, delaySeconds),
    terminatingNodeClaims: async () => (await sweepTerminations({ cluster, cloud, logger })).terminating,
    sleep: (ms) => sleep(ms),
    nowMs: () => Date.now(),
    budgetMs: BUDGET_MS,
  }),
);
