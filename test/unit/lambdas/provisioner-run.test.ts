import { describe, expect, it } from 'vitest';
import { decodeQueueMessage, makeProvisionerHandler } from '../../../lambdas/provisioner/run.ts';
import { followUpVersion, podEventVersion } from '../../../shared/messages/pod-event.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import type { ProvisionResult } from '../../../shared/usecases/provisioning/provision.ts';
import { quietMetrics } from '../../fixtures/metrics.ts';

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

function followUp(overrides: Record<string, unknown> = {}) {
  return JSON.stringify({
    version: followUpVersion,
    kind: 'LifecycleFollowUp',
    cluster,
    nodeClaims: ['default-0a1b2c3d4e'],
    requestedAt: '2026-11-21T10:00:05Z',
    ...overrides,
  });
}

interface HarnessOptions {
  readonly outcome?: () => Promise<ProvisionResult>;
  /** NodeClaims the lifecycle pass reports as not initialized. */
  readonly uninitialized?: readonly string[];
  readonly followUp?: (holder: string, claims: readonly string[]) => Promise<{ delaySeconds: number }>;
}

function harness(options: HarnessOptions = {}) {
  const holders: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const followUps: { holder: string; claims: readonly string[] }[] = [];
  let lifecycleRuns = 0;
  const handler = makeProvisionerHandler({
    clusterName: cluster,
    logger: makeLogger({}, { sink: (line) => logs.push(JSON.parse(line)) }),
    metrics: quietMetrics,
    provision: (holder) => {
      holders.push(holder);
      return (options.outcome ?? (() => Promise.resolve(done)))();
    },
    reconcileLifecycle: () => {
      lifecycleRuns += 1;
      return Promise.resolve({ uninitialized: (options.uninitialized ?? []).map((name) => ({ name })) });
    },
    scheduleFollowUp: (holder, claims) => {
      followUps.push({ holder, claims });
      return options.followUp === undefined
        ? Promise.resolve({ delaySeconds: 5 })
        : options.followUp(holder, claims);
    },
  });
  return { handler, holders, logs, followUps, lifecycleRuns: () => lifecycleRuns };
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
    const h = harness({ outcome: () => Promise.reject(new Error('API server unreachable')) });
    const response = await h.handler({
      Records: [sqsRecord('m1', podEvent('a')), sqsRecord('m2', podEvent('b'))],
    });
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(h.logs.find((l) => l['message'] === 'provisioning failed')).toMatchObject({
      pods: ['apps/a', 'apps/b'],
    });
  });

  it('lets schedule failures propagate so EventBridge retries', async () => {
    const h = harness({ outcome: () => Promise.reject(new Error('boom')) });
    await expect(h.handler(scheduled)).rejects.toThrow('boom');
  });

  it('acknowledges and logs an event of another shape', async () => {
    const h = harness();
    expect(await h.handler({ hello: 'world' })).toEqual({ kind: 'ignored' });
    expect(h.holders).toEqual([]);
    expect(await h.handler({ Records: [] })).toEqual({ kind: 'ignored' });
    expect(h.logs.filter((l) => l['message'] === 'event ignored')).toHaveLength(2);
  });

  it('asks for a follow-up while NodeClaims are not initialized, and not otherwise', async () => {
    const waiting = harness({ uninitialized: ['default-aaaaaaaaaa', 'default-bbbbbbbbbb'] });
    await waiting.handler(scheduled, { awsRequestId: 'req-3' });
    expect(waiting.followUps).toEqual([
      { holder: 'req-3', claims: ['default-aaaaaaaaaa', 'default-bbbbbbbbbb'] },
    ]);

    const settled = harness();
    await settled.handler(scheduled, { awsRequestId: 'req-4' });
    expect(settled.lifecycleRuns()).toBe(1);
    expect(settled.followUps).toEqual([]);
  });

  it('runs for a follow-up message alone and rejects one for another cluster', async () => {
    const h = harness();
    const response = await h.handler(
      { Records: [sqsRecord('f1', followUp()), sqsRecord('f2', followUp({ cluster: 'other' }))] },
      { awsRequestId: 'req-5' },
    );
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'f2' }] });
    expect(h.holders).toEqual(['req-5']);
    expect(h.lifecycleRuns()).toBe(1);
    expect(h.logs.find((l) => l['message'] === 'pod event rejected')).toMatchObject({
      messageId: 'f2',
      problem: 'message is for cluster "other", this provisioner serves "prod-eu"',
    });
  });

  it('decodes pod events and follow-ups for its cluster, and rejects the rest with the problem', () => {
    expect(decodeQueueMessage(followUp(), cluster)).toMatchObject({
      ok: true,
      message: { kind: 'followUp', followUp: { nodeClaims: ['default-0a1b2c3d4e'] } },
    });
    expect(decodeQueueMessage(podEvent('a'), cluster)).toMatchObject({
      ok: true,
      message: { kind: 'podEvent', event: { namespace: 'apps', name: 'a' } },
    });
    expect(decodeQueueMessage(followUp({ nodeClaims: 'x' }), cluster)).toEqual({
      ok: false,
      problem: expect.stringContaining('nodeClaims'),
    });
    expect(decodeQueueMessage('{not json', cluster)).toEqual({
      ok: false,
      problem: expect.stringMatching(/^not JSON/),
    });
  });

  it('runs once for a batch mixing pod events and follow-ups, and returns them all when the run fails', async () => {
    const h = harness({ outcome: () => Promise.reject(new Error('API server unreachable')) });
    const response = await h.handler(
      { Records: [sqsRecord('f1', followUp()), sqsRecord('p1', podEvent('a')), sqsRecord('x', 'nope')] },
      { awsRequestId: 'req-7' },
    );
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: 'f1' }, { itemIdentifier: 'p1' }, { itemIdentifier: 'x' }],
    });
    expect(h.holders).toEqual(['req-7']);
    expect(h.logs.find((l) => l['message'] === 'provisioning failed')).toMatchObject({ pods: ['apps/a'] });
  });

  it('keeps a successful run when the follow-up cannot be sent, and says so', async () => {
    const h = harness({
      uninitialized: ['default-aaaaaaaaaa'],
      followUp: () => Promise.reject(new Error('AccessDenied')),
    });
    const response = await h.handler(
      { Records: [sqsRecord('m1', podEvent('a'))] },
      { awsRequestId: 'req-6' },
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(h.logs.find((l) => l['message'] === 'follow-up not scheduled')).toMatchObject({
      level: 'error',
      nodeClaims: ['default-aaaaaaaaaa'],
      fallback: 'pending-pods schedule',
    });
  });
});
