import { readFileSync } from 'node:fs';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { awsClientConfig, kube, moto, resetMoto } from '../../harness/index.ts';
import { capturingStdout, prepareColdStart } from './lambda-cold-start.ts';

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
    const created = await new SQSClient(awsClientConfig(server)).send(
      new CreateQueueCommand({ QueueName: `${clusterName}-termination` }),
    );
    queueUrl = created.QueueUrl ?? '';
    await prepareColdStart(server, cluster.kubeconfigPath, clusterName, {
      [EnvVar.terminationQueueUrl]: queueUrl,
    });
    await capturingStdout(lines, async () => {
      ({ handler: interruption } = await import('../../../lambdas/interruption/handler.ts'));
      ({ handler: termination } = await import('../../../lambdas/termination/handler.ts'));
    });
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
