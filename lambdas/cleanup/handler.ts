import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { EC2Client } from '@aws-sdk/client-ec2';
import { z } from 'zod';
import { awsClientConfig } from '../../shared/adapters/aws/clients.ts';
import { makeClusterResources } from '../../shared/adapters/aws/cluster-resources.ts';
import { makeStackStatusReader } from '../../shared/adapters/aws/stack-status.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { makeDecisionOutput } from '../common/decision-output.ts';
import { parseLambdaEnv } from '../common/env.ts';
import { answerCloudFormation, makeCleanUpHandler } from './run.ts';

// Removes what Flotilla launched for the cluster when the cluster goes (run.ts). It reads neither
// the cluster nor the summary: the cluster may be gone already.

const Env = z.object({
  AWS_REGION: z.string().min(1),
  [EnvVar.clusterName]: z.string().min(1),
  [EnvVar.logLevel]: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  [EnvVar.decisionBus]: z.string().min(1).optional(),
});

// Built once per cold start.
const config = parseLambdaEnv('cleanup', Env, process.env);
const clusterName = config[EnvVar.clusterName];
const region = config.AWS_REGION;
const { logger, metrics, bus } = makeDecisionOutput({
  lambda: 'cleanup',
  clusterName,
  region,
  shadow: false,
  logLevel: config[EnvVar.logLevel],
  busName: config[EnvVar.decisionBus],
});
const resources = makeClusterResources({
  ec2: new EC2Client(awsClientConfig({ region, logger })),
  clusterName,
  logger,
});

const handle = makeCleanUpHandler({
  clusterName,
  resources,
  logger,
  metrics,
  stackStatus: makeStackStatusReader(new CloudFormationClient(awsClientConfig({ region, logger }))),
  respond: answerCloudFormation,
});

/** The stack's clean-up custom resource and the cluster's DeleteCluster event (run.ts). */
export async function handler(event: unknown) {
  try {
    return await handle(event);
  } finally {
    await bus?.flush();
  }
}
