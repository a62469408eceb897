import { readFileSync } from 'node:fs';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { decisionRule } from '../../harness/aws/decision-rules.ts';
import { awsClientConfig, kube, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { asLambda, capturingStdout, prepareColdStart } from './lambda-cold-start.ts';

// The interruption and termination Lambdas' real modules, as deployed: cold start
// (eks:DescribeCluster on moto, the harness's API server as the flotilla:controller group), then
// one invocation each with real event JSON, each Lambda with its own role and the stack's
// termination queue.
describe('interruption and termination Lambdas cold start', () => {
  type Handler = (event: unknown) => Promise<unknown>;
  let server: Moto;
  let interruption: Handler;
  let termination: Handler;
  let queueUrl = '';
  let decisions: Awaited<ReturnType<typeof decisionRule>>;
  const lines: string[] = [];
  const run = `cold-${Date.now().toString(36)}`;

  beforeAll(async () => {
    const [motoServer, cube] = await Promise.all([moto(), kube()]);
    server = motoServer;
    await resetMoto(server);
    const stack = await prepareColdStart(server, cube.controllerKubeconfigPath);
    queueUrl = stack.queueUrls.termination;
    decisions = await decisionRule(server, 'all-decisions', { source: ['flotilla'] });
    await capturingStdout(lines, async () => {
      ({ handler: interruption } = await asLambda(
        server,
        'interruption',
        () => import('../../../lambdas/interruption/handler.ts'),
      ));
      ({ handler: termination } = await asLambda(
        server,
        'termination',
        () => import('../../../lambdas/termination/handler.ts'),
      ));
    });
  });

  it('the interruption Lambda acknowledges an event for an instance it does not know and rejects a malformed one', async () => {
    const event = readFileSync(
      new URL('../../fixtures/events/spot-interruption.json', import.meta.url),
      'utf8',
    );
    const result = await asLambda(server, 'interruption', () =>
      interruption({
        Records: [
          { messageId: 'known-shape', body: event },
          { messageId: 'malformed', body: '{"version": "0"}' },
        ],
      }),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'malformed' }] });
    const discovered = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['message'] === 'cluster discovered');
    expect(discovered.length).toBe(2);
    // Its decisions reached the stack's bus before the invocation returned, with its own role.
    const events = await decisions.read();
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(e['detail-type']).toBe((e['detail'] as Record<string, unknown>)['decision']);
      expect(e['detail']).toMatchObject({ lambda: 'interruption', cluster: 'test-cluster' });
    }
  });

  it('the termination Lambda acknowledges a request for a NodeClaim that is gone', async () => {
    const result = await asLambda(server, 'termination', () =>
      termination({
        Records: [{ messageId: 'gone', body: JSON.stringify({ version: 1, nodeClaim: `${run}-missing` }) }],
      }),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    // Nothing was handed on for a NodeClaim that does not exist.
    const queued = await new SQSClient(awsClientConfig(server)).send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect(queued.Messages ?? []).toEqual([]);
  });
});
