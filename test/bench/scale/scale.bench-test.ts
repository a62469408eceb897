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
  type WarmInvocation,
  type WarmInvoke,
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
//   provisioner, idle, warm  the same in one warm container, run twice a minute apart as the
//                            schedule runs it; the second run is measured (the shim published
//                            meanwhile; what the container read before is not counted)
//   provisioner, shim path   pods made unschedulable one at a time; the shim's event for each, taken
//                            from the queue, is given to one warm provisioner process
//                            (pod created → queue → CreateFleet sent, per pod and p50)
//   termination sweep        the schedule's sweep, which terminates those deleted NodeClaims
//   garbage collector        one pass
//   disruption (steady)      a pass once consolidateAfter (1m) has passed since the first: every
//                            NodeClaim is Consolidatable, so consolidation runs
//   disruption, a minute on  the next passes, a minute apart: the last with nothing changed
//   (empty node)             one node's workload pods are deleted before the first pass: from the
//                            command becoming valid to its start, in the pass that started it
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
/**
 * SCALE_STEPS: the groups of steps to run (comma-separated), all by default: disruption, launch,
 * idle, shim-path, termination, gc, interruption. The shim always runs.
 */
const stepGroups = new Set(
  (process.env['SCALE_STEPS'] ?? 'disruption,launch,idle,shim-path,termination,gc,interruption')
    .split(',')
    .map((g) => g.trim()),
);
const want = (group: string) => stepGroups.has(group);
/** Pods sent down the shim path one after another (the first in a container that just started). */
const SHIM_PATH_PODS = 6;

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
    if (cluster !== undefined) keepStepLogs(cluster);
    await cluster?.stop();
  }
}

/** Copies the steps' logs out of the cluster's folder, which stopping it removes. */
function keepStepLogs(cluster: LoadedCluster): void {
  const from = path.join(cluster.dir, 'logs');
  if (!fs.existsSync(from)) return;
  const to = path.join(
    cacheDir,
    'bench',
    `scale-logs-${sizeLabel(cluster.size)}-${new Date().toISOString().replaceAll(':', '')}`,
  );
  fs.mkdirSync(to, { recursive: true });
  for (const name of fs.readdirSync(from)) {
    if (name.startsWith('step-')) fs.copyFileSync(path.join(from, name), path.join(to, name));
  }
  say(`${sizeLabel(cluster.size)}: step logs kept in ${to}`);
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
  // A node made empty (its workload pods deleted, as a scale-down does) before the first pass, which
  // sees its pods gone; the passes after it start the command that removes it once it is valid
  // (lastPodEventTime + consolidateAfter).
  const emptied = await emptyOneNode(cluster);
  if (emptied !== undefined) {
    say(
      `${label}: emptied node ${emptied.node} (NodeClaim ${emptied.nodeClaim}, ${emptied.pods} pods deleted)`,
    );
  }
  let emptyCommandAtMs: number | undefined;
  const disruptionStep = async (step: string) => {
    // What the pass decides from: the emptied node's lastPodEventTime as it starts.
    const before = emptied === undefined ? undefined : await cluster.controller.nodeClaim(emptied.nodeClaim);
    const row = await lambdaStep(step, 'disruption');
    if (emptied === undefined || emptyCommandAtMs !== undefined) return;
    emptyCommandAtMs = commandStartedAt(row.details?.['logFile'], emptied.nodeClaim);
    if (emptyCommandAtMs === undefined) return;
    const lastPodEventMs = before?.status.lastPodEventMs;
    const validAtMs = lastPodEventMs === undefined ? undefined : lastPodEventMs + CONSOLIDATE_AFTER_MS;
    const at = steps.indexOf(row);
    steps[at] = {
      ...row,
      details: {
        ...row.details,
        emptied,
        podsDeletedToLastPodEventMs: lastPodEventMs === undefined ? undefined : lastPodEventMs - emptied.atMs,
        validToCommandMs: validAtMs === undefined ? undefined : emptyCommandAtMs - validAtMs,
        podsDeletedToCommandMs: emptyCommandAtMs - emptied.atMs,
      },
    };
    say(
      `${label}: empty node: command started ${emptyCommandAtMs - emptied.atMs} ms after its pods went, ${validAtMs === undefined ? '?' : emptyCommandAtMs - validAtMs} ms after it became valid`,
    );
  };
  const loadedClaims = new Set((await cluster.controller.nodeClaims()).items.map((c) => c.name));
  if (want('disruption')) await disruptionStep('disruption (first pass)');
  const firstDisruptionEnded = Date.now();
  // Undo: a replacement the first pass launched (no kubelet registers it here) would stay in flight
  // and take every pending pod of the steps below, which would then launch nothing; it is deleted
  // as a user would, and terminated by the sweep with the provisioner's launches.
  const replacements = (await cluster.controller.nodeClaims()).items.filter((c) => !loadedClaims.has(c.name));
  for (const claim of replacements) await cluster.controller.deleteNodeClaim(claim.name);
  if (replacements.length > 0)
    say(`${label}: deleted ${replacements.length} replacement NodeClaim(s) of the first pass`);

  const beforeClaims = new Set((await cluster.controller.nodeClaims()).items.map((c) => c.name));
  if (want('launch')) await lambdaStep(`provisioner, ${PENDING_PODS} pending pods`, 'provisioner');
  const launchedForPods = (await cluster.controller.nodeClaims()).items.filter(
    (c) => !beforeClaims.has(c.name),
  );
  const last = steps[steps.length - 1];
  if (last !== undefined && want('launch'))
    steps[steps.length - 1] = {
      ...last,
      details: {
        ...last.details,
        nodeClaimsLaunched: launchedForPods.length,
        instanceTypes: launchedForPods.map((c) => c.labels['node.kubernetes.io/instance-type']),
      },
    };

  // Undo: the pods go, and so do the NodeClaims launched for them (deleted as a user would; their
  // finalizer stays until the termination sweep below terminates their instances).
  await deletePendingPods(cluster);
  for (const claim of launchedForPods) await cluster.controller.deleteNodeClaim(claim.name);
  const launched = [...replacements, ...launchedForPods];

  if (want('idle')) {
    await lambdaStep('provisioner, nothing pending', 'provisioner');
    await warmIdleStep(cluster, steps, shim, objectBytes, podsNow());
  }

  // The shim path: pods become unschedulable one at a time, the shim forwards each, and the
  // provisioner runs for the queue's message as its event source mapping would deliver it, in one
  // warm container (as a busy cluster keeps it): pod created → on the queue → CreateFleet sent.
  if (shim?.alive() === true && want('shim-path')) {
    const beforeOne = new Set((await cluster.controller.nodeClaims()).items.map((c) => c.name));
    await purgePodEvents(cluster);
    await settle(cluster.admin, 60_000);
    const pods: ShimPathPod[] = [];
    const drive = async (invoke: WarmInvoke) => {
      for (let i = 0; i < SHIM_PATH_PODS; i++) {
        const createdAtMs = Date.now();
        // The shim's event is the sign that kube-scheduler marked the pod Unschedulable.
        await createPendingPods(cluster, seed + 1 + i, 1, false);
        const pod = cluster.pending?.names[0] ?? '';
        const message = await receivePodEvent(cluster, pod, 120_000);
        const invocation = await invoke({
          Records: [{ messageId: message.id, receiptHandle: message.receiptHandle, body: message.body }],
        });
        const observedAt = Date.parse((JSON.parse(message.body) as { observedAt?: string }).observedAt ?? '');
        pods.push(
          shimPathPod(pod, createdAtMs, observedAt, message.sentAtMs, message.receivedAtMs, invocation),
        );
        const last = pods[pods.length - 1];
        say(
          `${label}: pod ${i + 1}/${SHIM_PATH_PODS} → on the queue ${last?.queuedMs} ms, → CreateFleet sent ${last?.createFleetSentMs ?? 'never'} ms`,
        );
        await deletePendingPods(cluster);
        for (const claim of (await cluster.controller.nodeClaims()).items) {
          if (beforeOne.has(claim.name) || launched.some((c) => c.name === claim.name)) continue;
          launched.push(claim);
          await cluster.controller.deleteNodeClaim(claim.name);
        }
      }
    };
    const row = await runLambdaStep(
      cluster,
      steps,
      `provisioner, ${SHIM_PATH_PODS} pods from the shim (warm)`,
      'provisioner',
      podsNow(),
      objectBytes,
      shim,
      undefined,
      false,
      drive,
    );
    const sent = pods.flatMap((p) => (p.createFleetSentMs === undefined ? [] : [p.createFleetSentMs]));
    steps[steps.length - 1] = {
      ...row,
      details: {
        ...row.details,
        pods,
        podToCreateFleetSentMs: { p50: percentile(sent, 50), max: Math.max(...sent), samples: sent.length },
      },
    };
    say(`${label}: pod → CreateFleet sent p50 ${percentile(sent, 50)} ms over ${sent.length} pods`);
  }

  if (want('termination')) {
    await lambdaStep(`termination sweep (${launched.length} deleted NodeClaims)`, 'termination');
  }
  if (want('gc')) await lambdaStep('garbage collector', 'garbage-collector');
  if (!want('disruption') && !want('interruption')) return;

  const wait = firstDisruptionEnded + CONSOLIDATE_AFTER_MS + 5_000 - Date.now();
  if (wait > 0) {
    say(
      `${label}: waiting ${Math.round(wait / 1000)}s for consolidateAfter (1m) since the first disruption pass`,
    );
    await new Promise((r) => setTimeout(r, wait));
  }
  let passStarted = Date.now();
  if (want('disruption')) await disruptionStep('disruption (steady: consolidation)');
  // As the schedule runs it (a pass a minute, start to start): what a pass costs when nothing changed.
  const nextPass = async () => {
    const wait = passStarted + 60_000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    passStarted = Date.now();
  };
  if (want('disruption')) {
    await nextPass();
    await disruptionStep('disruption (a minute later)');
    await nextPass();
    await disruptionStep('disruption (idle: nothing changed)');
  }

  if (emptied !== undefined && emptyCommandAtMs === undefined)
    say(`${label}: empty node: no command started`);

  // A spot interruption warning for one loaded node, as the interruption queue delivers it.
  const spot = (await cluster.controller.nodeClaims()).items.find(
    (c) =>
      c.labels['karpenter.sh/capacity-type'] === 'spot' && !c.deleting && c.status.providerId !== undefined,
  );
  if (spot !== undefined && want('interruption')) {
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

/**
 * The idle provisioner run in a warm container, as the schedule runs it: twice, a minute apart
 * (the shim publishes meanwhile); the row is the second run's, its API server traffic scraped
 * around that run alone, and its bytes read (API server and moto) that run's own.
 */
async function warmIdleStep(
  cluster: LoadedCluster,
  steps: StepRow[],
  shim: RunningShim | undefined,
  objectBytes: Readonly<Record<string, number>>,
  podsInCluster: number,
): Promise<void> {
  const runs: WarmInvocation[] = [];
  let around: { before?: Awaited<ReturnType<typeof scrape>>; after?: Awaited<ReturnType<typeof scrape>> } =
    {};
  const row = await runLambdaStep(
    cluster,
    steps,
    'provisioner, nothing pending (warm, a minute after its last run)',
    'provisioner',
    podsInCluster,
    objectBytes,
    shim,
    undefined,
    true,
    async (invoke) => {
      runs.push(await invoke(SCHEDULED_EVENT));
      await new Promise((resolve) => setTimeout(resolve, 60_000));
      const before = await scrape(cluster.admin);
      runs.push(await invoke(SCHEDULED_EVENT));
      around = { before, after: await scrape(cluster.admin) };
    },
  );
  const measured = runs.at(-1);
  if (measured === undefined || around.before === undefined || around.after === undefined) return;
  const bytes = byServer(cluster, measured.bytesReadByPort) ?? {};
  steps[steps.indexOf(row)] = {
    ...row,
    ...(measured.ok ? {} : { ok: false, outcome: `error: ${measured.error?.slice(0, 200)}` }),
    wallMs: measured.wallMs,
    traffic: traffic(around.before, around.after, FLOTILLA_FLOW_SCHEMAS),
    details: {
      ...row.details,
      warmRuns: runs.map((r) => ({
        wallMs: r.wallMs,
        bytesReceived: byServer(cluster, r.bytesReadByPort),
        kubeRequests: r.kubeRequests,
      })),
      bytesReceived: bytes,
      kubeRequests: measured.kubeRequests,
    },
  };
  say(
    `${sizeLabel(cluster.size)}: warm idle run ${measured.wallMs} ms, read ${Object.entries(bytes)
      .map(([server, n]) => `${server} ${n} B`)
      .join(', ')}`,
  );
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
  /** Invoke one warm container as often as this likes (lambda-step.ts `drive`) instead of once. */
  drive?: (invoke: WarmInvoke) => Promise<void>,
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
      ...(drive === undefined ? {} : { drive }),
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
        phases: phases(result.timeline, result.startedAtMs),
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

/** One pod of the shim path: when it reached the queue and CreateFleet was sent, from its creation. */
interface ShimPathPod {
  readonly pod: string;
  /** When the shim saw it unschedulable (kube-scheduler's verdict and the watch's delivery). */
  readonly observedMs?: number;
  /** When SQS took the shim's message (its SentTimestamp). */
  readonly sentMs: number;
  /** When the bench's receive loop (short polls 20 ms apart) had it, and invoked the provisioner. */
  readonly queuedMs: number;
  readonly invokedMs: number;
  readonly createFleetSentMs?: number;
  /** How long moto took to answer that CreateFleet. */
  readonly createFleetMs?: number;
  readonly ok: boolean;
  /** The invocation's requests before CreateFleet: when each began after the invocation, and took. */
  readonly beforeCreateFleet: readonly string[];
}

function shimPathPod(
  pod: string,
  createdAtMs: number,
  observedAtMs: number,
  sentAtMs: number,
  queuedAtMs: number,
  invocation: WarmInvocation,
): ShimPathPod {
  const createFleet = invocation.timeline.find((e) => e.call === 'CreateFleet');
  const before = invocation.timeline.filter(
    (e) => createFleet === undefined || e.startedAtMs <= createFleet.startedAtMs,
  );
  return {
    pod,
    ...(Number.isFinite(observedAtMs) ? { observedMs: observedAtMs - createdAtMs } : {}),
    sentMs: sentAtMs - createdAtMs,
    queuedMs: queuedAtMs - createdAtMs,
    invokedMs: invocation.startedAtMs - createdAtMs,
    ...(createFleet === undefined
      ? {}
      : {
          createFleetSentMs: createFleet.startedAtMs - createdAtMs,
          ...(createFleet.ms === undefined ? {} : { createFleetMs: createFleet.ms }),
        }),
    ok: invocation.ok,
    beforeCreateFleet: before.map(
      (e) => `+${e.startedAtMs - invocation.startedAtMs} ${e.call} ${e.ms === undefined ? '?' : e.ms}ms`,
    ),
  };
}

/** The `p`th percentile (nearest rank) of `values`; undefined when there are none. */
function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Where an invocation's time went, by request kind: how many, the time one or more of them was
 * outstanding, and when the first began (ms after the invocation began).
 */
function phases(
  timeline: InvocationResult['timeline'],
  startedAtMs: number | undefined,
): Record<string, { count: number; busyMs: number; firstAtMs: number }> | undefined {
  if (timeline === undefined || startedAtMs === undefined) return undefined;
  const byCall = new Map<string, { start: number; end: number }[]>();
  for (const e of timeline) {
    const list = byCall.get(e.call) ?? [];
    list.push({ start: e.startedAtMs, end: e.startedAtMs + (e.ms ?? 0) });
    byCall.set(e.call, list);
  }
  const out: Record<string, { count: number; busyMs: number; firstAtMs: number }> = {};
  for (const [call, spans] of byCall) {
    spans.sort((a, b) => a.start - b.start);
    let busy = 0;
    let from = spans[0]?.start ?? 0;
    let to = from;
    for (const span of spans) {
      if (span.start > to) {
        busy += to - from;
        from = span.start;
      }
      to = Math.max(to, span.end);
    }
    busy += to - from;
    out[call] = {
      count: spans.length,
      busyMs: busy,
      firstAtMs: (spans[0]?.start ?? startedAtMs) - startedAtMs,
    };
  }
  return out;
}

/** A node made empty: its workload pods deleted at once (DaemonSet pods stay, as in a scale-down). */
interface EmptiedNode {
  readonly node: string;
  readonly nodeClaim: string;
  readonly pods: number;
  readonly atMs: number;
}

async function emptyOneNode(cluster: LoadedCluster): Promise<EmptiedNode | undefined> {
  const claim = (await cluster.controller.nodeClaims()).items.find(
    (c) =>
      !c.deleting &&
      c.status.nodeName !== undefined &&
      c.annotations['karpenter.sh/do-not-disrupt'] === undefined,
  );
  const node = claim?.status.nodeName;
  if (claim === undefined || node === undefined) return undefined;
  const list = await cluster.admin.request<{
    items: { metadata: { name: string; namespace: string; ownerReferences?: { kind: string }[] } }[];
  }>('GET', `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`);
  const workload = list.body.items.filter(
    (p) => !(p.metadata.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet'),
  );
  const atMs = Date.now();
  for (const p of workload) {
    await cluster.admin.request(
      'DELETE',
      `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}?gracePeriodSeconds=0`,
    );
  }
  return { node, nodeClaim: claim.name, pods: workload.length, atMs };
}

/** When a pass's log says a disruption command with `nodeClaim` among its candidates started. */
function commandStartedAt(file: unknown, nodeClaim: string): number | undefined {
  if (typeof file !== 'string' || !fs.existsSync(file)) return undefined;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as {
        message?: unknown;
        time?: unknown;
        outcome?: unknown;
        candidates?: { nodeClaim?: unknown }[];
      };
      if (
        parsed.message === 'disruption command' &&
        typeof parsed.time === 'string' &&
        (parsed.outcome === 'started' || parsed.outcome === 'deleted') &&
        (parsed.candidates ?? []).some((c) => c.nodeClaim === nodeClaim)
      ) {
        return Date.parse(parsed.time);
      }
    } catch {
      // Not a log line.
    }
  }
  return undefined;
}
