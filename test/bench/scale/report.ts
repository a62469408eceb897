import type { Traffic } from './metrics.ts';

// The results: one row per step and size, as Markdown for people and JSON for later comparison.

export interface StepRow {
  readonly size: string;
  readonly step: string;
  /** `provisioner (512 MB, 90 s)`, or `shim (160Mi limit)`. */
  readonly runsAs: string;
  readonly ok: boolean;
  /** `ok`, `out of memory`, `exceeded timeout`, or the error. */
  readonly outcome: string;
  readonly wallMs?: number;
  readonly initMs?: number;
  readonly peakHeapUsedBytes?: number;
  readonly peakHeapCommittedBytes?: number;
  readonly heapLimitMb?: number;
  readonly peakRssBytes?: number;
  readonly traffic?: Traffic;
  /** Pods in the cluster during the step (to turn listed pods into whole-list reads). */
  readonly podsInCluster: number;
  /** JSON bytes of one object by LIST resource (pods: the average), to estimate decoded bytes. */
  readonly objectBytes?: Readonly<Record<string, number>>;
  /** Anything step-specific worth keeping (NodeClaims launched, handler result, log counts). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** The same step rerun with a large heap after running out of memory. */
  readonly largeHeap?: Omit<StepRow, 'largeHeap'>;
}

const mb = (bytes: number | undefined) => (bytes === undefined ? '–' : (bytes / 2 ** 20).toFixed(0));
const mb1 = (bytes: number | undefined) => (bytes === undefined ? '–' : (bytes / 2 ** 20).toFixed(1));
const seconds = (ms: number | undefined) => (ms === undefined ? '–' : (ms / 1000).toFixed(1));

type Row = Omit<StepRow, 'largeHeap'>;

/**
 * Objects LISTs returned during the step, by resource; for a Lambda step only of the resources the
 * Lambda itself listed (another client relisting at the same time would be counted otherwise).
 */
function listedBy(row: Row): Readonly<Record<string, number>> {
  const listed = row.traffic?.listedObjects ?? {};
  const own = row.details?.['kubeRequests'] as Record<string, number> | undefined;
  if (own === undefined) return listed;
  return Object.fromEntries(
    Object.entries(listed).filter(([resource]) => (own[`LIST ${resource}`] ?? 0) > 0),
  );
}

function podReads(row: Row): string {
  const listed = listedBy(row)['pods'] ?? 0;
  return row.podsInCluster > 0 ? (listed / row.podsInCluster).toFixed(1) : '–';
}

/** What the LISTs returned, as JSON before compression: listed objects times their size. */
function listedMb(row: Row): string {
  if (row.traffic === undefined || row.objectBytes === undefined) return '–';
  let bytes = 0;
  for (const [resource, count] of Object.entries(listedBy(row))) {
    bytes += count * (row.objectBytes[resource] ?? 0);
  }
  return (bytes / 2 ** 20).toFixed(0);
}

/** The step's own Kubernetes requests: counted in the Lambda's process, else (the shim) by the API server. */
function ownRequests(row: Row): Readonly<Record<string, number>> | undefined {
  return (row.details?.['kubeRequests'] as Record<string, number> | undefined) ?? row.traffic?.requests;
}

function total(counts: Readonly<Record<string, number>> | undefined): string {
  return counts === undefined ? '–' : String(Object.values(counts).reduce((a, b) => a + b, 0));
}

function top(counts: Readonly<Record<string, number>> | undefined, count: number): string {
  if (counts === undefined) return '–';
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
}

/** The time AWS (moto) requests were outstanding, and the slowest one. */
function awsWait(row: Row): string {
  const aws = row.details?.['aws'] as { busyMs: number; slowestMs: number } | undefined;
  return aws === undefined ? '–' : `${seconds(aws.busyMs)}, ${seconds(aws.slowestMs)}`;
}

function fromApiServer(row: Row, what: 'connections' | 'bytesReceived'): number | undefined {
  return (row.details?.[what] as Record<string, number> | undefined)?.['kube-apiserver'];
}

function line(row: Row, step: string): string {
  const t = row.traffic;
  const fromRunsAs = /\((\d+) MB,/.exec(row.runsAs)?.[1];
  const memoryMb =
    (row.details?.['memorySizeMb'] as number | undefined) ??
    (fromRunsAs === undefined ? undefined : Number(fromRunsAs));
  const overMemory =
    memoryMb !== undefined && row.peakRssBytes !== undefined && row.peakRssBytes > memoryMb * 2 ** 20
      ? '; RSS over the memory size'
      : '';
  const outcome = `${row.outcome}${overMemory}${row.details?.['shimRunning'] === false ? ' (shim not running)' : ''}`;
  const own = ownRequests(row);
  const connections = fromApiServer(row, 'connections');
  return [
    '',
    row.size,
    step,
    row.runsAs,
    outcome,
    seconds(row.wallMs),
    awsWait(row),
    seconds(row.initMs),
    total(own),
    top(own, 4),
    connections ?? '–',
    mb1(fromApiServer(row, 'bytesReceived')),
    podReads(row),
    listedMb(row),
    t?.requestsTotal ?? '–',
    t === undefined ? '–' : mb1(t.bytesTotal),
    `${mb(row.peakHeapUsedBytes)} / ${mb(row.peakHeapCommittedBytes)}`,
    row.heapLimitMb ?? '–',
    mb(row.peakRssBytes),
    '',
  ]
    .join(' | ')
    .trim();
}

export function markdown(rows: readonly StepRow[]): string {
  const out = [
    '| size (nodes x pods) | step | runs as (memory, timeout) | outcome | wall s | of it AWS (moto) s, slowest call | init s | its API requests | top requests | TLS connections | MB received (wire) | pod-list reads | MB listed (JSON, est.) | all API requests (API server) | MB sent (API server) | peak heap used / committed MB | heap limit MB | peak RSS MB |',
    '| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of rows) {
    out.push(line(row, row.step));
    if (row.largeHeap !== undefined) out.push(line(row.largeHeap, `${row.step} (rerun, large heap)`));
  }
  return out.join('\n');
}

export const TABLE_NOTES = [
  'its API requests / top requests: the Kubernetes requests the Lambda process made (counted in it, from the HTTP clients’ diagnostics channels); for the shim, what the API server counted during its start.',
  'TLS connections / MB received: TCP connections the Lambda process opened to the API server and the bytes it read on them (TLS records, compressed bodies: what crossed the wire).',
  'pod-list reads: pods returned by LISTs (API server: watch cache and etcd) divided by the pods in the cluster: how many times the whole pod list was read; for a Lambda step counted only when the Lambda listed pods itself (another client relisting meanwhile would add to it).',
  'MB listed: objects the LISTs returned (of the resources the Lambda listed) times the JSON size of one such object as loaded: roughly what was decoded.',
  'RSS over the memory size: the process’s peak RSS exceeded the function’s memory size; on Lambda the invocation would be stopped (indicative: Lambda counts the sandbox’s memory).',
  'all API requests / MB sent: apiserver_request_total and apiserver_response_sizes over the step, every client (the control plane’s controllers too), without the bench’s Lease renewals and without WATCHes (counted when they end). Response sizes are counted after compression: responses over 128 KiB are gzipped for clients that accept it.',
  'heap: sampled every 20 ms (heapUsed) and V8’s committed heap; heap limit: --max-old-space-size as the Lambda runtime sets it for the memory size. RSS: VmHWM of the process.',
  'of it AWS (moto): the time in which at least one of the Lambda’s AWS requests was outstanding, and the slowest request. moto answers some calls far slower than AWS on a large account (its CreateFleet scans every instance): wall time less this is Flotilla’s own.',
  'shim: RSS only (its heap is not visible from outside); wall s = from process start until every unschedulable pod was forwarded.',
];
