import { describe, expect, it } from 'vitest';
import { makeProvisionerHandler, parseTrigger } from '../../../lambdas/provisioner/run.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { podEventVersion } from '../../../shared/runtime/pod-event.ts';
import type { ProvisionResult } from '../../../shared/usecases/provision.ts';

const cluster = 'prod-eu';

function podEvent(name: string, overrides: Record<string, unknown> = {}) {
  return JSON.stringify({
    version: podEventVersion,
    kind: 'PodUnschedulable',
    cluster,
    namespace: 'apps',
    name,
    uid: `uid-${name}`,
    observedAt: '2026-11-21T10:00:00Z',
    ...overrides,
  });
}

function sqsRecord(messageId: string, body: string) {
  return {
    messageId,
    receiptHandle: 'AQEB…',
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1763719200000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1763719200001',
    },
    messageAttributes: {},
    md5OfBody: '0',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:flotilla-prod-eu-pod-events',
    awsRegion: 'eu-west-1',
  };
}

const scheduled = {
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-11-21T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/flotilla-prod-eu-pending-pods'],
  detail: {},
};

const done: ProvisionResult = { kind: 'skipped', why: 'no provisionable pods' };

function harness(outcome: () => Promise<ProvisionResult> = () => Promise.resolve(done)) {
  const holders: string[] = [];
  const logs: Record<string, unknown>[] = [];
  let lifecycleRuns = 0;
  const handler = makeProvisionerHandler({
    clusterName: cluster,
    logger: makeLogger({}, { sink: (line) => logs.push(JSON.parse(line)) }),
    provision: (holder) => {
      holders.push(holder);
      return outcome();
    },
    reconcileLifecycle: () => {
      lifecycleRuns += 1;
      return Promise.resolve();
    },
  });
  return { handler, holders, logs, lifecycleRuns: () => lifecycleRuns };
}

describe('provisioner handler', () => {
  it('runs one provisioning (then the lifecycle pass) per schedule tick, holding the lease as the invocation', async () => {
    const h = harness();
    expect(await h.handler(scheduled, { awsRequestId: 'req-1' })).toEqual(done);
    expect(h.holders).toEqual(['req-1']);
    expect(h.lifecycleRuns()).toBe(1);
  });

  it('runs once for a batch of valid pod events and reports malformed ones as failures', async () => {
    const h = harness();
    const response = await h.handler(
      {
        Records: [
          sqsRecord('m1', podEvent('a')),
          sqsRecord('m2', '{not json'),
          sqsRecord('m3', podEvent('b')),
          sqsRecord('m4', podEvent('c', { cluster: 'other' })),
          sqsRecord('m5', podEvent('d', { version: 'v0' })),
        ],
      },
      { awsRequestId: 'req-2' },
    );
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm4' }, { itemIdentifier: 'm5' }],
    });
    expect(h.holders).toEqual(['req-2']);
    expect(h.logs.filter((l) => l['message'] === 'pod event rejected').map((l) => l['messageId'])).toEqual([
      'm2',
      'm4',
      'm5',
    ]);
  });

  it('does not provision for a batch with only malformed messages', async () => {
    const h = harness();
    expect(await h.handler({ Records: [sqsRecord('m1', 'x')] })).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm1' }],
    });
    expect(h.holders).toEqual([]);
  });

  it('returns every valid message when provisioning fails, so the queue redelivers them', async () => {
    const h = harness(() => Promise.reject(new Error('API server unreachable')));
    const response = await h.handler({
      Records: [sqsRecord('m1', podEvent('a')), sqsRecord('m2', podEvent('b'))],
    });
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(h.logs.find((l) => l['message'] === 'provisioning failed')).toMatchObject({
      pods: ['apps/a', 'apps/b'],
    });
  });

  it('lets schedule failures propagate so EventBridge retries', async () => {
    const h = harness(() => Promise.reject(new Error('boom')));
    await expect(h.handler(scheduled)).rejects.toThrow('boom');
  });

  it('acknowledges and logs an event of another shape', async () => {
    const h = harness();
    expect(await h.handler({ hello: 'world' })).toEqual({ kind: 'ignored' });
    expect(h.holders).toEqual([]);
    expect(parseTrigger({ Records: [] }, cluster)).toEqual({ kind: 'unknown' });
  });
});
