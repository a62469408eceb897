import { setTimeout as sleep } from 'node:timers/promises';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { z } from 'zod';
import { awsClientConfig } from '../../shared/adapters/aws/clients.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeFollowUpScheduler } from '../../shared/adapters/aws/follow-up.ts';
import { makeNodeClassResolver } from '../../shared/adapters/aws/nodeclass.ts';
import { makeSqsTerminationQueue } from '../../shared/adapters/aws/termination-queue.ts';
import { makeSchedulerWakeUps } from '../../shared/adapters/aws/wake-ups.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { schedulingPolicyEnv, schedulingPolicyOf } from '../../shared/runtime/scheduling-policy.ts';
import { onByDefaultSetting } from '../../shared/runtime/switch.ts';
import { setUpProvisioner } from '../../shared/usecases/provisioning/setup.ts';
import { relayViaQueue, viaQueue } from '../../shared/usecases/termination/handover.ts';
import {
  gateSwitch,
  loadEnv,
  providerEnv,
  providerSettingsOf,
  provisionerSettingsEnv,
  wire,
} from '../common/wiring.ts';
import { makeProvisionerHandler } from './run.ts';

const config = loadEnv('provisioner', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-provisioner'),
  /** Optional: without it, Nodes of new NodeClaims register at the next pending-pods tick. */
  [EnvVar.podEventQueueUrl]: z.url().optional(),
  /** Optional: without it, NodeClaims that timed out wait for the termination sweep. */
  [EnvVar.terminationQueueUrl]: z.url().optional(),
  /** Optional, the three together: without them, no NodePool wake-ups (windows act at the poll). */
  [EnvVar.wakeUpGroup]: z.string().min(1).optional(),
  [EnvVar.wakeUpRoleArn]: z.string().startsWith('arn:').optional(),
  [EnvVar.podEventQueueArn]: z.string().startsWith('arn:').optional(),
  ...schedulingPolicyEnv,
  ...providerEnv,
  ...provisionerSettingsEnv,
  [EnvVar.nodeOverlay]: gateSwitch('NodeOverlay'),
  [EnvVar.staticCapacity]: gateSwitch('StaticCapacity'),
  [EnvVar.runawayGuard]: onByDefaultSetting,
});
const provider = providerSettingsOf(config);

// Built once per cold start.
const clusterName = config[EnvVar.clusterName];
const { shadow, logger, metrics, clients, sqs, access, cluster, cloud, withDeadline } = await wire(
  'provisioner',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
  provider,
);
const leases = new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]);
const terminationQueueUrl = config[EnvVar.terminationQueueUrl];
const terminationQueue =
  terminationQueueUrl === undefined ? undefined : makeSqsTerminationQueue(sqs, terminationQueueUrl);
const podEventQueueUrl = config[EnvVar.podEventQueueUrl];
const wakeUpGroup = config[EnvVar.wakeUpGroup];
const wakeUpRoleArn = config[EnvVar.wakeUpRoleArn];
const podEventQueueArn = config[EnvVar.podEventQueueArn];
const wakeUps =
  wakeUpGroup === undefined || wakeUpRoleArn === undefined || podEventQueueArn === undefined
    ? undefined
    : makeSchedulerWakeUps({
        scheduler: new SchedulerClient(awsClientConfig({ region: config.AWS_REGION, logger })),
        clusterName,
        group: wakeUpGroup,
        roleArn: wakeUpRoleArn,
        queueArn: podEventQueueArn,
        clock: systemClock,
      });

/**
 * Pod-event queue (SQS batch) and pending-pods schedule (EventBridge) target: one provisioning
 * run per invocation, then one NodeClaim lifecycle pass. Malformed pod events are reported as
 * batch item failures (they end in the dead-letter queue).
 */
export const handler = withDeadline(
  makeProvisionerHandler({
    clusterName,
    ...setUpProvisioner(
      {
        cluster,
        cloud,
        leases,
        clock: systemClock,
        sleep,
        logger,
        metrics,
        nodeClassResolver: makeNodeClassResolver({
          ec2: clients.ec2,
          ssm: clients.ssm,
          iam: clients.iam,
          clusterName,
          region: config.AWS_REGION,
          kubernetesVersion: access.kubernetesVersion,
          reservedCapacity: provider.reservedCapacity !== false,
        }),
        ...(terminationQueue === undefined
          ? {}
          : {
              requestTermination: viaQueue(terminationQueue),
              relayDeletion: relayViaQueue(terminationQueue),
            }),
        ...(wakeUps === undefined ? {} : { wakeUps }),
        ...(podEventQueueUrl === undefined
          ? {}
          : {
              scheduleFollowUp: makeFollowUpScheduler({
                sqs,
                queueUrl: podEventQueueUrl,
                clusterName,
                leases,
                clock: systemClock,
                logger,
              }),
            }),
      },
      // A run triggered while another holds the lease waits for it (well within the timeout),
      // so pods that arrived after the holder's batch closed are not left for the next trigger.
      {
        leaseName: `provisioner#${clusterName}`,
        leaseWaitMs: 20_000,
        solveOptions: schedulingPolicyOf(config),
        batchIdleMs: config[EnvVar.batchIdleMs],
        batchMaxMs: config[EnvVar.batchMaxMs],
        nodeClassRefreshSeconds: config[EnvVar.amiRefreshSeconds],
        nodeOverlay: config[EnvVar.nodeOverlay],
        staticCapacity: config[EnvVar.staticCapacity],
        runawayGuard: config[EnvVar.runawayGuard],
        shadow,
      },
    ),
  }),
);
