import { describe, expect, it } from 'vitest';
import { isScheduleEvent, parseSqsBatch, processPartialResponse } from '../../../lambdas/common/sqs.ts';
import {
  parseTerminationMessage,
  toTerminationMessage,
} from '../../../shared/messages/termination-request.ts';
import type { TerminationRequest } from '../../../shared/ports/work-queue.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { BatchItem } from '../../../shared/usecases/state/batch.ts';

// The SQS partial batch kit the queue-driven Lambdas share.

const record = (messageId: string, body: string) => ({
  messageId,
  receiptHandle: 'AQEB…',
  body,
  attributes: { ApproximateReceiveCount: '1' },
  messageAttributes: {},
  eventSource: 'aws:sqs',
  awsRegion: 'eu-west-1',
});
const request = (nodeClaim: string) => toTerminationMessage({ nodeClaim });

function setUp() {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) });
  const seen: BatchItem<TerminationRequest>[][] = [];
  return { lines, logger, seen };
}

describe('processPartialResponse', () => {
  const batch = parseSqsBatch({
    Records: [
      record('m1', request('a')),
      record('m2', '{"version":1}'),
      record('m3', request('b')),
      record('m4', 'not json'),
    ],
  });
  if (batch === undefined) throw new Error('the test batch is an SQS batch');

  it('rejects what does not decode with its problem, and reports it with what the handler failed, in record order', async () => {
    const t = setUp();
    const response = await processPartialResponse(batch, {
      logger: t.logger,
      decode: parseTerminationMessage,
      rejected: 'termination message rejected',
      handle: async (items) => {
        t.seen.push([...items]);
        return { failed: ['m3'] };
      },
    });
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm3' }, { itemIdentifier: 'm4' }],
    });
    expect(t.seen).toEqual([
      [
        { id: 'm1', message: { nodeClaim: 'a' } },
        { id: 'm3', message: { nodeClaim: 'b' } },
      ],
    ]);
    expect(t.lines.map((l) => [l['message'], l['level'], l['messageId']])).toEqual([
      ['termination message rejected', 'warn', 'm2'],
      ['termination message rejected', 'warn', 'm4'],
    ]);
    expect(t.lines[0]?.['problem']).toContain('nodeClaim');
    expect(t.lines[1]?.['problem']).toContain('not JSON');
  });

  it('delivers every decoded record again when the handler throws', async () => {
    const t = setUp();
    const response = await processPartialResponse(batch, {
      logger: t.logger,
      decode: parseTerminationMessage,
      rejected: 'termination message rejected',
      handle: () => Promise.reject(new Error('unexpected')),
    });
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect(t.lines.find((l) => l['message'] === 'batch failed')).toMatchObject({
      level: 'error',
      messages: 2,
    });
  });

  it('does not call the handler when no record decodes', async () => {
    const t = setUp();
    const only = parseSqsBatch({ Records: [record('m1', '[]')] });
    if (only === undefined) throw new Error('the test batch is an SQS batch');
    const response = await processPartialResponse(only, {
      logger: t.logger,
      decode: parseTerminationMessage,
      rejected: 'termination message rejected',
      handle: async (items) => {
        t.seen.push([...items]);
        return { failed: [] };
      },
    });
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
    expect(t.seen).toEqual([]);
  });
});

describe('event shapes', () => {
  it.each([
    ['an SQS batch', { Records: [record('m1', '{}')] }, true, false],
    ['an empty record list', { Records: [] }, false, false],
    ['a schedule', { 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} }, false, true],
    ['another EventBridge event', { 'detail-type': 'AWS Health Event', source: 'aws.health' }, false, false],
    ['nothing', null, false, false],
  ])('%s', (_name, event, sqs, schedule) => {
    expect(parseSqsBatch(event) !== undefined).toBe(sqs);
    expect(isScheduleEvent(event)).toBe(schedule);
  });
});
