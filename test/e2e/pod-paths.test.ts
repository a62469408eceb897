import fs from 'node:fs';
import path from 'node:path';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionerFunction } from '../../infra/functions.ts';
import { makeProvisionerHandler } from '../../lambdas/provisioner/run.ts';
import { isConditionTrue } from '../../shared/core/index.ts';
import type { ProvisionResult } from '../../shared/usecases/provisioning/provision.ts';
import { HarnessError } from '../harness/errors.ts';
import { awsClientConfig, kube } from '../harness/index.ts';
import { type Invoke, startQueueTrigger, startSchedule } from '../harness/lambda-triggers.ts';
import { cacheDir } from '../harness/paths.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { launched, ProvisionerE2E } from './provisioner-fixture.ts';

// The two ways a pending pod reaches the provisioner, end to end, with the Lambda's own handler:
// - shim path: the shim (its shipped bundle, as a process, with its own ServiceAccount and role)
//   sees kube-scheduler mark the pod Unschedulable and sends a pod event → the stack's pod-event
//   queue (moto SQS) → an event source mapping as the stack configures it (infra/functions.ts) →
//   the handler;
// - poll path: the pending-pods schedule (its default rate, one minute) → the handler.
// Both then register the new Nodes through the handler's delayed follow-ups on the same queue;
// a follow-up run also launches for pods that became pending since the last run. The handler is
// set up as lambdas/provisioner/handler.ts sets it up and each invocation runs as the provisioner
// Lambda (the controller group on the API server, its role on AWS).
// Each pod needs a node of its own, so every pod has its own CreateFleet. The latencies are
// measured, printed and written to .cache/test-results/pod-latency.json; they are not asserted.

const e2e = new ProvisionerE2E('paths', { lifecycleLoop: false });
const POD_CPU = '1500m'; // two never share an m5.large (1.93 cpu allocatable)
/**
 * Each pod selects its own value of this label (the NodePool allows any), so a pod can only run
 * on the node launched for it: without it, identical pods may trade places between the claim the
 * provisioner planned and the node kube-scheduler picks, and the timings would mix pods up. The
 * pod carries the same label, which names it across the pods its ReplicaSet may create.
 */
const SLOT_LABEL = 'flotilla-e2e/slot';
const PODS_PER_PATH = 6;
const POLL_PERIOD_MS = 60_000; // the stack's default pendingPodPollInterval
const BATCH = { batchIdleMs: 1_000, batchMaxMs: 10_000 }; // Karpenter's windows, the defaults
const LEASE_WAIT_MS = 20_000; // as lambdas/provisioner/handler.ts

const slotAny = { key: SLOT_LABEL, operator: 'Exists' };
/** The shim path's NodePool, which the poll path waits to settle. */
let shimPool = '';

/** The account's own SQS client: it plays Lambda's event source mapping and inspects the queue. */
let sqs: SQSClient;
/** The stack's pod-event queue. */
let queueUrl: string;
let shim: ShimProcess | undefined;
const results: { trigger: string; result: ProvisionResult }[] = [];
const createFleetAt = new Map<string, number>();
const stops: (() => Promise<void>)[] = [];
const scheduleErrors: unknown[] = [];

/**
 * The provisioner Lambda's handler, set up as handler.ts sets it up (its role's SQS client for the
 * follow-ups and termination requests, the stack's queues), invoked by `trigger`.
 */
function makeHandler(trigger: 'queue' | 'schedule'): Invoke {
  const provisioner = e2e.queuedProvisioner(queueUrl, { ...BATCH, leaseWaitMs: LEASE_WAIT_MS });
  const handler = makeProvisionerHandler({
    clusterName: CLUSTER,
    ...provisioner,
    provision: async (holder, runTrigger, podEventAtMs) => {
      const result = await provisioner.provision(holder, runTrigger, podEventAtMs);
      results.push({ trigger, result });
      return result;
    },
  });
  return (event) =>
    asLambda(e2e.env.server, 'provisioner', () =>
      handler(event, { awsRequestId: `${trigger}-${Math.random().toString(16).slice(2, 10)}` }),
    );
}

/** The slot of a pod its ReplicaSet `<slot>` created (`<slot>-<suffix>`), or of that ReplicaSet. */
const slotOf = (podOrReplicaSet: string): string => podOrReplicaSet.replace(/-[a-z0-9]{5}$/, '');

/** Records when each slot's pod is first seen Running (polled every 200 ms). */
function watchRunning(app: string): { runningAt: Map<string, number>; stop: () => void } {
  const runningAt = new Map<string, number>();
  const timer = setInterval(async () => {
    const pods = await e2e.podsOf(app).catch(() => []);
    for (const p of pods) {
      const slot = p.metadata?.labels?.[SLOT_LABEL] ?? '';
      if (p.status?.phase === 'Running' && !runningAt.has(slot)) runningAt.set(slot, Date.now());
    }
  }, 200);
  return { runningAt, stop: () => clearInterval(timer) };
}

interface PathSample {
  readonly pod: string;
  readonly toCreateFleetMs: number;
  readonly toRunningMs: number;
}

/**
 * Creates the pods at the given offsets, each by a ReplicaSet of one replica as a user's workload
 * is, waits until all run, and returns each one's latencies. Owned pods, not bare ones: on a busy
 * machine kube-controller-manager's taint-eviction controller can see a pod bound to a new Node
 * before it sees `karpenter.sh/unregistered` lifted from that Node (two watches, no order between
 * them), and deletes the pod; its ReplicaSet makes another, as in any cluster.
 */
async function measure(group: string, app: string, offsetsMs: readonly number[]): Promise<PathSample[]> {
  const watcher = watchRunning(app);
  const createdAt = new Map<string, number>();
  const start = Date.now();
  try {
    for (const [i, offset] of offsetsMs.entries()) {
      const wait = start + offset - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const name = `${app}-${i}`;
      const labels = { app, [SLOT_LABEL]: name };
      createdAt.set(name, Date.now());
      await e2e.env.apps.createNamespacedReplicaSet({
        namespace: e2e.namespace,
        body: {
          metadata: { name, namespace: e2e.namespace, labels: { app } },
          spec: {
            replicas: 1,
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: e2e.podSpec(group, labels, POD_CPU, { nodeSelector: { [SLOT_LABEL]: name } }),
            },
          },
        },
      });
    }
    await waitFor(
      `${offsetsMs.length} pods of ${app} Running`,
      async () => (watcher.runningAt.size === offsetsMs.length ? true : undefined),
      { timeoutMs: 150_000 },
    ).catch(async (error: unknown) => {
      // What happened meanwhile, in the error itself: a CI log keeps only its tail, where the
      // failure is reported.
      const lines: string[] = [];
      const since = new Date(start).toISOString();
      for (const l of e2e.logLines.filter((l) => String(l['time']) >= since && l['message'] !== 'metrics')) {
        lines.push(
          `${String(l['time']).slice(11, 23)} ${String(l['holder'] ?? '')} ${String(l['message'])}: ${String(l['reason'] ?? l['why'] ?? '')}`,
        );
      }
      lines.push(`running: ${[...watcher.runningAt.keys()].join(', ') || 'none'}`);
      lines.push(`schedule errors: ${scheduleErrors.map(String).join('; ') || 'none'}`);
      // Who touched the pods that did not run (an eviction, a preemption, a deletion).
      const events = await e2e.env.core
        .listNamespacedEvent({ namespace: e2e.namespace })
        .then((list) => list.items)
        .catch(() => []);
      for (const ev of events.filter((ev) => !watcher.runningAt.has(slotOf(ev.involvedObject.name ?? '')))) {
        lines.push(
          `event ${ev.involvedObject.kind}/${ev.involvedObject.name} ${ev.reason} (${ev.source?.component ?? ev.reportingComponent ?? ''}): ${ev.message}`,
        );
      }
      for (const line of lines) progress(`${app}: ${line}`);
      throw new HarnessError(`${String(error)}\n${lines.slice(-60).join('\n')}`, { cause: error });
    });
  } finally {
    watcher.stop();
  }
  const claimOf = new Map<string, { claim: string }>();
  for (const { result } of results) {
    if (result.kind !== 'provisioned') continue;
    for (const l of launched(result.claims)) {
      for (const p of l.pods)
        if (!claimOf.has(slotOf(p.name))) claimOf.set(slotOf(p.name), { claim: l.nodeClaim });
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
  queueUrl = account.stack.queueUrls.podEvents;
  // On the provisioner's own EC2 client, which makes the launches.
  account.lambdaEc2.middlewareStack.add(
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
  e2e.env.account.lambdaEc2.middlewareStack.remove(`pod-paths-${e2e.id}`);
  const out = path.join(cacheDir, 'test-results', 'pod-latency.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  // The provisioner's log lines of both paths and where the pods and nodes ended, to read when a
  // path was slow.
  const ended = await Promise.all(
    ['shim', 'poll'].map(async (app) => ({
      app,
      pods: (await e2e.podsOf(app)).map((p) => ({
        name: p.metadata?.name,
        node: p.spec?.nodeName,
        phase: p.status?.phase,
        scheduled: p.status?.conditions?.find((c) => c.type === 'PodScheduled'),
      })),
      nodes: (await e2e.env.core.listNode()).items
        .filter((n) => n.metadata?.labels?.['karpenter.sh/nodepool']?.includes(app))
        .map((n) => ({
          name: n.metadata?.name,
          labels: n.metadata?.labels,
          taints: n.spec?.taints,
          ready: n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
        })),
    })),
  ).catch((error: unknown) => [{ error: String(error) }]);
  fs.writeFileSync(
    path.join(cacheDir, 'test-results', 'pod-paths-log.jsonl'),
    [...e2e.logLines, ...ended].map((l) => JSON.stringify(l)).join('\n'),
  );
});

describe('pending pod → node, through the shim and through the schedule', () => {
  it('shim path: each pod event starts a run that launches its node, and the follow-ups register it', async () => {
    const pool = await e2e.createPool('shim', 'shim', {
      instanceTypes: ['m5.large'],
      requirements: [slotAny],
    });
    shimPool = pool;
    stops.push(
      startQueueTrigger({
        sqs,
        queueUrl,
        row: provisionerFunction,
        queue: 'podEvents',
        invoke: makeHandler('queue'),
      }),
    );
    shim = await startShimProcess({
      server: e2e.env.server,
      kubeconfigPath: (await kube()).shimKubeconfigPath,
      clusterName: CLUSTER,
      queueUrl,
    });
    let samples: PathSample[];
    try {
      samples = await measure(
        'shim',
        'shim',
        Array.from({ length: PODS_PER_PATH }, (_, i) => i * 3_000),
      );
    } finally {
      // Stopped whatever happens, so that the poll path sees no pod event.
      shim.stop();
    }
    record('shim', samples);

    // Only queue-triggered runs happened (no schedule ran), one node per pod, each registered.
    expect(results.every((r) => r.trigger === 'queue')).toBe(true);
    await e2e.expectNodesFor('shim', (await e2e.instancesOf(pool)).length, PODS_PER_PATH);
    const claims = await e2e.nodeClaimsOf(pool);
    await e2e.expectNodesFor('shim', claims.length, PODS_PER_PATH);
    for (const claim of claims) {
      expect(claim.status.conditions.find((c) => c.type === 'Registered')?.status).toBe('True');
    }
    expect(e2e.logLines.some((l) => l['message'] === 'follow-up scheduled')).toBe(true);
    expect(shim.output()).toContain('forwarded pod events');
    shim = undefined;
    // Its wait: the pods (≤ 150 s), so that a slow run fails with what happened to them.
  }, 180_000);

  it('poll path: the one-minute schedule finds the pods, and the follow-ups register their nodes', async () => {
    // The shim path's follow-ups end once its NodeClaims have initialized; wait for that, so only
    // the schedule starts what follows.
    const settling = Date.now();
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
    progress(`shim path settled in ${Date.now() - settling} ms`);
    const pool = await e2e.createPool('poll', 'poll', {
      instanceTypes: ['m5.large'],
      requirements: [slotAny],
    });
    results.length = 0;
    // The shim is stopped: only the schedule starts runs; the queue carries the follow-ups.
    stops.push(
      startSchedule({
        row: provisionerFunction,
        schedule: 'pendingPods',
        invoke: makeHandler('schedule'),
        periodMs: POLL_PERIOD_MS,
        onError: (error) => scheduleErrors.push(error),
      }),
    );
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
    await e2e.expectNodesFor('poll', (await e2e.instancesOf(pool)).length, PODS_PER_PATH);
    // The nodes join within seconds of their launch, so the pods may all run before the first
    // follow-up (delayed 5 s) arrives: wait for it, and for the NodeClaims it registers.
    await waitFor(
      'a follow-up run from the queue, and every NodeClaim of the pool Initialized',
      async () => {
        if (!results.some((r) => r.trigger === 'queue')) return undefined;
        const claims = await e2e.nodeClaimsOf(pool);
        return claims.length >= PODS_PER_PATH &&
          claims.every((c) => isConditionTrue(c.status.conditions, 'Initialized'))
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await e2e.expectNodesFor('poll', (await e2e.nodeClaimsOf(pool)).length, PODS_PER_PATH);
    expect(results.some((r) => r.trigger === 'queue')).toBe(true);
    expect(scheduleErrors).toEqual([]);
    // Its waits: the shim path settling (≤ 60 s), the pods (≤ 150 s), the follow-up (≤ 30 s).
  }, 300_000);
});
