import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { makeFollowUpScheduler } from '../../shared/adapters/aws/follow-up.ts';
import { makeNodeClassResolver } from '../../shared/adapters/aws/nodeclass.ts';
import { makeNodeClassStatusWriter } from '../../shared/adapters/aws/nodeclass-status-writer.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { reconcileLifecycle } from '../../shared/usecases/lifecycle.ts';
import { provision } from '../../shared/usecases/provision.ts';
import { loadEnv, wire } from '../common/wiring.ts';
import { makeProvisionerHandler } from './run.ts';

const config = loadEnv('provisioner', process.env, {
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-provisioner'),
  /** Optional: without it, Nodes of new NodeClaims register at the next pending-pods tick. */
  [EnvVar.podEventQueueUrl]: z.url().optional(),
});

// Built once per cold start.
const clusterName = config[EnvVar.clusterName];
const { logger, clients, sqs, access, kubeConfig, cluster, cloud } = await wire(
  'provisioner',
  config,
  config.AWS_LAMBDA_FUNCTION_NAME,
);
const leases = new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]);
const nodeClassResolver = makeNodeClassResolver({
  ec2: clients.ec2,
  ssm: clients.ssm,
  iam: clients.iam,
  clusterName,
  region: config.AWS_REGION,
  kubernetesVersion: access.kubernetesVersion,
  clock: systemClock,
  logger,
});
const nodeClassStatusWriter = makeNodeClassStatusWriter(kubeConfig);
const podEventQueueUrl = config[EnvVar.podEventQueueUrl];
const scheduleFollowUp =
  podEventQueueUrl === undefined
    ? undefined
    : makeFollowUpScheduler({
        sqs,
        queueUrl: podEventQueueUrl,
        clusterName,
        leases,
        clock: systemClock,
        logger,
      });

/**
 * Pod-event queue (SQS batch) and pending-pods schedule (EventBridge) target: one provisioning
 * run per invocation, then one NodeClaim lifecycle pass. Malformed pod events are reported as
 * batch item failures (they end in the dead-letter queue).
 */
export const handler = makeProvisionerHandler({
  clusterName,
  logger,
  provision: (holder) =>
    provision(
      { cluster, cloud, leases, clock: systemClock, sleep, logger, nodeClassResolver, nodeClassStatusWriter },
      // A run triggered while another holds the lease waits for it (well within the timeout),
      // so pods that arrived after the holder's batch closed are not left for the next trigger.
      { holder, leaseName: `provisioner#${clusterName}`, leaseWaitMs: 20_000 },
    ),
  reconcileLifecycle: () => reconcileLifecycle({ cluster, cloud, logger }, systemClock.now()),
  ...(scheduleFollowUp === undefined
    ? {}
    : { scheduleFollowUp: async (holder, claims) => void (await scheduleFollowUp(holder, claims)) }),
});
