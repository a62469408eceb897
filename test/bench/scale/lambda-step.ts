import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { FLOTILLA_FUNCTIONS, type FunctionDefinition } from '../../../infra/functions.ts';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { lambdaAwsEnv } from '../../harness/aws/identity.ts';
import type { Moto } from '../../harness/index.ts';
import { cacheDir, projectRoot } from '../../harness/paths.ts';
import { say } from './progress.ts';

// Runs one Lambda invocation in a fresh Node process (runner.ts) with the handler bundled as the
// stack bundles it (infra/lambda-functions.ts: esbuild, ESM, minified, source maps, SDK included),
// the environment the stack gives that function, its role's keys, and the heap the Lambda runtime
// gives its memory size.

const bundleDir = path.join(cacheDir, 'bench', 'scale', 'bundles');

/**
 * Where Flotilla's code is taken from: this checkout, or SCALE_CODE_DIR (another tree, e.g. a
 * `git archive` of a commit extracted under .cache/, so that its imports find this node_modules).
 */
export const codeRoot = process.env['SCALE_CODE_DIR']
  ? path.resolve(process.env['SCALE_CODE_DIR'])
  : projectRoot;
const DEFAULT_MEMORY_MB = 512;
const DEFAULT_TIMEOUT_MS = 60_000;

export type LambdaName =
  | 'catalog'
  | 'provisioner'
  | 'disruption'
  | 'garbage-collector'
  | 'termination'
  | 'interruption';

export function functionOf(name: LambdaName): FunctionDefinition {
  const row = FLOTILLA_FUNCTIONS.find((f) => f.name === name);
  if (row === undefined) throw new Error(`no Lambda "${name}" in infra/functions.ts`);
  return row;
}

/**
 * The heap the Lambda Node.js runtime gives a function of `memoryMb` (its bootstrap sets
 * `--max-old-space-size` to 90 % of the memory size and the semi-space to 5 %).
 */
export function lambdaHeap(memoryMb: number): { oldSpaceMb: number; semiSpaceMb: number } {
  const newSpace = Math.floor(memoryMb / 10);
  return { oldSpaceMb: memoryMb - newSpace, semiSpaceMb: Math.floor(newSpace / 2) };
}

let bundled: Promise<void> | undefined;

/** The code the handlers were bundled from: the commit and the files changed in the working tree. */
export const bundledCode: { at?: string; head?: string; changed?: string[] } = {};

/** Bundles every handler and the runner once per bench run (a few seconds). */
export function bundleAll(): Promise<void> {
  bundled ??= (async () => {
    const began = Date.now();
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
    bundledCode.at = new Date().toISOString();
    if (codeRoot === projectRoot) {
      bundledCode.head = git('rev-parse', 'HEAD');
      bundledCode.changed = git('status', '--porcelain')
        .split('\n')
        .filter((l) => l !== '');
    } else {
      const commit = path.join(codeRoot, 'COMMIT');
      bundledCode.head = `${codeRoot}${fs.existsSync(commit) ? ` (${fs.readFileSync(commit, 'utf8').trim()})` : ''}`;
      bundledCode.changed = [];
    }
    const common = {
      bundle: true,
      platform: 'node' as const,
      format: 'esm' as const,
      target: 'node22',
      sourcemap: true,
      minify: true,
      mainFields: ['module', 'main'],
      logLevel: 'error' as const,
      banner: {
        js: "import { createRequire as __flotillaCreateRequire } from 'node:module';const require = __flotillaCreateRequire(import.meta.url);",
      },
    };
    const names: LambdaName[] = [
      'catalog',
      'provisioner',
      'disruption',
      'garbage-collector',
      'termination',
      'interruption',
    ];
    await Promise.all([
      ...names.map((name) =>
        build({
          ...common,
          entryPoints: [path.join(codeRoot, functionOf(name).entry)],
          outfile: path.join(bundleDir, name, 'index.mjs'),
        }),
      ),
      build({
        ...common,
        minify: false,
        entryPoints: [path.join(import.meta.dirname, 'runner.ts')],
        outfile: path.join(bundleDir, 'runner.mjs'),
      }),
    ]);
    say(`bundled ${names.length} handlers and the runner in ${((Date.now() - began) / 1000).toFixed(1)}s`);
  })();
  return bundled;
}

export interface LambdaEnvironment {
  readonly server: Moto;
  readonly controllerKubeconfigPath: string;
  /**
   * The Flotilla variables prepareColdStart set for the stack's Lambdas (cluster, table, queues and
   * whatever else the stack gives them), by variable name.
   */
  readonly stackEnv: Readonly<Record<string, string>>;
}

/** The Flotilla variables (EnvVar's values) in `env`. */
export function flotillaEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.values(EnvVar) as string[]) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** One request of an invocation: what, when it began (epoch ms), how long it took. */
export interface TimelineEntry {
  readonly call: string;
  readonly startedAtMs: number;
  readonly ms?: number;
}

/** One invocation of a warm process. */
export interface WarmInvocation {
  readonly ok: boolean;
  readonly error?: string;
  readonly summary?: unknown;
  readonly startedAtMs: number;
  readonly wallMs: number;
  readonly timeline: readonly TimelineEntry[];
  /** What this invocation read, by remote port (its own, not the container's before it). */
  readonly bytesReadByPort: Readonly<Record<string, number>>;
  /** Its Kubernetes requests, by `VERB resource[/subresource]`. */
  readonly kubeRequests: Readonly<Record<string, number>>;
}

/** Invokes the warm process's handler with one event; resolves when the invocation returned. */
export type WarmInvoke = (event: unknown) => Promise<WarmInvocation>;

export interface InvocationResult {
  readonly lambda: LambdaName;
  readonly memorySizeMb: number;
  readonly timeoutMs: number;
  readonly heapLimitMb: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly outOfMemory: boolean;
  readonly exceededTimeout: boolean;
  readonly initMs?: number;
  readonly wallMs?: number;
  readonly heapAfterInitBytes?: number;
  readonly peakHeapUsedBytes?: number;
  readonly peakHeapCommittedBytes?: number;
  readonly peakRssBytes?: number;
  /** TCP connections the process opened, and the bytes read on them, by remote port. */
  readonly connectionsByPort?: Readonly<Record<string, number>>;
  readonly bytesReadByPort?: Readonly<Record<string, number>>;
  /** The Kubernetes requests the handler made, by `VERB resource[/subresource]`. */
  readonly kubeRequests?: Readonly<Record<string, number>>;
  /** Its AWS requests (moto): how many, the time one or more was outstanding, the slowest. */
  readonly aws?: { readonly requests: number; readonly busyMs: number; readonly slowestMs: number };
  /** The handler's result with long lists cut to counts. */
  readonly summary?: unknown;
  /** When the (last) invocation began, epoch ms, and its requests in order. */
  readonly startedAtMs?: number;
  readonly timeline?: readonly TimelineEntry[];
  /** With `drive`: every invocation of the warm process, in order. */
  readonly invocations?: readonly WarmInvocation[];
  /** Log lines by `message`, and the warnings and errors among them. */
  readonly logMessages: Readonly<Record<string, number>>;
  readonly logFile: string;
}

/**
 * The process environment the stack gives `row` (infra/lambda-functions.ts): the variables its row
 * lists, with the values prepareColdStart set; its role's keys and moto; the controller kubeconfig.
 */
export function lambdaEnvironment(row: FunctionDefinition, env: LambdaEnvironment): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of row.env) {
    const name = EnvVar[key];
    const value = env.stackEnv[name] ?? (key === 'logLevel' ? 'info' : undefined);
    if (value !== undefined) out[name] = value;
  }
  return {
    ...out,
    ...lambdaAwsEnv(env.server, row.name as LambdaName),
    AWS_LAMBDA_FUNCTION_NAME: `flotilla-${row.name}`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(row.memorySize ?? DEFAULT_MEMORY_MB),
    KUBECONFIG: env.controllerKubeconfigPath,
    NODE_OPTIONS: '--enable-source-maps',
  };
}

/** With SCALE_CPU_PROF set to a folder: each step's process writes a V8 CPU profile there. */
function cpuProfileArgs(lambda: LambdaName): string[] {
  const dir = process.env['SCALE_CPU_PROF'];
  if (dir === undefined || dir === '') return [];
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${path.resolve(dir)}`,
    `--cpu-prof-name=${lambda}-${Date.now()}.cpuprofile`,
  ];
}

/**
 * Invokes `lambda` once with `event` in a fresh process. `heapMb` overrides the old-space limit
 * (default: what the Lambda runtime gives the function's memory size).
 */
export async function invokeLambda(
  lambda: LambdaName,
  event: unknown,
  env: LambdaEnvironment,
  options: {
    readonly logFile: string;
    readonly heapMb?: number;
    readonly requestId: string;
    /** The memory the stack gives the function. @default the row's memorySize (512) */
    readonly memorySizeMb?: number;
    /**
     * A warm container instead of one cold invocation: after its cold start, `drive` invokes the
     * same process as often as it likes (`event` is not used); the result is the last invocation's,
     * with every one of them in `invocations`.
     */
    readonly drive?: (invoke: WarmInvoke) => Promise<void>;
  },
): Promise<InvocationResult> {
  await bundleAll();
  const row = functionOf(lambda);
  const memorySizeMb = options.memorySizeMb ?? row.memorySize ?? DEFAULT_MEMORY_MB;
  const timeoutMs = row.timeout?.toMilliseconds() ?? DEFAULT_TIMEOUT_MS;
  const heap = lambdaHeap(memorySizeMb);
  const heapLimitMb = options.heapMb ?? heap.oldSpaceMb;
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const log = fs.openSync(options.logFile, 'w');
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      ...cpuProfileArgs(lambda),
      `--max-old-space-size=${heapLimitMb}`,
      `--max-semi-space-size=${heap.semiSpaceMb}`,
      path.join(bundleDir, 'runner.mjs'),
    ],
    {
      cwd: path.join(bundleDir, lambda),
      env: {
        PATH: process.env['PATH'] ?? '',
        ...lambdaEnvironment(row, env),
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memorySizeMb),
        BENCH_HANDLER: path.join(bundleDir, lambda, 'index.mjs'),
        BENCH_EVENT: JSON.stringify(event),
        BENCH_TIMEOUT_MS: String(timeoutMs),
        BENCH_REQUEST_ID: options.requestId,
        ...(options.drive === undefined ? {} : { BENCH_WARM: '1' }),
      },
      stdio:
        options.drive === undefined
          ? ['ignore', log, 'pipe', 'pipe']
          : ['ignore', log, 'pipe', 'pipe', 'ipc'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  let results = '';
  (child.stdio[3] as NodeJS.ReadableStream | null)?.on('data', (chunk: Buffer) => {
    results += chunk.toString();
  });
  // A Lambda is stopped at its timeout; the bench lets the invocation finish (to measure it) but
  // not forever.
  const killAfterMs = timeoutMs * 5 + 60_000;
  let killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const invocations: WarmInvocation[] = [];
  if (options.drive !== undefined) {
    const replies: ((m: Record<string, unknown>) => void)[] = [];
    child.on('message', (m: Record<string, unknown>) => replies.shift()?.(m));
    const next = () =>
      Promise.race([
        new Promise<Record<string, unknown>>((resolve) => replies.push(resolve)),
        exited.then((e) => {
          throw new Error(`the warm ${lambda} process exited (${e.code ?? e.signal}): ${stderr.slice(-600)}`);
        }),
      ]);
    await next(); // ready: the cold start is over
    let count = 0;
    await options.drive(async (event) => {
      count += 1;
      clearTimeout(killer);
      killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const reply = next();
      child.send({ event, requestId: `${options.requestId}-${count}` });
      const r = await reply;
      const outcome = r['outcome'] as { ok: boolean; error?: string; summary?: unknown };
      const invocation: WarmInvocation = {
        ok: outcome.ok,
        ...(outcome.error === undefined ? {} : { error: outcome.error }),
        summary: outcome.summary,
        startedAtMs: r['startedAtMs'] as number,
        wallMs: r['wallMs'] as number,
        timeline: r['timeline'] as TimelineEntry[],
        bytesReadByPort: r['bytesReadByPort'] as Record<string, number>,
        kubeRequests: r['kubeRequests'] as Record<string, number>,
      };
      invocations.push(invocation);
      return invocation;
    });
    child.send({ done: true });
  }
  const exit = await exited;
  clearTimeout(killer);
  fs.writeSync(log, stderr);
  fs.closeSync(log);

  const lines = results
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const result = lines.find((l) => l['kind'] === 'result');
  const lastProgress = [...lines].reverse().find((l) => l['kind'] === 'progress')?.['peaks'] as
    | Record<string, number>
    | undefined;
  const outOfMemory = /heap out of memory|Reached heap limit|Allocation failed/i.test(stderr);
  const logMessages = countMessages(options.logFile);
  if (result === undefined) {
    const why = outOfMemory
      ? `out of memory (heap limit ${heapLimitMb} MB)`
      : `exited with ${exit.code ?? exit.signal} before reporting; end of stderr: ${stderr.slice(-600)}`;
    return {
      lambda,
      memorySizeMb,
      timeoutMs,
      heapLimitMb,
      ok: false,
      error: why,
      outOfMemory,
      exceededTimeout: false,
      ...(lastProgress === undefined
        ? {}
        : {
            peakHeapUsedBytes: lastProgress['heapUsed'],
            peakHeapCommittedBytes: lastProgress['heapCommitted'],
            peakRssBytes: lastProgress['rss'],
          }),
      logMessages,
      logFile: options.logFile,
    };
  }
  const wallMs = result['wallMs'] as number;
  return {
    lambda,
    memorySizeMb,
    timeoutMs,
    heapLimitMb,
    ok: result['ok'] === true,
    ...(result['ok'] === true ? {} : { error: String(result['error']) }),
    outOfMemory: false,
    exceededTimeout: wallMs > timeoutMs,
    initMs: result['initMs'] as number,
    wallMs,
    heapAfterInitBytes: result['heapAfterInitBytes'] as number,
    peakHeapUsedBytes: result['peakHeapUsedBytes'] as number,
    peakHeapCommittedBytes: result['peakHeapCommittedBytes'] as number,
    peakRssBytes: result['peakRssBytes'] as number,
    connectionsByPort: result['connectionsByPort'] as Record<string, number>,
    bytesReadByPort: result['bytesReadByPort'] as Record<string, number>,
    kubeRequests: result['kubeRequests'] as Record<string, number>,
    ...(result['aws'] === undefined ? {} : { aws: result['aws'] as NonNullable<InvocationResult['aws']> }),
    summary: result['summary'],
    startedAtMs: result['startedAtMs'] as number,
    timeline: keepTimeline(options.logFile, result['timeline'] as TimelineEntry[]),
    ...(options.drive === undefined ? {} : { invocations }),
    logMessages,
    logFile: options.logFile,
  };
}

function countMessages(file: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as { message?: unknown; level?: unknown };
      const key = `${parsed.level ?? '?'}: ${String(parsed.message)}`;
      counts[key] = (counts[key] ?? 0) + 1;
    } catch {
      // Not a log line.
    }
  }
  return counts;
}

/** The invocation's requests, also written beside its log (`<log>.timeline.json`) to be read later. */
function keepTimeline(logFile: string, timeline: TimelineEntry[]): TimelineEntry[] {
  if (Array.isArray(timeline)) fs.writeFileSync(`${logFile}.timeline.json`, JSON.stringify(timeline));
  return timeline;
}
