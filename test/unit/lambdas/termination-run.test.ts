import { describe, expect, it } from 'vitest';
import { makeTerminationHandler } from '../../../lambdas/termination/run.ts';
import { toTerminationMessage } from '../../../shared/messages/termination-request.ts';
import { makeTerminationWorld } from '../usecases/termination/world.ts';

// The termination Lambda's event handling, wired to the in-memory cluster and cloud: real SQS and
// EventBridge event shapes in, the partial batch response or the sweep's results out.

const record = (messageId: string, body: string) => ({
  messageId,
  receiptHandle: 'AQEB…',
  body,
  attributes: { ApproximateReceiveCount: '1' },
  messageAttributes: {},
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:flotilla-prod-termination',
  awsRegion: 'eu-west-1',
});
const scheduled = {
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-21T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/flotilla-prod-termination-sweep'],
  detail: {},
};

describe('termination Lambda invocations', () => {
  it('reports malformed messages and failed NodeClaims as batch item failures; a NodeClaim named twice runs once', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 1 });
    await w.terminatingClaim('b', { foreignInstance: true });
    const handler = makeTerminationHandler(w.deps);
    const result = await handler({
      Records: [
        record('m1', toTerminationMessage({ nodeClaim: 'a' })),
        record('m2', toTerminationMessage({ nodeClaim: 'a' })),
        record('m3', '{"nodeClaim": 7}'),
        record('m4', toTerminationMessage({ nodeClaim: 'b' })),
      ],
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm3' }, { itemIdentifier: 'm4' }] });
    expect(await w.cluster.nodeClaim('a')).toBeUndefined();
    expect(w.logged('termination message rejected')).toEqual([
      expect.objectContaining({ messageId: 'm3', problem: expect.stringContaining('version') }),
    ]);
    expect(w.logged('termination failed')).toEqual([expect.objectContaining({ nodeClaim: 'b' })]);
  });

  it('hands a drain that outlives the budget on through a delayed message and acknowledges', async () => {
    const w = makeTerminationWorld(3_000);
    await w.terminatingClaim('a', { pods: 1, blockedByBudget: true });
    const handler = makeTerminationHandler(w.deps);
    expect(await handler({ Records: [record('m1', toTerminationMessage({ nodeClaim: 'a' }))] })).toEqual({
      batchItemFailures: [],
    });
    expect(w.queue.size()).toBe(1);
  });

  it('sweeps every terminating NodeClaim on the schedule without starting message chains', async () => {
    const w = makeTerminationWorld(10_000);
    await w.terminatingClaim('a');
    await w.terminatingClaim('b', { pods: 1, blockedByBudget: true });
    const result = await makeTerminationHandler(w.deps)(scheduled);
    expect(result).toEqual({
      kind: 'swept',
      results: expect.arrayContaining([
        { kind: 'done', nodeClaim: 'a' },
        expect.objectContaining({ kind: 'continue', nodeClaim: 'b' }),
      ]),
    });
    expect(w.queue.size()).toBe(0);
  });

  it('fails a sweep whose pass throws, so the schedule retries', async () => {
    const w = makeTerminationWorld();
    await w.terminatingClaim('b', { foreignInstance: true });
    await expect(makeTerminationHandler(w.deps)(scheduled)).rejects.toMatchObject({
      code: 'InstanceNotOwned',
    });
  });

  it('acknowledges and logs an event of another shape', async () => {
    const w = makeTerminationWorld();
    expect(await makeTerminationHandler(w.deps)({ Records: [] })).toEqual({ kind: 'ignored' });
    expect(w.logged('event ignored')).toHaveLength(1);
  });
});
