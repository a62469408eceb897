import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { SHIM_MEMORY_MODEL, shimMemoryFor } from '../../../infra/cluster-size.ts';
import { functionMemoryMb } from '../../../infra/lambda-functions.ts';
import { SCHEDULED_EVENT } from '../../harness/lambda-triggers.ts';
import { cacheDir } from '../../harness/paths.ts';
import {
  bundledCode,
  functionOf,
  type InvocationResult,
  invokeLambda,
  type LambdaName,
} from './lambda-step.ts';
import {
  clearLeases,
  createPendingPods,
  deletePendingPods,
  FLOTILLA_FLOW_SCHEMAS,
  type LoadedCluster,
  loadCluster,
  PENDING_PODS,
  purgePodEvents,
  receivePodEvent,
  settle,
  summaryObjectBytes,
} from './loader.ts';
import { scrape, traffic } from './metrics.ts';
import { parseSizes, planUtilisation, type ScaleSize, sizeLabel } from './plan.ts';
import { say } from './progress.ts';
import { markdown, type StepRow, TABLE_NOTES } from './report.ts';
import { measureShim, type RunningShim } from './shim-step.ts';

// `npm run bench:scale` (README.md): how Flotilla's Lambdas and the shim behave on a large
// cluster. For each size it loads a fresh control plane of the harness with realistic objects
// (loader.ts), then runs each step in a fresh process as the stack deploys it, reading the API
// server's own counters around it (metrics.ts):
//
//   shim                     its start with 100 unschedulable pods: time to sync, RSS; as deployed it
//                            then keeps running through the Lambda steps
//   disruption (first pass)  the first disruption pass over the loaded NodeClaims
//   provisioner, 100 pending one scheduled run that launches for 100 unschedulable pods
//   provisioner, idle        one scheduled run with nothing pending (after the pods and the
//                            NodeClaims launched for them are deleted)
//   provisioner, shim path   one more pod: the shim's event, taken from the queue, is the event
//                            (pod created → queue → batch closed → CreateFleet answered)
//   termination sweep        the schedule's sweep, which terminates those deleted NodeClaims
//   garbage collector        one pass
//   disruption (steady)      a pass once consolidateAfter (1m) has passed since the first: every
//                            NodeClaim is Consolidatable, so consolidation runs
//   disruption, a minute on  the next pass
//   interruption             one spot interruption warning for a loaded spot node
//
// Every Lambda gets the memory the stack gives it for a cluster of the size being measured.
// A step that runs out of memory is run again with a large heap (its true peak); the lease the
// dead process held is cleared first, so the next step does its own work rather than wait.

const sizes: ScaleSize[] = parseSizes(process.env['SCALE_SIZES'] ?? '500x5000,2000x30000');
const seed = Number(process.env['SCALE_SEED'] ?? '1');
const heapSetting = process.env['SCALE_HEAP'] ?? 'lambda';
const heapMb = heapSetting === 'lambda' ? undefined : Number(heapSetting);
const oomRetryMb = Number(process.env['SCALE_OOM_RETRY_MB'] ?? '8192');
const CONSOLIDATE_AFTER_MS = 60_000;

interface SizeReport {
  readonly size: string;
  readonly loadSeconds: Readonly<Record<string, number>>;
  readonly objectBytes: Readonly<Record<string, number>>;
  readonly utilisation: { readonly cpu: number; readonly memory: number };
  readonly workloads: number;
  readonly steps: StepRow[];
  readonly error?: string;
}

it(
  'bench:scale',
  async () => {
    const startedAt = new Date();
    const reports: SizeReport[] = [];
    for (const size of sizes) {
      const report = await benchSize(size);
      reports.push(report);
      console.log(`\n## ${report.size}\n\n${markdown(report.steps)}\n`);
      write(startedAt, reports);
    }
    const rows = reports.flatMap((r) => r.steps);
    const file = write(startedAt, reports);
    console.log(
      [
        '',
        `# bench:scale (${startedAt.toISOString()}, seed ${seed}, heap ${heapSetting})`,
        '',
        `Code: ${bundledCode.head?.slice(0, 12)} with ${bundledCode.changed?.length ?? 0} files changed in the working tree, bundled at ${bundledCode.at}.`,
        '',
        ...reports.map(
          (r) =>
            `- ${r.size}: ${r.workloads} Deployments, requests at ${(r.utilisation.cpu * 100).toFixed(0)}% cpu / ${(r.utilisation.memory * 100).toFixed(0)}% memory of allocatable; one pod ${r.objectBytes['workloadPod']} B, DaemonSet pod ${r.objectBytes['daemonSetPod']} B, Node ${r.objectBytes['node']} B, NodeClaim ${r.objectBytes['nodeClaim']} B of JSON; loaded in ${Object.values(
              r.loadSeconds,
            )
              .reduce((a, b) => a + b, 0)
              .toFixed(0)} s (${Object.entries(r.loadSeconds)
              .map(([k, v]) => `${k.split(' (')[0]} ${v}s`)
              .join(', ')})${r.error ? `; FAILED: ${r.error}` : ''}`,
        ),
        '',
        markdown(rows),
        '',
        ...TABLE_NOTES.map((n) => `- ${n}`),
        '',
        `JSON: ${file}`,
      ].join('\n'),
    );
    expect(rows.length).toBeGreaterThan(0);
  },
  24 * 3600_000,
);

function write(startedAt: Date, reports: readonly SizeReport[]): string {
  const dir = path.join(cacheDir, 'bench');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `scale-${startedAt.toISOString().replaceAll(':', '')}.json`);
  fs.writeFileSync(
    file,
    `${JSON.stringify({ startedAt: startedAt.toISOString(), seed, heap: heapSetting, code: bundledCode, sizes: reports }, null, 2)}\n`,
  );
  fs.writeFileSync(file.replace(/\.json$/, '.md'), markdown(reports.flatMap((r) => r.steps)));
  return file;
}

async function benchSize(size: ScaleSize): Promise<SizeReport> {
  const label = sizeLabel(size);
  const steps: StepRow[] = [];
  let cluster: LoadedCluster | undefined;
  try {
    cluster = await loadCluster(size, seed);
    await runSteps(cluster, steps);
    return {
      size: label,
      loadSeconds: cluster.timings,
      objectBytes: cluster.objectBytes,
      utilisation: planUtilisation(cluster.plan),
      workloads: cluster.plan.workloads.length,
      steps,
    };
  } catch (error) {
    say(`${label} failed: ${error instanceof Error ? error.stack : String(error)}`);
    return {
      size: label,
      loadSeconds: cluster?.timings ?? {},
      objectBytes: cluster?.objectBytes ?? {},
      utilisation: cluster ? planUtilisation(cluster.plan) : { cpu: 0, memory: 0 },
      workloads: cluster?.plan.workloads.length ?? 0,
      steps,
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    await cluster?.stop();
  }
}

async function runSteps(cluster: LoadedCluster, steps: StepRow[]): Promise<void> {
  const label = sizeLabel(cluster.size);
  const podsNow = () => cluster.size.pods + (cluster.pending?.names.length ?? 0);
  const daemonPods = cluster.size.nodes * cluster.plan.daemonSets.length;
  const b = cluster.objectBytes;
  const objectBytes = {
    pods:
      ((cluster.size.pods - daemonPods) * (b['workloadPod'] ?? 0) + daemonPods * (b['daemonSetPod'] ?? 0)) /
      cluster.size.pods,
    nodes: b['node'] ?? 0,
    nodeclaims: b['nodeClaim'] ?? 0,
  };

  await createPendingPods(cluster, seed);

  // The shim, started while 100 pods are unschedulable: synced once it forwarded all 100. As
  // deployed, it then keeps running through the Lambda steps (in the cluster it always runs); when
  // it died, the steps run without it, as in a cluster where it crash-loops.
  const shimStep = async (
    heap: number | undefined,
  ): Promise<{ row: Omit<StepRow, 'largeHeap'>; running?: RunningShim }> => {
    await settle(cluster.admin, 60_000);
    say(`${label}: shim${heap === undefined ? '' : ` (heap ${heap} MB)`}`);
    const before = await scrape(cluster.admin);
    const { result: shim, running } = await measureShim({
      server: cluster.server,
      kubeconfigPath: cluster.kube.shimKubeconfigPath,
      queueUrl: cluster.stack.queueUrls.podEvents,
      summaryBucket: cluster.summaryBucket,
      memory: shimMemoryFor(SHIM_MEMORY_MODEL, cluster.size),
      expectedEvents: PENDING_PODS,
      timeoutMs: 10 * 60_000,
      logFile: path.join(cluster.dir, 'logs', `step-shim${heap === undefined ? '' : '-large-heap'}.log`),
      keepRunning: heap === undefined,
      ...(heap === undefined ? {} : { heapMb: heap }),
    });
    const after = await scrape(cluster.admin);
    say(`${label}: shim ${shim.ok ? 'ok' : shim.error}`);
    return {
      row: {
        size: label,
        step: 'shim start until synced',
        runsAs: `shim (${shim.memoryLimit} limit, ${shim.nodeOptions})`,
        ok: shim.ok,
        outcome: shim.ok ? 'ok' : shim.outOfMemory ? 'out of memory (heap)' : (shim.error ?? 'failed'),
        ...(shim.syncedMs === undefined ? {} : { wallMs: shim.syncedMs }),
        peakRssBytes: shim.peakRssBytes,
        traffic: traffic(before, after, FLOTILLA_FLOW_SCHEMAS),
        podsInCluster: podsNow(),
        objectBytes,
        details: { ...shim },
      },
      ...(running === undefined ? {} : { running }),
    };
  };
  const shim = await shimStep(undefined);
  const shimRow =
    !shim.row.ok && oomRetryMb > 0 ? { ...shim.row, largeHeap: (await shimStep(oomRetryMb)).row } : shim.row;
  steps.push(shimRow);
  const runningShim = shim.running;
  try {
    await lambdaSteps(cluster, steps, runningShim, objectBytes, podsNow);
  } finally {
    if (runningShim !== undefined) {
      steps[steps.indexOf(shimRow)] = {
        ...shimRow,
        details: {
          ...shimRow.details,
          aliveAfterLambdaSteps: runningShim.alive(),
          peakRssWhileRunningBytes: runningShim.peakRssBytes(),
        },
      };
      runningShim.stop();
    }
  }
}

async function lambdaSteps(
  cluster: LoadedCluster,
  steps: StepRow[],
  shim: RunningShim | undefined,
  objectBytes: Readonly<Record<string, number>>,
  podsNow: () => number,
): Promise<void> {
  const label = sizeLabel(cluster.size);
  const lambdaStep = (step: string, lambda: LambdaName, event?: unknown, settleFirst?: boolean) =>
    runLambdaStep(cluster, steps, step, lambda, podsNow(), objectBytes, shim, event, settleFirst);
  await lambdaStep('disruption (first pass)', 'disruption');
  const firstDisruptionEnded = Date.now();

  const beforeClaims = new Set((await cluster.controller.nodeClaims()).items.map((c) => c.name));
  await lambdaStep(`provisioner, ${PENDING_PODS} pending pods`, 'provisioner');
  const launched = (await cluster.controller.nodeClaims()).items.filter((c) => !beforeClaims.has(c.name));
  const last = steps[steps.length - 1];
  if (last !== undefined)
    steps[steps.length - 1] = {
      ...last,
      details: {
        ...last.details,
        nodeClaimsLaunched: launched.length,
        instanceTypes: launched.map((c) => c.labels['node.kubernetes.io/instance-type']),
      },
    };

  // Undo: the pods go, and so do the NodeClaims launched for them (deleted as a user would; their
  // finalizer stays until the termination sweep below terminates their instances).
  await deletePendingPods(cluster);
  for (const claim of launched) await cluster.controller.deleteNodeClaim(claim.name);

  await lambdaStep('provisioner, nothing pending', 'provisioner');

  // The shim path: one pod becomes unschedulable, the shim forwards it, and the provisioner runs
  // for the queue's message as its event source mapping would deliver it.
  if (shim?.alive() === true) {
    const beforeOne = new Set((await cluster.controller.nodeClaims()).items.map((c) => c.name));
    await purgePodEvents(cluster);
    await settle(cluster.admin, 60_000);
    const createdAtMs = Date.now();
    await createPendingPods(cluster, seed + 1, 1);
    const message = await receivePodEvent(cluster, cluster.pending?.names[0] ?? '', 120_000);
    // Invoked as soon as the event is on the queue (a fresh process: a cold start every time).
    const row = await lambdaStep(
      'provisioner, 1 pod from the shim',
      'provisioner',
      { Records: [{ messageId: message.id, receiptHandle: message.receiptHandle, body: message.body }] },
      false,
    );
    const launchedAt = logTime(row.details?.['logFile'], 'launch decided');
    const batchClosedAt = logTime(row.details?.['logFile'], 'batch closed');
    steps[steps.length - 1] = {
      ...row,
      details: {
        ...row.details,
        podCreatedToForwardedMs: message.receivedAtMs - createdAtMs,
        podCreatedToBatchClosedMs: batchClosedAt === undefined ? undefined : batchClosedAt - createdAtMs,
        podCreatedToCreateFleetMs: launchedAt === undefined ? undefined : launchedAt - createdAtMs,
      },
    };
    say(
      `${label}: pod → shim forwarded ${message.receivedAtMs - createdAtMs} ms, → CreateFleet answered ${launchedAt === undefined ? 'never' : `${launchedAt - createdAtMs} ms`}`,
    );
    await deletePendingPods(cluster);
    for (const claim of (await cluster.controller.nodeClaims()).items) {
      if (beforeOne.has(claim.name)) continue;
      launched.push(claim);
      await cluster.controller.deleteNodeClaim(claim.name);
    }
  }

  await lambdaStep(`termination sweep (${launched.length} deleted NodeClaims)`, 'termination');
  await lambdaStep('garbage collector', 'garbage-collector');

  const wait = firstDisruptionEnded + CONSOLIDATE_AFTER_MS + 5_000 - Date.now();
  if (wait > 0) {
    say(
      `${label}: waiting ${Math.round(wait / 1000)}s for consolidateAfter (1m) since the first disruption pass`,
    );
    await new Promise((r) => setTimeout(r, wait));
  }
  await lambdaStep('disruption (steady: consolidation)', 'disruption');
  // A minute later, as the schedule runs it: what a pass costs when little has changed.
  await new Promise((r) => setTimeout(r, 60_000));
  await lambdaStep('disruption (a minute later)', 'disruption');

  // A spot interruption warning for one loaded node, as the interruption queue delivers it.
  const spot = (await cluster.controller.nodeClaims()).items.find(
    (c) =>
      c.labels['karpenter.sh/capacity-type'] === 'spot' && !c.deleting && c.status.providerId !== undefined,
  );
  if (spot !== undefined) {
    const instanceId = spot.status.providerId?.split('/').at(-1) ?? '';
    const sample = JSON.parse(
      fs.readFileSync(path.join(import.meta.dirname, '../../fixtures/events/spot-interruption.json'), 'utf8'),
    ) as { detail: Record<string, unknown>; time: string };
    const body = JSON.stringify({
      ...sample,
      time: new Date().toISOString(),
      detail: { ...sample.detail, 'instance-id': instanceId },
    });
    await lambdaStep('interruption (one spot warning)', 'interruption', {
      Records: [{ messageId: 'bench-spot', receiptHandle: 'bench-spot', body }],
    });
  }
}

/** The `time` of the first log line of `message` in `file`, in ms. */
function logTime(file: unknown, message: string): number | undefined {
  if (typeof file !== 'string' || !fs.existsSync(file)) return undefined;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as { message?: unknown; time?: unknown };
      if (parsed.message === message && typeof parsed.time === 'string') return Date.parse(parsed.time);
    } catch {
      // Not a log line.
    }
  }
  return undefined;
}

async function runLambdaStep(
  cluster: LoadedCluster,
  steps: StepRow[],
  step: string,
  lambda: LambdaName,
  podsInCluster: number,
  objectBytes: Readonly<Record<string, number>>,
  shim: RunningShim | undefined,
  event: unknown = SCHEDULED_EVENT,
  /** Wait for the control plane to settle first (not when the step's clock is already running). */
  settleFirst = true,
): Promise<StepRow> {
  const label = sizeLabel(cluster.size);
  const run = async (heap: number | undefined, attempt: string): Promise<Omit<StepRow, 'largeHeap'>> => {
    if (settleFirst || attempt !== '') await settle(cluster.admin, 60_000);
    say(`${label}: ${step}${heap === undefined ? '' : ` (heap ${heap} MB)`}`);
    const before = await scrape(cluster.admin);
    const slug = `${step.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}${attempt}`;
    const result: InvocationResult = await invokeLambda(lambda, event, cluster.lambdaEnv, {
      logFile: path.join(cluster.dir, 'logs', `step-${slug}.log`),
      requestId: `bench-${slug}`,
      // The memory the stack gives the function for a cluster of this size (infra/cluster-size.ts).
      memorySizeMb: functionMemoryMb(functionOf(lambda), cluster.size),
      ...(heap === undefined ? {} : { heapMb: heap }),
    });
    const after = await scrape(cluster.admin);
    // A process that died keeps its lease until the TTL: cleared so the next step does its own work.
    const leasesCleared = result.ok ? 0 : await clearLeases(cluster);
    const outcome = result.outOfMemory
      ? `out of memory (heap ${result.heapLimitMb} MB)`
      : !result.ok
        ? `error: ${result.error?.slice(0, 200)}`
        : result.exceededTimeout
          ? `exceeded the ${result.timeoutMs / 1000} s timeout`
          : 'ok';
    say(`${label}: ${step}: ${outcome}, ${((result.wallMs ?? 0) / 1000).toFixed(1)}s`);
    return {
      size: label,
      step,
      runsAs: `${lambda} (${result.memorySizeMb} MB, ${result.timeoutMs / 1000} s)`,
      ok: result.ok && !result.exceededTimeout,
      outcome,
      ...(result.wallMs === undefined ? {} : { wallMs: result.wallMs }),
      ...(result.initMs === undefined ? {} : { initMs: result.initMs }),
      ...(result.peakHeapUsedBytes === undefined ? {} : { peakHeapUsedBytes: result.peakHeapUsedBytes }),
      ...(result.peakHeapCommittedBytes === undefined
        ? {}
        : { peakHeapCommittedBytes: result.peakHeapCommittedBytes }),
      heapLimitMb: result.heapLimitMb,
      ...(result.peakRssBytes === undefined ? {} : { peakRssBytes: result.peakRssBytes }),
      traffic: traffic(before, after, FLOTILLA_FLOW_SCHEMAS),
      podsInCluster,
      objectBytes,
      details: {
        summary: result.summary,
        logMessages: result.logMessages,
        logFile: result.logFile,
        heapAfterInitBytes: result.heapAfterInitBytes,
        connections: byServer(cluster, result.connectionsByPort),
        bytesReceived: byServer(cluster, result.bytesReadByPort),
        kubeRequests: result.kubeRequests,
        aws: result.aws,
        memorySizeMb: result.memorySizeMb,
        leasesCleared,
        shimRunning: shim?.alive() ?? false,
        summaryObjectBytes: await summaryObjectBytes(cluster),
      },
    };
  };
  const first = await run(heapMb, '');
  const row =
    first.outcome.startsWith('out of memory') && oomRetryMb > 0
      ? { ...first, largeHeap: await run(oomRetryMb, '-large-heap') }
      : first;
  steps.push(row);
  return row;
}

/** Counts by remote port, named: the API server's and moto's ports. */
function byServer(
  cluster: LoadedCluster,
  byPort: Readonly<Record<string, number>> | undefined,
): Record<string, number> | undefined {
  if (byPort === undefined) return undefined;
  const names: Record<string, string> = {
    [new URL(cluster.kube.server).port]: 'kube-apiserver',
    [new URL(cluster.server.endpoint).port]: 'moto',
  };
  const out: Record<string, number> = {};
  for (const [port, count] of Object.entries(byPort)) {
    const name = names[port] ?? `port ${port}`;
    out[name] = (out[name] ?? 0) + count;
  }
  return out;
}
