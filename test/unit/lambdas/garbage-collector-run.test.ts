import { describe, expect, it } from 'vitest';
import {
  GarbageCollectionStepsFailedError,
  makeGarbageCollectorHandler,
} from '../../../lambdas/garbage-collector/run.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { GarbageCollectionResult } from '../../../shared/usecases/garbage-collection/garbage-collection.ts';

// The garbage collector Lambda's event handling with real event JSON.

const scheduled = {
  version: '0',
  id: '5c1d3a4e-9b7f-4f0e-8a51-2f6d8e9a0b11',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-23T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/flotilla-prod-eu-garbage-collection'],
  detail: {},
};

function harness(result: GarbageCollectionResult) {
  const lines: Record<string, unknown>[] = [];
  let passes = 0;
  const handler = makeGarbageCollectorHandler({
    logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }),
    pass: async () => {
      passes += 1;
      return result;
    },
  });
  return { handler, lines, passes: () => passes };
}

describe('garbage collector Lambda handler', () => {
  it('runs one pass per schedule tick', async () => {
    const result = { terminated: ['i-0abc'], deletedNodeClaims: [], failed: [] };
    const h = harness(result);
    expect(await h.handler(scheduled)).toEqual(result);
    expect(h.passes()).toBe(1);
  });

  it('fails the invocation after the pass when steps failed, naming them', async () => {
    const cause = new Error('RequestLimitExceeded');
    const h = harness({
      terminated: ['i-0b'],
      deletedNodeClaims: [],
      failed: [{ step: 'terminateOrphan i-0a', error: cause }],
    });
    const error = await h.handler(scheduled).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GarbageCollectionStepsFailedError);
    expect((error as Error).message).toContain('terminateOrphan i-0a');
    expect((error as Error).cause).toBe(cause);
  });

  it('acknowledges and logs any other event', async () => {
    const h = harness({ terminated: [], deletedNodeClaims: [], failed: [] });
    expect(await h.handler({ Records: [] })).toEqual({ kind: 'ignored' });
    expect(h.passes()).toBe(0);
    expect(h.lines).toEqual([expect.objectContaining({ message: 'event ignored' })]);
  });
});
