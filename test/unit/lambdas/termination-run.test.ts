import { describe, expect, it } from 'vitest';
import { makeTerminationHandler } from '../../../lambdas/termination/run.ts';
import { toTerminationMessage } from '../../../shared/messages/termination-request.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { TerminationResult } from '../../../shared/usecases/termination.ts';

// The termination Lambda's invocation logic with scripted use-case results and a virtual clock.

function setUp(script: Record<string, TerminationResult[]>, budgetMs = 10_000) {
  let now = 0;
  const calls: string[] = [];
  const enqueued: { nodeClaim: string; delaySeconds: number }[] = [];
  const lines: Record<string, unknown>[] = [];
  const handler = makeTerminationHandler({
    logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }),
    terminate: async (name) => {
      calls.push(name);
      const next = script[name]?.shift();
      if (next === undefined) throw new Error(`API server unavailable while terminating ${name}`);
      return next;
    },
    enqueue: async (nodeClaim, delaySeconds) => {
      enqueued.push({ nodeClaim, delaySeconds });
    },
    terminatingNodeClaims: async () => Object.keys(script),
    sleep: async (ms) => {
      now += ms;
    },
    nowMs: () => now,
    budgetMs,
  });
  return { handler, calls, enqueued, lines, elapsed: () => now };
}

const wait = (nodeClaim: string, afterSeconds: number): TerminationResult => ({
  kind: 'continue',
  nodeClaim,
  afterSeconds,
  waitingOn: 'drain',
  detail: 'draining 1 pods',
});
const done = (nodeClaim: string): TerminationResult => ({ kind: 'done', nodeClaim });
const record = (messageId: string, body: string) => ({ messageId, body });

describe('termination Lambda invocations', () => {
  it('passes over a NodeClaim until it is done within the budget, waiting as told', async () => {
    const t = setUp({ a: [wait('a', 1), wait('a', 5), done('a')] });
    const result = await t.handler({ Records: [record('m1', toTerminationMessage({ nodeClaim: 'a' }))] });
    expect(result).toEqual({ batchItemFailures: [] });
    expect(t.calls).toEqual(['a', 'a', 'a']);
    expect(t.elapsed()).toBe(6_000);
    expect(t.enqueued).toEqual([]);
  });

  it('hands the rest to a delayed message when the next wait would pass the budget, and acknowledges', async () => {
    const t = setUp({ a: [wait('a', 1), wait('a', 1), wait('a', 5)] }, 4_000);
    const result = await t.handler({ Records: [record('m1', toTerminationMessage({ nodeClaim: 'a' }))] });
    expect(result).toEqual({ batchItemFailures: [] });
    expect(t.enqueued).toEqual([{ nodeClaim: 'a', delaySeconds: 5 }]);
    expect(t.lines.find((l) => l['message'] === 'termination continues later')).toMatchObject({
      nodeClaim: 'a',
      waitingOn: 'drain',
      queued: true,
    });
  });

  it('reports malformed messages and failed NodeClaims as batch item failures; duplicates run once', async () => {
    const t = setUp({ a: [done('a')], b: [] });
    const result = await t.handler({
      Records: [
        record('m1', toTerminationMessage({ nodeClaim: 'a' })),
        record('m2', toTerminationMessage({ nodeClaim: 'a' })),
        record('m3', '{"nodeClaim": 7}'),
        record('m4', toTerminationMessage({ nodeClaim: 'b' })),
      ],
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm3' }, { itemIdentifier: 'm4' }] });
    expect(t.calls.filter((c) => c === 'a')).toHaveLength(1);
  });

  it('sweeps every terminating NodeClaim on the schedule without starting message chains', async () => {
    const t = setUp({ a: [done('a')], b: [wait('b', 30)] });
    const result = await t.handler({
      version: '0',
      source: 'aws.events',
      'detail-type': 'Scheduled Event',
      detail: {},
    });
    expect(result).toEqual({ kind: 'swept', results: expect.arrayContaining([done('a'), wait('b', 30)]) });
    expect(t.enqueued).toEqual([]);
  });

  it('fails a sweep whose pass throws, so the schedule retries', async () => {
    const t = setUp({ a: [] });
    await expect(
      t.handler({ version: '0', source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} }),
    ).rejects.toThrow(/API server unavailable/);
  });
});
