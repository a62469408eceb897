import { describe, expect, it, vi } from 'vitest';
import { makeDisruptionHandler } from '../../../lambdas/disruption/run.ts';
import type { DelayedPass } from '../../../shared/adapters/aws/disruption-passes.ts';
import { toDisruptionPassMessage } from '../../../shared/messages/disruption-pass.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { QueueSendError } from '../../../shared/ports/errors.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { DisruptionPassResult } from '../../../shared/usecases/disruption/controller.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';

// The disruption Lambda's event handling with real event JSON: the schedule's event asks for the
// passes before the next tick and runs one pass held by the invocation; the passes SQS delivers run
// one pass per batch; anything else is acknowledged and logged.

const scheduled = {
  version: '0',
  id: '7bf73129-1428-4cd3-a780-95db273d1602',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-23T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/flotilla-prod-eu-disruption'],
  detail: {},
};

function harness(
  pass: (holder: string) => Promise<DisruptionPassResult>,
  between?: {
    readonly intervalSeconds: number;
    readonly send: (passes: readonly DelayedPass[]) => Promise<void>;
  },
) {
  const lines: Record<string, unknown>[] = [];
  const holders: string[] = [];
  const handler = makeDisruptionHandler({
    logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }),
    metrics: quietMetrics,
    clusterName: 'prod-eu',
    pass: (holder) => {
      holders.push(holder);
      return pass(holder);
    },
    // The invocation runs 1.4 s after the tick.
    ...(between === undefined
      ? {}
      : { between: { ...between, clock: makeManualClock(new Date('2026-11-23T10:00:01.400Z')) } }),
  });
  return { handler, lines, holders };
}

function sqsEvent(...bodies: string[]) {
  return {
    Records: bodies.map((body, i) => ({
      messageId: `m-${i}`,
      receiptHandle: `r-${i}`,
      body,
      attributes: {},
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:flotilla-prod-eu-disruption-passes',
      awsRegion: 'eu-west-1',
    })),
  };
}

const result: DisruptionPassResult = { kind: 'pass', decisions: [], inFlight: 0 };

describe('disruption Lambda handler', () => {
  it('runs one pass per schedule tick, holding the lease as the invocation', async () => {
    const h = harness(async () => result);
    expect(await h.handler(scheduled, { awsRequestId: 'req-1' })).toEqual(result);
    expect(h.holders).toEqual(['req-1']);
  });

  it('asks for the passes before the next tick, then runs its own', async () => {
    const sent: DelayedPass[][] = [];
    const h = harness(async () => result, {
      intervalSeconds: 15,
      send: async (passes) => {
        sent.push([...passes]);
      },
    });
    expect(await h.handler(scheduled, { awsRequestId: 'req-1' })).toEqual(result);
    expect(h.holders).toEqual(['req-1']);
    const dueAt = ['2026-11-23T10:00:15.000Z', '2026-11-23T10:00:30.000Z', '2026-11-23T10:00:45.000Z'];
    expect(sent).toEqual([
      dueAt.map((due, i) => ({
        request: { cluster: 'prod-eu', tickAt: '2026-11-23T10:00:00.000Z', dueAt: due },
        delaySeconds: [14, 29, 44][i],
      })),
    ]);
    expect(h.lines).toContainEqual(
      expect.objectContaining({
        decision: 'schedulePasses',
        intervalSeconds: 15,
        tickAt: '2026-11-23T10:00:00.000Z',
        dueAt,
      }),
    );
  });

  it('runs its pass when the passes between ticks cannot be sent, and says so', async () => {
    const h = harness(async () => result, {
      intervalSeconds: 30,
      send: async () => {
        throw new QueueSendError('queue refused');
      },
    });
    expect(await h.handler(scheduled, { awsRequestId: 'req-1' })).toEqual(result);
    expect(h.holders).toEqual(['req-1']);
    const line = h.lines.find((l) => l['message'] === 'disruption passes not scheduled');
    expect(line).toMatchObject({
      level: 'error',
      dueAt: ['2026-11-23T10:00:30.000Z'],
      fallback: 'the next schedule tick',
    });
    expect(h.lines.some((l) => l['decision'] === 'schedulePasses')).toBe(false);
  });

  it('runs one pass for the passes SQS delivers together, and asks for none', async () => {
    const send = vi.fn(async () => undefined);
    const h = harness(async () => result, { intervalSeconds: 30, send });
    const body = toDisruptionPassMessage({
      cluster: 'prod-eu',
      tickAt: '2026-11-23T10:00:00.000Z',
      dueAt: '2026-11-23T10:00:30.000Z',
    });
    expect(await h.handler(sqsEvent(body, body), { awsRequestId: 'req-2' })).toEqual({
      batchItemFailures: [],
    });
    expect(h.holders).toEqual(['req-2']);
    expect(send).not.toHaveBeenCalled();
  });

  it("rejects a malformed pass or another cluster's, running no pass for it", async () => {
    const h = harness(async () => result);
    const other = toDisruptionPassMessage({
      cluster: 'prod-us',
      tickAt: '2026-11-23T10:00:00.000Z',
      dueAt: '2026-11-23T10:00:30.000Z',
    });
    expect(await h.handler(sqsEvent('{"version":1}', other))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-0' }, { itemIdentifier: 'm-1' }],
    });
    expect(h.holders).toEqual([]);
    const rejected = h.lines.filter((l) => l['message'] === 'disruption pass message rejected');
    expect(rejected.map((l) => l['problem'])).toEqual([
      expect.stringContaining('disruption pass message: kind:'),
      'disruption pass message is for cluster "prod-us", not "prod-eu"',
    ]);
  });

  it('reports a queued pass that failed, for the dead-letter queue', async () => {
    const h = harness(async () => {
      throw new Error('API server unavailable');
    });
    const body = toDisruptionPassMessage({
      cluster: 'prod-eu',
      tickAt: '2026-11-23T10:00:00.000Z',
      dueAt: '2026-11-23T10:00:30.000Z',
    });
    expect(await h.handler(sqsEvent(body))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-0' }] });
  });

  it('acknowledges and logs an event that is neither its schedule nor its queue', async () => {
    const h = harness(async () => result);
    expect(await h.handler({ Records: [] })).toEqual({ kind: 'ignored' });
    expect(await h.handler('nonsense')).toEqual({ kind: 'ignored' });
    expect(h.holders).toEqual([]);
    expect(h.lines.map((l) => l['message'])).toEqual(['event ignored', 'event ignored']);
  });

  it('lets pass failures propagate so EventBridge retries', async () => {
    const h = harness(async () => {
      throw new Error('API server unavailable');
    });
    await expect(h.handler(scheduled)).rejects.toThrow('API server unavailable');
  });
});
