import dc from 'node:diagnostics_channel';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';

// One Lambda invocation in a fresh Node process, as the Lambda runtime does it: import the
// handler module (its cold start), then call `handler(event, context)` once. Bundled by the bench
// with esbuild and run with plain `node`, so nothing but the handler's own code is on the heap.
// Measures the invocation's wall time, the heap (sampled every 20 ms: `heapUsed`, and V8's committed
// heap), and the peak RSS (VmHWM). Results go to file descriptor 3 as JSON lines: `progress` lines
// while it runs (the parent keeps the last one if the process dies, e.g. out of heap) and one
// `result` line at the end. The handler's own log lines go to stdout, as in CloudWatch Logs.
//
// Environment: BENCH_HANDLER (path of the bundled handler module), BENCH_EVENT (JSON),
// BENCH_TIMEOUT_MS (the function's timeout, for getRemainingTimeInMillis), BENCH_REQUEST_ID.

function report(line: Record<string, unknown>): void {
  try {
    fs.writeSync(3, `${JSON.stringify(line)}\n`);
  } catch {
    // No result pipe (run by hand): print instead.
    process.stderr.write(`${JSON.stringify(line)}\n`);
  }
}

function vmHwmBytes(): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

// TCP connections the process opens and the bytes it reads on them (TLS records included: what
// came over the wire), by remote port (the API server's, moto's). A client that opens a connection
// per request shows here.
const connections: Record<string, number> = {};
const bytesRead: Record<string, number> = {};
const openSockets = new Map<net.Socket, string>();
dc.subscribe('net.client.socket', (message) => {
  const socket = (message as { socket: net.Socket }).socket;
  socket.once('connect', () => {
    const port = String(socket.remotePort);
    connections[port] = (connections[port] ?? 0) + 1;
    openSockets.set(socket, port);
    socket.once('close', () => {
      bytesRead[port] = (bytesRead[port] ?? 0) + socket.bytesRead;
      openSockets.delete(socket);
    });
  });
});

/** Bytes read so far by remote port, the open connections' included. */
function bytesReadSoFar(): Record<string, number> {
  const out = { ...bytesRead };
  for (const [socket, port] of openSockets) out[port] = (out[port] ?? 0) + socket.bytesRead;
  return out;
}

/** `after` less `before`, key by key (counts that only grow). */
function grown(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] ?? 0);
    if (delta > 0) out[key] = delta;
  }
  return out;
}

// The Kubernetes requests the handler makes, as `VERB resource[/subresource]`, whichever client
// sends them: client-node (undici) and node:https.
const kubeRequests: Record<string, number> = {};
function kubeCall(method: string, rawPath: string): string | undefined {
  const [pathname = '', query = ''] = rawPath.split('?');
  const parts = pathname.split('/').filter((p) => p !== '');
  const skip = parts[0] === 'api' ? 2 : parts[0] === 'apis' ? 3 : undefined;
  if (skip === undefined) return undefined;
  let rest = parts.slice(skip);
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource = '', name, subresource] = rest;
  const verb =
    method !== 'GET'
      ? method
      : name !== undefined
        ? 'GET'
        : /(^|&)watch=(true|1)/.test(query)
          ? 'WATCH'
          : 'LIST';
  return `${verb} ${resource}${subresource === undefined ? '' : `/${subresource}`}`;
}
function countKubeRequest(method: string, rawPath: string): void {
  const key = kubeCall(method, rawPath);
  if (key !== undefined) kubeRequests[key] = (kubeRequests[key] ?? 0) + 1;
}
dc.subscribe('undici:request:create', (message) => {
  const request = (message as { request: { method: string; path: string } }).request;
  countKubeRequest(request.method, request.path);
});
dc.subscribe('http.client.request.start', (message) => {
  const request = (message as { request: { method: string; path: string } }).request;
  countKubeRequest(request.method, request.path);
});

// Time spent waiting on AWS (moto, the only plain-HTTP server the handler talks to): the time in
// which at least one of its requests was outstanding, and the slowest request. moto is far slower
// than AWS at some calls on a large account (its CreateFleet scans every instance), so the report
// shows the handler's wall time with and without it.
const awsStarted = new WeakMap<object, number>();
const aws = { busyMs: 0, slowestMs: 0, requests: 0, inFlight: 0, busySince: 0 };
dc.subscribe('http.client.request.start', (message) => {
  const request = (message as { request: { protocol?: string } }).request;
  if (request.protocol !== 'http:') return;
  const now = performance.now();
  awsStarted.set(request, now);
  aws.requests += 1;
  if (aws.inFlight === 0) aws.busySince = now;
  aws.inFlight += 1;
});
const awsDone = (message: unknown) => {
  const request = (message as { request: object }).request;
  const began = awsStarted.get(request);
  if (began === undefined) return;
  awsStarted.delete(request);
  const now = performance.now();
  aws.slowestMs = Math.max(aws.slowestMs, now - began);
  aws.inFlight -= 1;
  if (aws.inFlight === 0) aws.busyMs += now - aws.busySince;
};
dc.subscribe('http.client.response.finish', awsDone);
dc.subscribe('http.client.request.error', awsDone);

// The invocation's requests in order (at most TIMELINE_MAX): when each began (epoch ms), how long it
// took, and what it was: `VERB resource` for Kubernetes, the action for AWS (the JSON protocols'
// X-Amz-Target; the query protocol's Action, read from the body EC2 is sent), `S3 GET` and so on.
interface TimelineEntry {
  readonly call: string;
  readonly startedAtMs: number;
  ms?: number;
}
const TIMELINE_MAX = 20_000;
let timeline: TimelineEntry[] = [];
const timed = new WeakMap<object, TimelineEntry>();
function timelineStart(request: object, call: string): void {
  if (timeline.length >= TIMELINE_MAX) return;
  const entry: TimelineEntry = { call, startedAtMs: Date.now() };
  timeline.push(entry);
  timed.set(request, entry);
}
function timelineEnd(request: object): void {
  const entry = timed.get(request);
  if (entry === undefined) return;
  timed.delete(request);
  entry.ms = Date.now() - entry.startedAtMs;
}
dc.subscribe('undici:request:create', (message) => {
  const request = (message as { request: { method: string; path: string } }).request;
  timelineStart(request, kubeCall(request.method, request.path) ?? `${request.method} ${request.path}`);
});
dc.subscribe('undici:request:trailers', (message) => timelineEnd((message as { request: object }).request));
dc.subscribe('undici:request:error', (message) => timelineEnd((message as { request: object }).request));
// The query protocol (EC2) names its action in the body, which the request has sent by the time
// `http.client.request.start` is published: the body's first chunk is read as it is written.
const queryActions = new WeakMap<object, string>();
function sniffAction(request: object, chunk: unknown): void {
  if (queryActions.has(request)) return;
  const text =
    typeof chunk === 'string'
      ? chunk.slice(0, 200)
      : chunk instanceof Uint8Array
        ? Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(200, chunk.byteLength)).toString('utf8')
        : '';
  const action = /(?:^|&)Action=([A-Za-z]+)/.exec(text)?.[1];
  if (action !== undefined) queryActions.set(request, action);
}
const protoWrite = http.ClientRequest.prototype.write as (...args: unknown[]) => boolean;
http.ClientRequest.prototype.write = function (this: http.ClientRequest, ...args: unknown[]) {
  sniffAction(this, args[0]);
  return protoWrite.apply(this, args);
} as typeof http.ClientRequest.prototype.write;
const protoEnd = http.ClientRequest.prototype.end as (...args: unknown[]) => http.ClientRequest;
http.ClientRequest.prototype.end = function (this: http.ClientRequest, ...args: unknown[]) {
  sniffAction(this, args[0]);
  return protoEnd.apply(this, args);
} as typeof http.ClientRequest.prototype.end;
dc.subscribe('http.client.request.start', (message) => {
  const request = (
    message as {
      request: http.ClientRequest & { protocol?: string; path: string; method: string };
    }
  ).request;
  if (request.protocol !== 'http:') {
    timelineStart(request, kubeCall(request.method, request.path) ?? `${request.method} ${request.path}`);
    return;
  }
  const target = request.getHeader('x-amz-target');
  if (typeof target === 'string') {
    timelineStart(request, target.replace(/^[A-Za-z]+_\d+\./, '').replace(/^AmazonSQS\./, 'SQS '));
    return;
  }
  if (request.method !== 'POST') {
    timelineStart(request, `S3 ${request.method}`);
    return;
  }
  // The query protocol's action is the body's first field (read as the request wrote it, below).
  timelineStart(request, queryActions.get(request) ?? 'POST');
});
dc.subscribe('http.client.response.finish', (message) =>
  timelineEnd((message as { request: object }).request),
);
dc.subscribe('http.client.request.error', (message) => timelineEnd((message as { request: object }).request));

const peaks = { heapUsed: 0, heapCommitted: 0, external: 0, rss: 0 };
function sample(): void {
  const usage = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  peaks.heapUsed = Math.max(peaks.heapUsed, usage.heapUsed, heap.used_heap_size);
  peaks.heapCommitted = Math.max(peaks.heapCommitted, heap.total_heap_size);
  peaks.external = Math.max(peaks.external, usage.external + usage.arrayBuffers);
  peaks.rss = Math.max(peaks.rss, usage.rss);
}

const handlerPath = process.env['BENCH_HANDLER'] ?? '';
const event: unknown = JSON.parse(process.env['BENCH_EVENT'] ?? '{}');
const timeoutMs = Number(process.env['BENCH_TIMEOUT_MS'] ?? '60000');
const requestId = process.env['BENCH_REQUEST_ID'] ?? 'bench';

let lastProgress = 0;
const sampler = setInterval(() => {
  sample();
  if (Date.now() - lastProgress >= 500) {
    lastProgress = Date.now();
    report({ kind: 'progress', peaks });
  }
}, 20);

const initStart = performance.now();
const handlerModule = (await import(pathToFileURL(handlerPath).href)) as {
  handler: (event: unknown, context: unknown) => Promise<unknown>;
};
sample();
const initMs = performance.now() - initStart;
const heapAfterInit = process.memoryUsage().heapUsed;

type Outcome = { ok: true; summary: unknown } | { ok: false; error: string };

/** One call of the handler, as the runtime makes it: its own request id and deadline. */
async function invoke(
  event: unknown,
  awsRequestId: string,
): Promise<{
  outcome: Outcome;
  startedAtMs: number;
  wallMs: number;
  timeline: TimelineEntry[];
  bytesReadByPort: Record<string, number>;
  kubeRequests: Record<string, number>;
}> {
  timeline = [];
  const bytesBefore = bytesReadSoFar();
  const requestsBefore = { ...kubeRequests };
  const started = Date.now();
  const context = {
    awsRequestId,
    functionName: process.env['AWS_LAMBDA_FUNCTION_NAME'],
    memoryLimitInMB: process.env['AWS_LAMBDA_FUNCTION_MEMORY_SIZE'],
    getRemainingTimeInMillis: () => Math.max(0, started + timeoutMs - Date.now()),
  };
  let outcome: Outcome;
  try {
    const result = await handlerModule.handler(event, context);
    outcome = { ok: true, summary: summarise(result) };
  } catch (error) {
    outcome = {
      ok: false,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
  return {
    outcome,
    startedAtMs: started,
    wallMs: Date.now() - started,
    timeline,
    // This invocation's own: a warm container's earlier ones are not counted.
    bytesReadByPort: grown(bytesReadSoFar(), bytesBefore),
    kubeRequests: grown(kubeRequests, requestsBefore),
  };
}

// BENCH_WARM=1: a warm container. Events come from the parent over IPC, one at a time; each
// invocation's outcome, wall time and request timeline go back over IPC; `{ done: true }` ends it.
let last: Awaited<ReturnType<typeof invoke>>;
if (process.env['BENCH_WARM'] === '1' && process.send !== undefined) {
  const send = process.send.bind(process);
  last = await new Promise((resolve) => {
    let previous: Awaited<ReturnType<typeof invoke>> | undefined;
    let invocations = 0;
    process.on('message', (message: { done?: boolean; event?: unknown; requestId?: string }) => {
      if (message.done === true) {
        if (previous === undefined) throw new Error('a warm runner ended before any invocation');
        resolve(previous);
        return;
      }
      invocations += 1;
      void invoke(message.event, message.requestId ?? `${requestId}-${invocations}`).then((r) => {
        previous = r;
        send({ kind: 'invocation', ...r });
      });
    });
    send({ kind: 'ready' });
  });
  process.disconnect();
} else {
  last = await invoke(event, requestId);
}
const { outcome, wallMs } = last;
sample();
clearInterval(sampler);
report({
  kind: 'result',
  initMs: Math.round(initMs),
  wallMs,
  heapAfterInitBytes: heapAfterInit,
  peakHeapUsedBytes: peaks.heapUsed,
  peakHeapCommittedBytes: peaks.heapCommitted,
  peakExternalBytes: peaks.external,
  peakRssBytes: vmHwmBytes() ?? peaks.rss,
  connectionsByPort: connections,
  bytesReadByPort: bytesReadSoFar(),
  kubeRequests,
  aws: { requests: aws.requests, busyMs: Math.round(aws.busyMs), slowestMs: Math.round(aws.slowestMs) },
  startedAtMs: last.startedAtMs,
  timeline: last.timeline,
  ...outcome,
});
// Lambda freezes the sandbox after the response; here the process just ends.
process.exit(0);

/** The handler's result, small: counts instead of lists. */
function summarise(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (_key, value: unknown) =>
      Array.isArray(value) && value.length > 10 ? { items: value.length, first: value.slice(0, 3) } : value,
    ),
  );
}
