import { describe, expect, it } from 'vitest';
import { makeDisruptionHandler } from '../../../lambdas/disruption/run.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { DisruptionPassResult } from '../../../shared/usecases/disruption/controller.ts';

// The disruption Lambda's event handling with real event JSON: the schedule's event runs one pass
// held by the invocation; anything else is acknowledged and logged.

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

function harness(pass: (holder: string) => Promise<DisruptionPassResult>) {
  const lines: Record<string, unknown>[] = [];
  const holders: string[] = [];
  const handler = makeDisruptionHandler({
    logger: makeLogger({}, { sink: (l) => lines.push(JSON.parse(l)) }),
    pass: (holder) => {
      holders.push(holder);
      return pass(holder);
    },
  });
  return { handler, lines, holders };
}

const result: DisruptionPassResult = { kind: 'pass', decisions: [], inFlight: 0 };

describe('disruption Lambda handler', () => {
  it('runs one pass per schedule tick, holding the lease as the invocation', async () => {
    const h = harness(async () => result);
    expect(await h.handler(scheduled, { awsRequestId: 'req-1' })).toEqual(result);
    expect(h.holders).toEqual(['req-1']);
  });

  it('acknowledges and logs an event that is not its schedule', async () => {
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
