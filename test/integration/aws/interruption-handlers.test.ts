import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { awsClientConfig, kube, moto, resetMoto } from '../../harness/index.ts';
import { createStateTable } from './cloud-fixture.ts';

// The interruption and termination Lambdas' real modules: cold start (eks:DescribeCluster on moto,
// the harness's API server through a kubeconfig), then one invocation each with real event JSON.
describe('interruption and termination Lambdas cold start', () => {
  type Handler = (event: unknown) => Promise<unknown>;
  let interruption: Handler;
  let termination: Handler;
  let queueUrl = '';
  const lines: string[] = [];
  const clusterName = `cold-${Date.now().toString(36)}`;

  beforeAll(async () => {
    const [server, cluster] = await Promise.all([moto(), kube()]);
    await resetMoto(server);
    await new EKSClient(awsClientConfig(server)).send(
      new CreateClusterCommand({
        name: clusterName,
        version: '1.34',
        roleArn: 'arn:aws:iam::123456789012:role/eks',
        resourcesVpcConfig: { subnetIds: ['subnet-1'] },
      }),
    );
    await createStateTable(new DynamoDBClient(awsClientConfig(server)), `${clusterName}-state`);
    const created = await new SQSClient(awsClientConfig(server)).send(
      new CreateQueueCommand({ QueueName: `${clusterName}-termination` }),
    );
    queueUrl = created.QueueUrl ?? '';
    Object.assign(process.env, {
      AWS_REGION: server.region,
      AWS_ENDPOINT_URL: server.endpoint,
      AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey,
      KUBECONFIG: cluster.kubeconfigPath,
      [EnvVar.clusterName]: clusterName,
      [EnvVar.stateTable]: `${clusterName}-state`,
      [EnvVar.terminationQueueUrl]: queueUrl,
    });
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      ({ handler: interruption } = await import('../../../lambdas/interruption/handler.ts'));
      ({ handler: termination } = await import('../../../lambdas/termination/handler.ts'));
    } finally {
      process.stdout.write = write;
    }
  });

  it('the interruption Lambda acknowledges an event for an instance it does not know and rejects a malformed one', async () => {
    const event = readFileSync(
      new URL('../../fixtures/events/spot-interruption.json', import.meta.url),
      'utf8',
    );
    const result = await interruption({
      Records: [
        { messageId: 'known-shape', body: event },
        { messageId: 'malformed', body: '{"version": "0"}' },
      ],
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'malformed' }] });
    const discovered = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['message'] === 'cluster discovered');
    expect(discovered.length).toBe(2);
  });

  it('the termination Lambda acknowledges a request for a NodeClaim that is gone', async () => {
    const result = await termination({
      Records: [
        { messageId: 'gone', body: JSON.stringify({ version: 1, nodeClaim: `${clusterName}-missing` }) },
      ],
    });
    expect(result).toEqual({ batchItemFailures: [] });
    // Nothing was handed on for a NodeClaim that does not exist.
    const queued = await new SQSClient(awsClientConfig(await moto())).send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect(queued.Messages ?? []).toEqual([]);
  });
});
