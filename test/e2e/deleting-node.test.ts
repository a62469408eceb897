import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { provisionerFunction, terminationFunction } from '../../infra/functions.ts';
import { makeProvisionerHandler } from '../../lambdas/provisioner/run.ts';
import { makeTerminationHandler } from '../../lambdas/termination/run.ts';
import { awsClientConfig, kube } from '../harness/index.ts';
import { type Invoke, startQueueTrigger, startSchedule } from '../harness/lambda-triggers.ts';
import { progress, waitFor } from '../harness/proc.ts';
import { type ShimProcess, startShimProcess } from '../harness/shim-process.ts';
import { CLUSTER } from '../integration/aws/fixtures.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// A user deletes the NodeClaim of a full node, end to end: the shim (its shipped bundle, with its
// own ServiceAccount and role) sees the deletionTimestamp appear and sends a node deletion to the
// stack's pod-event queue → the provisioner Lambda's handler, through the queue's event source
// mapping, plans for the node's pods while they still run there and launches their replacement;
// the termination Lambda (its queue and its sweep) drains the node meanwhile. A PodDisruptionBudget
// holds every pod in place until the NodePool's terminationGracePeriod, so the drain cannot evict
// before the provisioner acted whatever the timing; then the pods' successors land on the
// replacement, and nothing is launched a second time. Each handler runs as its Lambda: the
// controller group on the API server, its own role on AWS.
//
// A user deletes a Node, with no termination sweep running: the shim's report, relayed by the
// provisioner Lambda to the termination queue, has the termination Lambda delete the Node's
// NodeClaim and drain it at once, as Karpenter's termination controller reacts to its watch.

const e2e = new ProvisionerE2E('deleting', { lifecycleLoop: false });
const { logLines } = e2e;
const REPLICAS = 3;
const POD_CPU = '500m'; // three fill an m5.large (1.93 cpu allocatable); a fourth would not fit
const SWEEP_PERIOD_MS = 2_000; // the termination sweep, shortened from the stack's schedule

const stops: (() => Promise<void>)[] = [];
let shim: ShimProcess | undefined;
const errors: unknown[] = [];

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  shim?.stop();
});

/** The provisioner Lambda's handler, set up as handler.ts sets it up, for the pod-event queue. */
function provisionerHandler(queueUrl: string): Invoke {
  const handler = makeProvisionerHandler({
    clusterName: CLUSTER,
    ...e2e.queuedProvisioner(queueUrl, { batchIdleMs: 1_000, batchMaxMs: 10_000 }),
  });
  return (event) =>
    asLambda(e2e.env.server, 'provisioner', () =>
      handler(event, { awsRequestId: `queue-${Math.random().toString(16).slice(2, 10)}` }),
    );
}

/** The termination Lambda's handler, as handler.ts sets it up, its sweep limited to this run's NodeClaims. */
function terminationHandler(): Invoke {
  const handler = makeTerminationHandler(e2e.terminationLambda());
  return (event) => asLambda(e2e.env.server, 'termination', () => handler(event));
}

let piped = false;

/** Lambda's event source mappings of both queues, and the shim, once for the file. */
async function startPipes(): Promise<void> {
  if (piped) return;
  piped = true;
  const { server, account } = e2e.env;
  const sqs = new SQSClient(awsClientConfig(server));
  const { podEvents: queueUrl, termination: terminationQueueUrl } = account.stack.queueUrls;
  const mappings = [
    { queueUrl, row: provisionerFunction, queue: 'podEvents', invoke: provisionerHandler(queueUrl) },
    {
      queueUrl: terminationQueueUrl,
      row: terminationFunction,
      queue: 'termination',
      invoke: terminationHandler(),
    },
  ] as const;
  stops.push(...mappings.map((m) => startQueueTrigger({ sqs, ...m })));
  shim = await startShimProcess({
    server,
    kubeconfigPath: (await kube()).shimKubeconfigPath,
    clusterName: CLUSTER,
    queueUrl,
  });
}

const launches = (pool: string) =>
  logLines.filter(
    (l) => l['message'] === 'launch decided' && l['nodePool'] === pool && l['outcome'] === 'launched',
  );

describe('a node deleted by its user', () => {
  it('gets its replacement launched for its pods before they are evicted, and only one', async () => {
    const { custom } = e2e.env;
    const pool = await e2e.createPool('deleting', 'deleting', {
      instanceTypes: ['m5.large'],
      capacityTypes: ['on-demand'],
      terminationGracePeriod: '20s',
    });
    await startPipes();
    // The termination sweep's schedule, for this test only.
    const stopSweep = startSchedule({
      row: terminationFunction,
      schedule: 'garbageCollection',
      invoke: terminationHandler(),
      periodMs: SWEEP_PERIOD_MS,
      onError: (error) => errors.push(error),
    });
    stops.push(stopSweep);

    // A Deployment whose pods fill one node, launched through the shim's pod events.
    await e2e.deploy('deleting', 'fill', REPLICAS, POD_CPU);
    const before = await e2e.allRunning('fill', REPLICAS);
    const [original, ...others] = await e2e.nodeClaimsOf(pool);
    expect(others).toEqual([]);
    const oldNode = original?.status.nodeName ?? '';
    expect(before.every((p) => p.spec?.nodeName === oldNode)).toBe(true);
    const oldPods = before.map((p) => p.metadata?.name ?? '').sort();
    expect(launches(pool)).toHaveLength(1);
    // Every pod must stay until the terminationGracePeriod: no eviction can come first.
    await e2e.podDisruptionBudget('fill', REPLICAS);

    // kubectl delete nodeclaim.
    await custom.deleteClusterCustomObject({
      group: 'karpenter.sh',
      version: 'v1',
      plural: 'nodeclaims',
      name: original?.name ?? '',
    });
    // The launch decision is written once the instance is launched, after the NodeClaim exists.
    const decision = await waitFor(
      'a replacement launched',
      async () => launches(pool).find((l) => l['nodeClaim'] !== original?.name),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const replacement = await e2e.env.cluster.nodeClaim(String(decision['nodeClaim']));
    if (replacement === undefined) throw new Error(`NodeClaim ${String(decision['nodeClaim'])} not found`);
    // Launched for the old node's own pods, while they still ran there: none was terminating yet.
    expect(decision).toMatchObject({
      reason: 'provisioning',
      deletingNodePods: REPLICAS,
      podCount: REPLICAS,
    });
    const planned = (decision?.['pods'] ?? []) as string[];
    expect(planned.map((p) => p.split('/')[1]).sort()).toEqual(oldPods);
    const podsAtLaunch = await e2e.podsOf('fill');
    for (const name of oldPods) {
      const p = podsAtLaunch.find((q) => q.metadata?.name === name);
      const deletedAt = p?.metadata?.deletionTimestamp;
      if (deletedAt !== undefined) {
        expect(new Date(deletedAt).getTime()).toBeGreaterThanOrEqual(replacement.createdAtMs ?? Number.NaN);
      }
    }
    expect(shim?.output()).toContain('forwarded node deletions');

    // The drain ends at the terminationGracePeriod; the successors run on the replacement.
    const after = await waitFor(
      `${REPLICAS} pods of fill Running off ${oldNode}`,
      async () => {
        const pods = (await e2e.podsOf('fill')).filter((p) => p.metadata?.deletionTimestamp === undefined);
        return pods.length === REPLICAS &&
          pods.every((p) => p.status?.phase === 'Running' && p.spec?.nodeName !== oldNode)
          ? pods
          : undefined;
      },
      { timeoutMs: 90_000 },
    );
    await waitFor(
      'the deleted NodeClaim gone',
      async () => ((await e2e.env.cluster.nodeClaim(original?.name ?? '')) === undefined ? true : undefined),
      { timeoutMs: 60_000 },
    );
    const nodeOfReplacement = (await e2e.env.cluster.nodeClaim(replacement.name))?.status.nodeName;
    expect(after.every((p) => p.spec?.nodeName === nodeOfReplacement)).toBe(true);
    expect(after.map((p) => p.metadata?.name).some((n) => oldPods.includes(n ?? ''))).toBe(false);

    // Exactly one replacement: the successors took the capacity launched for their predecessors.
    expect(launches(pool).map((l) => l['nodeClaim'])).toEqual([original?.name, replacement.name]);
    expect((await e2e.nodeClaimsOf(pool)).map((c) => c.name)).toEqual([replacement.name]);
    expect(await e2e.instancesOf(pool)).toHaveLength(1);
    const forced = logLines.filter(
      (l) =>
        l['message'] === 'drain step' && l['nodeClaim'] === original?.name && l['action'] === 'forceDelete',
    );
    expect(forced.length).toBeGreaterThan(0);
    progress(
      `deleting node: replacement ${replacement.name} created ${new Date(replacement.createdAtMs ?? 0).toISOString()}, forced at ${String(forced[0]?.['time'])}`,
    );
    expect(errors).toEqual([]);
    await stopSweep();
  }, 240_000);

  it('drains a deleted Node at once, with no termination sweep running', async () => {
    await startPipes();
    const pool = await e2e.createPool('bynode', 'bynode', {
      instanceTypes: ['m5.large'],
      capacityTypes: ['on-demand'],
    });
    await e2e.deploy('bynode', 'bynode', 2, POD_CPU);
    const before = await e2e.allRunning('bynode', 2);
    const [claim] = await e2e.nodeClaimsOf(pool);
    const node = claim?.status.nodeName ?? '';
    expect(before.every((p) => p.spec?.nodeName === node)).toBe(true);

    // kubectl delete node, and nothing but the shim's report to react to it.
    const deletedAtMs = Date.now();
    await e2e.env.core.deleteNode({ name: node });
    const started = await waitFor(
      "the Node's NodeClaim deleted for it",
      async () =>
        logLines.find(
          (l) =>
            l['message'] === 'deleting nodeclaim' && l['reason'] === 'node deleted' && l['node'] === node,
        ),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(started['nodeClaim']).toBe(claim?.name);
    // Drained, its instance terminated and its finalizers released, still with no sweep.
    await waitFor(
      'the Node and its NodeClaim gone',
      async () =>
        (await e2e.env.cluster.node(node)) === undefined &&
        (await e2e.env.cluster.nodeClaim(claim?.name ?? '')) === undefined
          ? true
          : undefined,
      { timeoutMs: 60_000 },
    );
    expect(logLines.some((l) => l['message'] === 'deletions relayed to termination')).toBe(true);
    // Its pods run again, on a node launched for them.
    await waitFor(
      '2 pods of bynode Running off the deleted node',
      async () => {
        const pods = (await e2e.podsOf('bynode')).filter((p) => p.metadata?.deletionTimestamp === undefined);
        return pods.length === 2 &&
          pods.every((p) => p.status?.phase === 'Running' && p.spec?.nodeName !== node)
          ? true
          : undefined;
      },
      { timeoutMs: 90_000 },
    );
    progress(
      `deleted node: NodeClaim deletion ${Date.parse(String(started['time'])) - deletedAtMs} ms after the Node's`,
    );
    expect(errors).toEqual([]);
  }, 180_000);
});
