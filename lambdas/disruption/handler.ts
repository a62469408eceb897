import { setTimeout as sleep } from 'node:timers/promises';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { z } from 'zod';
import { makeAlarmReader } from '../../shared/adapters/aws/alarms.ts';
import { awsClientConfig } from '../../shared/adapters/aws/clients.ts';
import { makeDisruptionPassQueue } from '../../shared/adapters/aws/disruption-passes.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeLaunchRequester } from '../../shared/adapters/aws/follow-up.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { ValidationError } from '../../shared/core/errors.ts';
import { passIntervalProblem } from '../../shared/messages/disruption-pass.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import {
  disruptionSolveOptionsOf,
  kubeSchedulerEnv,
  schedulingPolicyEnv,
} from '../../shared/runtime/scheduling-policy.ts';
import { onByDefaultSetting, switchSetting } from '../../shared/runtime/switch.ts';
import { setUpDisruption, shadowQueues } from '../../shared/usecases/disruption/setup.ts';
import { gateSwitch, loadEnv, providerEnv, providerSettingsOf, wire } from '../common/wiring.ts';
import { makeDisruptionHandler } from './run.ts';

const config = loadEnv('disruption', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-disruption'),
  /** Both queues are a live stack's: a shadow stack's disruption launches and terminates nothing. */
  [EnvVar.podEventQueueUrl]: z.url().optional(),
  [EnvVar.terminationQueueUrl]: z.url().optional(),
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
  [EnvVar.repackConsolidation]: switchSetting,
  ...kubeSchedulerEnv,
  [EnvVar.runawayGuard]: onByDefaultSetting,
  ...providerEnv,
});

// Built once per cold start.
const clusterName = config[EnvVar.clusterName];
const { shadow, logger, metrics, clients, sqs, cluster, cloud, deadlineMs, withDeadline } = await wire(
  'disruption',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
  providerSettingsOf(config),
);
const leases = new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]);
// The alarms NodePools name to hold their rollouts (flotilla.io/rollout-alarms); read only when one does.
const alarms = makeAlarmReader(new CloudWatchClient(awsClientConfig({ region: config.AWS_REGION, logger })));
const queues = shadow
  ? shadowQueues()
  : liveQueues(config[EnvVar.terminationQueueUrl], config[EnvVar.podEventQueueUrl]);

/** A live stack's queues: termination requests, and launches of replacements (both required). */
function liveQueues(terminationQueueUrl: string | undefined, podEventQueueUrl: string | undefined) {
  if (terminationQueueUrl === undefined || podEventQueueUrl === undefined) {
    throw new ValidationError(
      'disruption Lambda environment',
      'env',
      `${EnvVar.terminationQueueUrl} and ${EnvVar.podEventQueueUrl} are required unless ${EnvVar.mode} is shadow; the CDK stack sets them`,
    );
  }
  return {
    terminationQueue: makeSqsTerminationQueue(sqs, terminationQueueUrl),
    requestLaunch: makeLaunchRequester({ sqs, queueUrl: podEventQueueUrl, clusterName, clock: systemClock }),
  };
}

const disruptionQueueUrl = config[EnvVar.disruptionQueueUrl];

/**
 * Disruption schedule and disruption queue target: keeps the NodeClaim conditions, expires NodeClaims, moves disruption
 * commands on and starts new ones (emptiness, then drift) within the NodePools' budgets.
 */
export const handler = withDeadline(
  makeDisruptionHandler({
    clusterName,
    ...setUpDisruption(
      { cluster, cloud, leases, alarms, clock: systemClock, sleep, logger, metrics, ...queues },
      {
        shadow,
        leaseName: `disruption#${clusterName}`,
        deadlineMs,
        solveOptions: disruptionSolveOptionsOf(config),
        spotToSpotConsolidation: config[EnvVar.spotToSpotConsolidation],
        repackConsolidation: config[EnvVar.repackConsolidation],
        runawayGuard: config[EnvVar.runawayGuard],
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
