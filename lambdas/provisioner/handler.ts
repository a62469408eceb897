import { setTimeout as sleep } from 'node:timers/promises';
import { EKSClient } from '@aws-sdk/client-eks';
import { SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { makeAwsCloud } from '../../shared/adapters/aws/aws-cloud.ts';
import { awsClientConfig, makeAwsClients } from '../../shared/adapters/aws/clients.ts';
import { DynamoLeaseStore } from '../../shared/adapters/aws/dynamo-lease.ts';
import { type ClusterAccess, describeClusterAccess } from '../../shared/adapters/aws/eks-cluster.ts';
import { makeFollowUpScheduler } from '../../shared/adapters/aws/follow-up.ts';
import { makeNodeClassResolver } from '../../shared/adapters/aws/nodeclass.ts';
import { makeNodeClassStatusWriter } from '../../shared/adapters/aws/nodeclass-status-writer.ts';
import { makeKubeCluster } from '../../shared/adapters/kube/kube-cluster.ts';
import { makeKubeConfig } from '../../shared/adapters/kube/kube-config.ts';
import { ValidationError } from '../../shared/core/errors.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { ClusterAccessEnvVar, EnvVar } from '../../shared/runtime/env.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { reconcileLifecycle } from '../../shared/usecases/lifecycle.ts';
import { provision } from '../../shared/usecases/provision.ts';
import { makeProvisionerHandler } from './run.ts';

const Env = z.object({
  AWS_REGION: z.string().min(1),
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).default('flotilla-provisioner'),
  [EnvVar.clusterName]: z.string().min(1),
  [EnvVar.stateTable]: z.string().min(1),
  /** Optional: without it, Nodes of new NodeClaims register at the next pending-pods tick. */
  [EnvVar.podEventQueueUrl]: z.url().optional(),
  [EnvVar.logLevel]: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  // Optional: without them the cluster is looked up with eks:DescribeCluster at cold start.
  [ClusterAccessEnvVar.clusterEndpoint]: z.url({ protocol: /^https$/ }).optional(),
  [ClusterAccessEnvVar.clusterCa]: z.string().min(1).optional(),
  [ClusterAccessEnvVar.kubernetesVersion]: z
    .string()
    .regex(/^1\.\d+$/, 'a Kubernetes minor such as 1.34')
    .optional(),
  [ClusterAccessEnvVar.serviceCidr]: z.string().min(1).optional(),
  /** Local runs and tests reach the API server through a kubeconfig file instead of an EKS token. */
  KUBECONFIG: z.string().min(1).optional(),
});

function loadConfig(env: NodeJS.ProcessEnv) {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ValidationError(
      'provisioner Lambda environment',
      'env',
      `${problems}; the CDK stack sets these variables`,
    );
  }
  return parsed.data;
}

// Built once per cold start.
const config = loadConfig(process.env);
const clusterName = config[EnvVar.clusterName];
const region = config.AWS_REGION;
const logger = makeLogger(
  { lambda: 'provisioner', cluster: clusterName },
  { level: config[EnvVar.logLevel] },
);
const clients = makeAwsClients({ region, logger });
const access = await clusterAccess();
const kubeConfig = makeKubeConfig(
  config.KUBECONFIG === undefined
    ? {
        kind: 'eks',
        clusterName,
        region,
        endpoint: access.endpoint,
        caData: access.caData,
        credentials: clients.ec2.config.credentials,
      }
    : { kind: 'file', path: config.KUBECONFIG },
);
const cluster = makeKubeCluster({
  kubeConfig,
  logger,
  clock: systemClock,
  instance: config.AWS_LAMBDA_FUNCTION_NAME,
});
const serviceCidr = config[ClusterAccessEnvVar.serviceCidr] ?? access.serviceCidr;
const cloud = makeAwsCloud({
  ec2: clients.ec2,
  dynamodb: clients.dynamodb,
  tableName: config[EnvVar.stateTable],
  region,
  cluster: {
    name: clusterName,
    endpoint: access.endpoint,
    caBundle: access.caData,
    ...(serviceCidr === undefined ? {} : { serviceCidr }),
  },
  clock: systemClock,
  logger,
});
const leases = new DynamoLeaseStore(clients.dynamodb, config[EnvVar.stateTable]);
const nodeClassResolver = makeNodeClassResolver({
  ec2: clients.ec2,
  ssm: clients.ssm,
  iam: clients.iam,
  clusterName,
  region,
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
        sqs: new SQSClient(awsClientConfig({ region, logger })),
        queueUrl: podEventQueueUrl,
        clusterName,
        leases,
        clock: systemClock,
        logger,
      });

/** The API server and version: from the environment when all are set, else from EKS itself. */
async function clusterAccess(): Promise<ClusterAccess> {
  const endpoint = config[ClusterAccessEnvVar.clusterEndpoint];
  const caData = config[ClusterAccessEnvVar.clusterCa];
  const kubernetesVersion = config[ClusterAccessEnvVar.kubernetesVersion];
  if (endpoint !== undefined && caData !== undefined && kubernetesVersion !== undefined) {
    return { endpoint, caData, kubernetesVersion };
  }
  const discovered = await describeClusterAccess(
    new EKSClient(awsClientConfig({ region, logger })),
    clusterName,
  );
  logger.info('cluster discovered', {
    endpoint: discovered.endpoint,
    kubernetesVersion: discovered.kubernetesVersion,
  });
  return discovered;
}

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
