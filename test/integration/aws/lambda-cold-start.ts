import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { awsClientConfig, type Moto } from '../../harness/index.ts';
import { createStateTable } from './cloud-fixture.ts';

// What a Lambda of the stack finds at cold start, on moto and the harness's API server: the EKS
// cluster it discovers, its state table, and the process environment the stack sets.

/**
 * Creates the EKS cluster `clusterName` and its state table `<clusterName>-state` on moto, and sets
 * the environment: moto as AWS, the API server through `kubeconfigPath`, the cluster and table
 * names, and `extra`.
 */
export async function prepareColdStart(
  server: Moto,
  kubeconfigPath: string,
  clusterName: string,
  extra: Record<string, string> = {},
): Promise<void> {
  await new EKSClient(awsClientConfig(server)).send(
    new CreateClusterCommand({
      name: clusterName,
      version: '1.34',
      roleArn: 'arn:aws:iam::123456789012:role/eks',
      resourcesVpcConfig: { subnetIds: ['subnet-1'] },
    }),
  );
  await createStateTable(new DynamoDBClient(awsClientConfig(server)), `${clusterName}-state`);
  Object.assign(process.env, {
    AWS_REGION: server.region,
    AWS_ENDPOINT_URL: server.endpoint,
    AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey,
    KUBECONFIG: kubeconfigPath,
    [EnvVar.clusterName]: clusterName,
    [EnvVar.stateTable]: `${clusterName}-state`,
    ...extra,
  });
}

/** Runs `load` (a handler module's import, whose cold start logs) with stdout going to `lines`. */
export async function capturingStdout<T>(lines: string[], load: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    return await load();
  } finally {
    process.stdout.write = write;
  }
}
