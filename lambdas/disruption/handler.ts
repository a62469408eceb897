import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { makeDisruptionPassQueue } from '../../shared/adapters/aws/disruption-passes.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeLaunchRequester } from '../../shared/adapters/aws/follow-up.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { passIntervalProblem } from '../../shared/messages/disruption-pass.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { schedulingPolicyEnv, schedulingPolicyOf } from '../../shared/runtime/scheduling-policy.ts';
import { setUpDisruption } from '../../shared/usecases/disruption/setup.ts';
import { gateSwitch, loadEnv, providerEnv, providerSettingsOf, wire } from '../common/wiring.ts';
import { makeDisruptionHandler } from './run.ts';

const config = loadEnv('disruption', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-disruption'),
  [EnvVar.podEventQueueUrl]: z.url(),
  [EnvVar.terminationQueueUrl]: z.url(),
  /** Optional: without it, a pass per schedule tick only. */
  [EnvVar.disruptionQueueUrl]: z.url().optional(),
  [EnvVar.disruptionIntervalSeconds]: z.coerce
    .number()
    .superRefine((seconds, ctx) => {
      const problem = passIntervalProblem(seconds);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    })
    .default(60),
  ...schedulingPolicyEnv,
  [EnvVar.spotToSpotConsolidation]: gateSwitch('SpotToSpotConsolidation'),
  [EnvVar.nodeOverlay]: gateSwitch('NodeOverlay'),
  ...providerEnv,
});

// Built once per cold start.
const clusterName = config[EnvVar.clusterName];
const { logger, metrics, clients, sqs, cluster, cloud, deadlineMs, withDeadline } = await wire(
  'disruption',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
  providerSettingsOf(config),
);
const leases = new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]);
const terminationQueue = makeSqsTerminationQueue(sqs, config[EnvVar.terminationQueueUrl]);
const requestLaunch = makeLaunchRequester({
  sqs,
  queueUrl: config[EnvVar.podEventQueueUrl],
  clusterName,
  clock: systemClock,
});

const disruptionQueueUrl = config[EnvVar.disruptionQueueUrl];

/**
 * Disruption schedule and disruption queue target: keeps the NodeClaim conditions, expires NodeClaims, moves disruption
 * commands on and starts new ones (emptiness, then drift) within the NodePools' budgets.
 */
export const handler = withDeadline(
  makeDisruptionHandler({
    clusterName,
    ...setUpDisruption(
      { cluster, cloud, leases, clock: systemClock, sleep, logger, metrics, terminationQueue, requestLaunch },
      {
        leaseName: `disruption#${clusterName}`,
        deadlineMs,
        solveOptions: schedulingPolicyOf(config),
        spotToSpotConsolidation: config[EnvVar.spotToSpotConsolidation],
        nodeOverlay: config[EnvVar.nodeOverlay],
      },
    ),
    ...(disruptionQueueUrl === undefined
      ? {}
      : {
          between: {
            intervalSeconds: config[EnvVar.disruptionIntervalSeconds],
            send: makeDisruptionPassQueue(sqs, disruptionQueueUrl),
            clock: systemClock,
          },
        }),
  }),
);
