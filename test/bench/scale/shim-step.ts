import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderShimObjects, type ShimMemory } from '../../../infra/shim/manifests.ts';
import { STACK_CLUSTER } from '../../harness/aws/stack.ts';
import type { Moto } from '../../harness/index.ts';
import { projectRoot } from '../../harness/paths.ts';
import { type ShimProcess, spawnShim, startShimProcess } from '../../harness/shim-process.ts';
import { codeRoot } from './lambda-step.ts';

// The pod-event shim as its own process (the shipped bundle, the Deployment's environment, its
// own ServiceAccount; the harness's startShimProcess): how long from start until it has listed
// every pod and forwarded an event for each unschedulable one (its informer's first LIST is
// unpaginated), and its memory meanwhile, sampled from /proc/<pid>/status (the heap is not visible
// from outside the process). A shim that synced keeps running through the Lambda steps, as it runs
// in the cluster.

export interface ShimResult {
  readonly ok: boolean;
  readonly error?: string;
  /** From spawning the process until every expected pod event was forwarded. */
  readonly syncedMs?: number;
  readonly eventsForwarded: number;
  readonly eventsExpected: number;
  /** VmRSS right after the shim said it started (before its pod list arrived). */
  readonly rssAtStartBytes?: number;
  /** VmRSS two seconds after the sync, and VmHWM (peak RSS). */
  readonly rssAfterSyncBytes?: number;
  readonly peakRssBytes: number;
  /** The Deployment's container memory limit and NODE_OPTIONS. */
  readonly memoryLimit: string;
  readonly nodeOptions: string;
  readonly exitCode?: number | null;
  readonly outOfMemory: boolean;
}

/** A shim left running after its measurement. */
export interface RunningShim {
  alive(): boolean;
  /** Highest RSS seen since it started (sampled every second, and VmHWM). */
  peakRssBytes(): number;
  stop(): void;
}

function procStatus(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

interface RenderedShim {
  readonly configMap: { data: { 'boot.mjs': string }; binaryData: { 'shim.mjs.gz': string } };
  readonly container: {
    env: { name: string; value: string }[];
    resources?: { limits?: { memory?: string } };
  };
}

/**
 * The shim's ConfigMap and container as the stack renders them (with the summary bucket when the
 * stack has one), from the code under test (this checkout, or SCALE_CODE_DIR).
 */
async function renderShim(options: {
  queueUrl: string;
  region: string;
  summaryBucket: string | undefined;
  memory: ShimMemory;
}): Promise<RenderedShim> {
  const render: typeof renderShimObjects =
    codeRoot === projectRoot
      ? renderShimObjects
      : (
          (await import(pathToFileURL(path.join(codeRoot, 'infra', 'shim', 'manifests.ts')).href)) as {
            renderShimObjects: typeof renderShimObjects;
          }
        ).renderShimObjects;
  const [configMap, deployment] = render({
    namespace: 'flotilla',
    serviceAccount: 'flotilla-shim',
    clusterName: STACK_CLUSTER,
    queueUrl: options.queueUrl,
    region: options.region,
    memory: options.memory,
    ...(options.summaryBucket === undefined ? {} : { summaryBucket: options.summaryBucket }),
  } as Parameters<typeof renderShimObjects>[0]) as [
    RenderedShim['configMap'],
    { spec: { template: { spec: { containers: [RenderedShim['container']] } } } },
  ];
  return { configMap, container: deployment.spec.template.spec.containers[0] };
}

export async function measureShim(options: {
  readonly server: Moto;
  readonly kubeconfigPath: string;
  readonly queueUrl: string;
  readonly summaryBucket: string | undefined;
  /** The memory the stack gives the shim for the cluster's size. */
  readonly memory: ShimMemory;
  readonly expectedEvents: number;
  readonly timeoutMs: number;
  readonly logFile: string;
  /** Replaces the Deployment's --max-old-space-size (to see what the shim would need). */
  readonly heapMb?: number;
  /** Leave a shim that synced running (stopped by the caller). */
  readonly keepRunning: boolean;
}): Promise<{ result: ShimResult; running?: RunningShim }> {
  const rendered = await renderShim({
    queueUrl: options.queueUrl,
    region: options.server.region,
    summaryBucket: options.summaryBucket,
    memory: options.memory,
  });
  const memoryLimit = rendered.container.resources?.limits?.memory ?? 'none';
  const nodeOptions =
    options.heapMb === undefined
      ? (rendered.container.env.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '')
      : `--max-old-space-size=${options.heapMb}`;
  const began = Date.now();
  // As deployed: the harness's startShimProcess; with another heap or other code, the same done here.
  const shim =
    options.heapMb === undefined && codeRoot === projectRoot
      ? await startShimProcess({
          server: options.server,
          kubeconfigPath: options.kubeconfigPath,
          clusterName: STACK_CLUSTER,
          queueUrl: options.queueUrl,
        })
      : await startRenderedShim(rendered, options, options.heapMb);
  const pid = shim.child.pid ?? 0;
  let peakRss = 0;
  let exitCode: number | null | undefined;
  shim.child.once('exit', (code) => {
    exitCode = code;
  });
  const forwarded = () =>
    shim
      .output()
      .split('\n')
      .filter((l) => l.includes('"forwarded pod events"'))
      .reduce((sum, l) => {
        try {
          return sum + Number((JSON.parse(l) as { count?: number }).count ?? 0);
        } catch {
          return sum; // a line still being written
        }
      }, 0);
  let syncedMs: number | undefined;
  let rssAfterSync: number | undefined;
  const rssAtStart = procStatus(pid)?.rss;
  while (Date.now() - began < options.timeoutMs) {
    const status = procStatus(pid);
    if (status !== undefined) peakRss = Math.max(peakRss, status.hwm, status.rss);
    if (exitCode !== undefined) break;
    if (syncedMs === undefined && forwarded() >= options.expectedEvents) syncedMs = Date.now() - began;
    if (syncedMs !== undefined && Date.now() - began >= syncedMs + 2_000) {
      rssAfterSync = status?.rss;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const output = shim.output();
  const outOfMemory = /heap out of memory|Reached heap limit/i.test(output);
  const eventsForwarded = forwarded();
  const ok = syncedMs !== undefined && exitCode === undefined;
  const result: ShimResult = {
    ok,
    ...(ok
      ? {}
      : {
          error:
            exitCode !== undefined
              ? `the shim exited with ${exitCode}${outOfMemory ? ' (out of heap)' : ''} after ${Date.now() - began} ms`
              : `not synced within ${options.timeoutMs} ms (${eventsForwarded}/${options.expectedEvents} events)`,
        }),
    ...(syncedMs === undefined ? {} : { syncedMs }),
    eventsForwarded,
    eventsExpected: options.expectedEvents,
    ...(rssAtStart === undefined ? {} : { rssAtStartBytes: rssAtStart }),
    ...(rssAfterSync === undefined ? {} : { rssAfterSyncBytes: rssAfterSync }),
    peakRssBytes: peakRss,
    memoryLimit,
    nodeOptions,
    ...(exitCode === undefined ? {} : { exitCode }),
    outOfMemory,
  };
  const stop = () => {
    fs.writeFileSync(options.logFile, shim.output());
    shim.stop();
  };
  if (!ok || !options.keepRunning) {
    stop();
    return { result };
  }
  const sampler = setInterval(() => {
    const status = procStatus(pid);
    if (status !== undefined) peakRss = Math.max(peakRss, status.hwm, status.rss);
  }, 1_000);
  return {
    result,
    running: {
      alive: () => exitCode === undefined,
      peakRssBytes: () => peakRss,
      stop: () => {
        clearInterval(sampler);
        stop();
      },
    },
  };
}

/** The rendered shim as the harness runs it (its ConfigMap's files, its Deployment's environment). */
function startRenderedShim(
  rendered: RenderedShim,
  options: { readonly server: Moto; readonly kubeconfigPath: string },
  heapMb: number | undefined,
): Promise<ShimProcess> {
  return spawnShim(rendered.configMap, rendered.container.env, {
    ...options,
    ...(heapMb === undefined ? {} : { heapMb }),
  });
}
