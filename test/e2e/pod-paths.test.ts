import fs from 'node:fs';
import path from 'node:path';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionerFunction } from '../../infra/functions.ts';
import { makeProvisionerHandler } from '../../lambdas/provisioner/run.ts';
import { makeFollowUpScheduler } from '../../shared/adapters/aws/follow-up.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { isConditionTrue } from '../../shared/ports/cluster.ts';
import { reconcileLifecycle } from '../../shared/usecases/lifecycle.ts';
import type { ProvisionResult } from '../../shared/usecases/provision.ts';
import { awsClientConfig } from '../harness/index.ts';
import { cacheDir } from '../harness/paths.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { launched, ProvisionerE2E } from './provisioner-fixture.ts';

// The two ways a pending pod reaches the provisioner, end to end, with the Lambda's own handler:
// - shim path: the shim (its shipped bundle, as a process) sees kube-scheduler mark the pod
//   Unschedulable and sends a pod event → the pod-event queue (moto SQS) → an event source
//   mapping as the stack configures it (infra/functions.ts) → the handler;
// - poll path: the pending-pods schedule (its default rate, one minute) → the handler.
// Both then register the new Nodes through the handler's delayed follow-ups on the same queue;
// a follow-up run also launches for pods that became pending since the last run.
// Each pod needs a node of its own, so every pod has its own CreateFleet. The latencies are
// measured, printed and written to .cache/test-results/pod-latency.json; they are not asserted.

const e2e = new ProvisionerE2E('paths', { lifecycleLoop: false });
const POD_CPU = '1500m'; // two never share an m5.large (1.93 cpu allocatable)
/**
 * Each pod selects its own value of this label (the NodePool allows any), so a pod can only run
 * on the node launched for it: without it, identical pods may trade places between the claim the
 * provisioner planned and the node kube-scheduler picks, and the timings would mix pods up.
 */
const SLOT_LABEL = 'flotilla-e2e/slot';
const PODS_PER_PATH = 6;
const POLL_PERIOD_MS = 60_000; // the stack's default pendingPodPollInterval
const BATCH = { batchIdleMs: 1_000, batchMaxMs: 10_000 }; // Karpenter's windows, the defaults
const LEASE_WAIT_MS = 20_000; // as lambdas/provisioner/handler.ts

const slotAny = { key: SLOT_LABEL, operator: 'Exists' };
const shimPool = '';

let sqs: SQSClient;
let queueUrl: string;
let shim: ShimProcess | undefined;
const results: { trigger: string; result: ProvisionResult }[] = [];
const createFleetAt = new Map<string, number>();
const stops: (() => Promise<void>)[] = [];

/** One invocation of the provisioner Lambda's handler, wired as handler.ts wires it. */
function makeHandler() {
  const { cluster, account } = e2e.env;
  const scheduleFollowUp = makeFollowUpScheduler({
    sqs,
    queueUrl,
    clusterName: CLUSTER,
    leases: e2e.leases(),
    clock: systemClock,
    logger: e2e.logger,
  });
  let trigger = 'unknown';
  const handler = makeProvisionerHandler({
    clusterName: CLUSTER,
    logger: e2e.logger,
    provision: async (holder) => {
      const result = await e2e.run(holder, { ...BATCH, leaseWaitMs: LEASE_WAIT_MS });
      results.push({ trigger, result });
      return result;
    },
    reconcileLifecycle: () =>
      reconcileLifecycle({ cluster, cloud: account.cloud, logger: e2e.logger }, new Date()),
    scheduleFollowUp: async (holder, claims) => void (await scheduleFollowUp(holder, claims)),
  });
  return (event: unknown, kind: string) => {
    trigger = kind;
    return handler(event, { awsRequestId: `${kind}-${Math.random().toString(16).slice(2, 10)}` });
  };
}

/**
 * Lambda's SQS event source mapping as the provisioner's row configures it: long-polls the queue,
 * gathers up to `batchSize` messages within the batching window, invokes at most
 * `maxConcurrency` handlers at once, deletes what the handler did not report as failed (the rest
 * reappear after the visibility timeout).
 */
function startQueueTrigger(invoke: ReturnType<typeof makeHandler>): () => Promise<void> {
  const mapping = provisionerFunction.triggers.find((t) => t.kind === 'queue');
  if (mapping?.kind !== 'queue') throw new Error('the provisioner has no queue trigger');
  const batchSize = mapping.batchSize;
  const windowMs = mapping.maxBatchingWindow?.toMilliseconds() ?? 0;
  const maxConcurrency = mapping.maxConcurrency ?? 1_000;
  let running = true;
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    while (running) {
      const batch: Message[] = [];
      const windowEnds = Date.now() + windowMs;
      do {
        const page = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(10, batchSize - batch.length),
            WaitTimeSeconds: batch.length === 0 ? 1 : 0,
            VisibilityTimeout: 120,
          }),
        );
        batch.push(...(page.Messages ?? []));
        if (batch.length === 0) break;
        if (batch.length < batchSize && Date.now() < windowEnds) await new Promise((r) => setTimeout(r, 100));
      } while (running && batch.length < batchSize && Date.now() < windowEnds);
      if (batch.length === 0) continue;
      while (inFlight.size >= maxConcurrency) await Promise.race(inFlight);
      const records = batch.map((m) => ({
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
      }));
      const invocation = (async () => {
        const response = (await invoke({ Records: records }, 'queue')) as {
          batchItemFailures: { itemIdentifier: string }[];
        };
        const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        const done = records.filter((r) => !failed.has(r.messageId));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
            }),
          );
        }
      })().finally(() => inFlight.delete(invocation));
      inFlight.add(invocation);
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all(inFlight);
  };
}

/** The EventBridge schedule: one invocation every `periodMs`, the first after one period. */
function startSchedule(invoke: ReturnType<typeof makeHandler>, periodMs: number): () => Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    const p = invoke(
      { version: '0', source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
      'schedule',
    ).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, periodMs);
  return async () => {
    clearInterval(timer);
    await Promise.all(inFlight);
  };
}

/** Records when each pod is first seen Running (polled every 200 ms). */
function watchRunning(app: string): { runningAt: Map<string, number>; stop: () => void } {
  const runningAt = new Map<string, number>();
  const timer = setInterval(async () => {
    const pods = await e2e.podsOf(app).catch(() => []);
    for (const p of pods) {
      const name = p.metadata?.name ?? '';
      if (p.status?.phase === 'Running' && !runningAt.has(name)) runningAt.set(name, Date.now());
    }
  }, 200);
  return { runningAt, stop: () => clearInterval(timer) };
}

interface PathSample {
  readonly pod: string;
  readonly toCreateFleetMs: number;
  readonly toRunningMs: number;
}

/** Creates the pods at the given offsets, waits until all run, and returns each one's latencies. */
async function measure(group: string, app: string, offsetsMs: readonly number[]): Promise<PathSample[]> {
  const watcher = watchRunning(app);
  const createdAt = new Map<string, number>();
  const start = Date.now();
  try {
    for (const [i, offset] of offsetsMs.entries()) {
      const wait = start + offset - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const name = `${app}-${i}`;
      createdAt.set(name, Date.now());
      await e2e.env.core.createNamespacedPod({
        namespace: e2e.namespace,
        body: {
          metadata: { name, namespace: e2e.namespace, labels: { app } },
          spec: e2e.podSpec(group, { app }, POD_CPU, { nodeSelector: { [SLOT_LABEL]: name } }),
        },
      });
    }
    await waitFor(
      `${offsetsMs.length} pods of ${app} Running`,
      async () => (watcher.runningAt.size === offsetsMs.length ? true : undefined),
      { timeoutMs: 150_000 },
    );
  } finally {
    watcher.stop();
  }
  const claimOf = new Map<string, { claim: string }>();
  for (const { result } of results) {
    if (result.kind !== 'provisioned') continue;
    for (const l of launched(result.claims)) {
      for (const p of l.pods) if (!claimOf.has(p.name)) claimOf.set(p.name, { claim: l.nodeClaim });
    }
  }
  return [...createdAt].map(([pod, created]) => {
    const launch = claimOf.get(pod);
    const fleet = launch === undefined ? undefined : createFleetAt.get(launch.claim);
    const running = watcher.runningAt.get(pod);
    if (launch === undefined || fleet === undefined || running === undefined) {
      throw new Error(`pod ${pod} ran without a CreateFleet of its own (claim ${launch?.claim ?? 'none'})`);
    }
    return {
      pod,
      toCreateFleetMs: fleet - created,
      toRunningMs: running - created,
    };
  });
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const report: Record<string, unknown> = {};

function record(pathName: string, samples: readonly PathSample[]): void {
  const summary = {
    samples: samples.length,
    createFleetP50Ms: percentile(
      samples.map((s) => s.toCreateFleetMs),
      50,
    ),
    createFleetP95Ms: percentile(
      samples.map((s) => s.toCreateFleetMs),
      95,
    ),
    runningP50Ms: percentile(
      samples.map((s) => s.toRunningMs),
      50,
    ),
    runningP95Ms: percentile(
      samples.map((s) => s.toRunningMs),
      95,
    ),
    batchClosedMs: e2e.logLines
      .filter((l) => l['message'] === 'batch closed')
      .map((l) => l['durationMs'])
      .slice(-samples.length),
    pods: samples,
  };
  report[pathName] = summary;
  progress(
    `pod latency, ${pathName}: CreateFleet p50 ${summary.createFleetP50Ms} ms, p95 ${summary.createFleetP95Ms} ms; Running p50 ${summary.runningP50Ms} ms, p95 ${summary.runningP95Ms} ms (${samples.length} pods)`,
  );
}

beforeAll(async () => {
  const { server, account } = e2e.env;
  sqs = new SQSClient(awsClientConfig(server));
  queueUrl =
    (await sqs.send(new CreateQueueCommand({ QueueName: `${CLUSTER}-pod-events-${e2e.id}` }))).QueueUrl ?? '';
  account.ec2.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'CreateFleetCommand') {
        const claim = /"karpenter\.sh\/nodeclaim","Value":"([^"]+)"/.exec(JSON.stringify(args.input))?.[1];
        if (claim !== undefined && !createFleetAt.has(claim)) createFleetAt.set(claim, Date.now());
      }
      return next(args);
    },
    { step: 'initialize', name: `pod-paths-${e2e.id}` },
  );
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  shim?.stop();
  e2e.env.account.ec2.middlewareStack.remove(`pod-paths-${e2e.id}`);
  const out = path.join(cacheDir, 'test-results', 'pod-latency.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
});

describe('pending pod → node, through the shim and through the schedule', () => {
  it('shim path: each pod event starts a run that launches its node, and the follow-ups register it', async () => {
    const pool = await e2e.createPool('shim', 'shim', {
      instanceTypes: ['m5.large'],
      requirements: [slotAny],
    });
    const invoke = makeHandler();
    stops.push(startQueueTrigger(invoke));
    shim = await startShimProcess({
      server: e2e.env.server,
      kubeconfigPath: e2e.env.kubeconfigPath,
      clusterName: CLUSTER,
      queueUrl,
    });
    const samples = await measure(
      'shim',
      'shim',
      Array.from({ length: PODS_PER_PATH }, (_, i) => i * 3_000),
    );
    record('shim', samples);

    // Only queue-triggered runs happened (no schedule ran), one node per pod, each registered.
    expect(results.every((r) => r.trigger === 'queue')).toBe(true);
    expect(await e2e.instancesOf(pool)).toHaveLength(PODS_PER_PATH);
    const claims = await e2e.nodeClaimsOf(pool);
    expect(claims).toHaveLength(PODS_PER_PATH);
    for (const claim of claims) {
      expect(claim.status.conditions.find((c) => c.type === 'Registered')?.status).toBe('True');
    }
    expect(e2e.logLines.some((l) => l['message'] === 'follow-up scheduled')).toBe(true);
    expect(shim.output()).toContain('forwarded pod events');
    shim.stop();
    shim = undefined;
  });

  it('poll path: the one-minute schedule finds the pods, and the follow-ups register their nodes', async () => {
    // The shim path's follow-ups end once its NodeClaims have initialized; wait for that, so only
    // the schedule starts what follows.
    await waitFor(
      'the shim path settled: NodeClaims initialized, no follow-up left on the queue',
      async () => {
        const claims = await e2e.nodeClaimsOf(shimPool);
        if (!claims.every((c) => isConditionTrue(c.status.conditions, 'Initialized'))) return undefined;
        const { Attributes: a = {} } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
        );
        const left = (
          [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ] as const
        )
          .map((k) => Number(a[k] ?? 0))
          .reduce((x, y) => x + y, 0);
        return left === 0 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const pool = await e2e.createPool('poll', 'poll', {
      instanceTypes: ['m5.large'],
      requirements: [slotAny],
    });
    results.length = 0;
    const invoke = makeHandler();
    // The shim is stopped: only the schedule starts runs; the queue carries the follow-ups.
    stops.push(startSchedule(invoke, POLL_PERIOD_MS));
    const spacing = POLL_PERIOD_MS / PODS_PER_PATH;
    const samples = await measure(
      'poll',
      'poll',
      Array.from({ length: PODS_PER_PATH }, (_, i) => 2_000 + i * spacing),
    );
    record('poll', samples);

    const launching = results.filter(
      (r) => r.result.kind === 'provisioned' && launched(r.result.claims).some((l) => l.nodePool === pool),
    );
    // The schedule's run launches first; while those NodeClaims wait for their Nodes, the
    // follow-ups it sends (the queue carries nothing else now) also pick up pods that became
    // pending since.
    expect(launching[0]?.trigger).toBe('schedule');
    expect(await e2e.instancesOf(pool)).toHaveLength(PODS_PER_PATH);
    expect(results.some((r) => r.trigger === 'queue')).toBe(true);
  });
});
