import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeInterruptionHandler } from '../../../lambdas/interruption/run.ts';
import type { InterruptionMessage } from '../../../shared/messages/interruption-event.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';

// The interruption Lambda's event handling with real EventBridge events in SQS records; what each
// event does is the use case's (test/unit/usecases/interruption-driver.test.ts).

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/events/${name}.json`, import.meta.url), 'utf8');

describe('interruption Lambda batch handling', () => {
  const record = (messageId: string, body: string) => ({
    messageId,
    body,
    receiptHandle: 'r',
    attributes: {},
  });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) });

  it('reports malformed records as failures, handles the rest, and a duplicate event once', async () => {
    const handled: InterruptionMessage[] = [];
    const handler = makeInterruptionHandler({
      logger,
      indexNodeClaims: async () => new Map(),
      handle: async (message) => {
        handled.push(message);
        if (message.kind === 'instanceStopped') throw new Error('API server unavailable');
      },
    });
    const result = await handler({
      Records: [
        record('m1', fixture('spot-interruption')),
        record('m2', '{"detail-type":'),
        record('m3', fixture('spot-interruption')),
        record('m4', fixture('rebalance')),
        record('m5', fixture('state-change-stopping')),
      ],
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm5' }] });
    expect(handled.map((m) => m.kind)).toEqual([
      'spotInterruption',
      'rebalanceRecommendation',
      'instanceStopped',
    ]);
    expect(lines.find((l) => l['message'] === 'interruption message rejected')).toMatchObject({
      messageId: 'm2',
    });
    expect(lines.find((l) => l['message'] === 'interruption failed')).toMatchObject({
      messageId: 'm5',
      kind: 'instanceStopped',
    });
  });

  it('fails every valid record when the NodeClaims cannot be read', async () => {
    const handler = makeInterruptionHandler({
      logger,
      indexNodeClaims: async () => {
        throw new Error('timeout');
      },
      handle: async () => undefined,
    });
    const result = await handler({ Records: [record('a', fixture('rebalance')), record('b', 'nope')] });
    if (!('batchItemFailures' in result)) throw new Error('an SQS batch gets a batch response');
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b']);
  });

  it('acknowledges and logs an event that is not an SQS batch', async () => {
    const handler = makeInterruptionHandler({
      logger,
      indexNodeClaims: async () => new Map(),
      handle: async () => undefined,
    });
    expect(await handler(JSON.parse(fixture('rebalance')))).toEqual({ batchItemFailures: [] });
    expect(lines.find((l) => l['message'] === 'interruption event ignored')).toMatchObject({
      reason: 'neither an SQS batch nor the instance status schedule',
    });
  });
});
