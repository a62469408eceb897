import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { beforeAll, describe, expect, it } from 'vitest';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { awsClientConfig, kube, moto, resetMoto } from '../../harness/index.ts';
import { createStateTable } from './cloud-fixture.ts';

// The provisioner Lambda's real module: its cold start discovers the cluster with
// eks:DescribeCluster (moto) and reaches the API server through a kubeconfig (the harness's).
describe('provisioner Lambda cold start', () => {
  let handler: (event: unknown, context?: { awsRequestId?: string }) => Promise<unknown>;
  const lines: string[] = [];

  beforeAll(async () => {
    const [server, cluster] = await Promise.all([moto(), kube()]);
    await resetMoto(server);
    await new EKSClient(awsClientConfig(server)).send(
      new CreateClusterCommand({
        name: 'cold-start',
        version: '1.34',
        roleArn: 'arn:aws:iam::123456789012:role/eks',
        resourcesVpcConfig: { subnetIds: ['subnet-1'] },
      }),
    );
    await createStateTable(new DynamoDBClient(awsClientConfig(server)), 'cold-start-state');

    Object.assign(process.env, {
      AWS_REGION: server.region,
      AWS_ENDPOINT_URL: server.endpoint,
      AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey,
      KUBECONFIG: cluster.kubeconfigPath,
      [EnvVar.clusterName]: 'cold-start',
      [EnvVar.stateTable]: 'cold-start-state',
    });
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      ({ handler } = await import('../../../lambdas/provisioner/handler.ts'));
    } finally {
      process.stdout.write = write;
    }
  });

  it('finds the cluster through EKS and runs a scheduled provisioning pass', async () => {
    const discovered = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['message'] === 'cluster discovered');
    expect(discovered?.['kubernetesVersion']).toBe('1.34');
    const result = (await handler(
      { version: '0', source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
      { awsRequestId: 'cold-start-1' },
    )) as { kind: string };
    expect(['skipped', 'provisioned']).toContain(result.kind);
  });
});
