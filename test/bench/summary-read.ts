// Cluster summary read benchmark: `npm run bench:summary` (2,000 nodes / 30,000 pods) or
// `npm run bench:summary -- 500x5000 …`. Builds the summary of the scale bench's cluster with the
// shim's own SummaryBuilder (summary-build.ts), gzipped as the shim publishes it, then times reading
// it in a fresh Node process per read (summary-read-case.ts), pinned to one core (BENCH_CPU,
// default 0) as the other benches are: the NodeClaims and the Nodes without their pods only (what a
// provisioner run with nothing pending reads), everything (the pods and the Nodes with them too),
// and everything again in a warm container that holds the document and reads the changes since it
// (about a minute of churn, CHANGED). Each read runs five times; the run of median total time is printed, with its phases. Then
// the shim's side (summary-publish-case.ts): the same summary built and published five times in a
// fresh process, with the time of each publish and the process's resident memory after the build and
// at its peak while publishing.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { encodeSummaryDocument } from '../../shared/apis/index.ts';
import { summaryChanges } from '../../shared/apis/summary-changes.ts';
import type { SummarySnapshot } from '../../shared/apis/summary-document.ts';
import { cacheDir } from '../harness/paths.ts';
import { nodeShapes, parseSizes, planCluster, sizeLabel } from './scale/plan.ts';
import { buildSummary } from './summary-build.ts';
import type { SummaryPublishResult } from './summary-publish-case.ts';
import type { SummaryReadResult, SummaryReadWhat } from './summary-read-case.ts';
import { loadInstanceTypes } from './workloads.ts';

const gzipAsync = promisify(gzip);
const AT = '2026-11-26T12:00:00Z';
const RUNS = 5;
const READS: readonly SummaryReadWhat[] = ['nodeClaims', 'all', 'changes'];
/** What changed since the base in the `changes` read: about a minute of a busy cluster's churn. */
const CHANGED = { pods: 300, nodes: 20, nodeClaims: 20 } as const;

const sizes = parseSizes(process.argv.slice(2).join(',') || '2000x30000');
const caseScript = fileURLToPath(new URL('./summary-read-case.ts', import.meta.url));
const publishScript = fileURLToPath(new URL('./summary-publish-case.ts', import.meta.url));
const benchCpu = process.env['BENCH_CPU'] ?? '0';
const hasTaskset = spawnSync('taskset', ['-c', benchCpu, 'true']).status === 0;
console.log(
  `summary read benchmark: node ${process.version}, ${cpus().length} cpus, ${hasTaskset ? `pinned to cpu ${benchCpu}` : 'not pinned'}, median of ${RUNS} fresh processes per read`,
);

/** The last stdout line of `args` run in a fresh Node process on the bench's core, as JSON. */
function runFresh<T>(args: readonly string[]): T {
  const options = { encoding: 'utf8', maxBuffer: 1 << 24 } as const;
  const out = hasTaskset
    ? execFileSync('taskset', ['-c', benchCpu, process.execPath, ...args], options)
    : execFileSync(process.execPath, [...args], options);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as T;
}

const runCase = (file: string, what: SummaryReadWhat, changesFile: string) =>
  runFresh<SummaryReadResult>(['--import', 'tsx', caseScript, file, what, changesFile]);

/** `snapshot` with the first `CHANGED` objects of each kind changed (a later start, a new annotation). */
function changedSnapshot(snapshot: SummarySnapshot): SummarySnapshot {
  const later = '2026-11-26T12:01:00Z';
  const pods = new Map(snapshot.pods);
  for (const [key, pod] of [...snapshot.pods].slice(0, CHANGED.pods)) {
    pods.set(key, { key: pod.key, instance: { ...pod.instance, startTime: later } });
  }
  const touched = (objects: ReadonlyMap<string, unknown>, count: number) => {
    const out = new Map(objects);
    for (const [key, object] of [...objects].slice(0, count)) {
      const raw = object as { metadata: Record<string, unknown> };
      const annotations = (raw.metadata['annotations'] ?? {}) as Record<string, string>;
      out.set(key, {
        ...raw,
        metadata: { ...raw.metadata, annotations: { ...annotations, 'bench/changed': later } },
      });
    }
    return out;
  };
  return {
    pods,
    templates: snapshot.templates,
    nodes: touched(snapshot.nodes, CHANGED.nodes),
    nodeClaims: touched(snapshot.nodeClaims, CHANGED.nodeClaims),
  };
}

const runPublish = (size: string) =>
  runFresh<SummaryPublishResult>(['--expose-gc', '--import', 'tsx', publishScript, size]);

const types = new Map(loadInstanceTypes('catalog').map((t) => [t.name, t]));
const dir = join(cacheDir, 'bench');
mkdirSync(dir, { recursive: true });
const rows: string[] = [];
const publishRows: string[] = [];
for (const size of sizes) {
  const builder = buildSummary(planCluster(size, nodeShapes(types), 1), types, 1);
  const text = encodeSummaryDocument(builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT }));
  const body = await gzipAsync(text, { level: 4 });
  const file = join(dir, `summary-${sizeLabel(size)}.json.gz`);
  writeFileSync(file, body);
  const snapshot = builder.snapshot();
  const changes = JSON.stringify(
    summaryChanges(snapshot, changedSnapshot(snapshot), {
      cluster: 'bench',
      base: '"bench"',
      publishedAt: AT,
      current: { pods: AT, nodes: AT, nodeClaims: AT },
    }),
  );
  const changesBody = await gzipAsync(changes, { level: 4 });
  const changesFile = join(dir, `summary-changes-${sizeLabel(size)}.json.gz`);
  writeFileSync(changesFile, changesBody);
  const kept = builder.size();
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  console.log(
    `${sizeLabel(size)}: ${kept.nodes} Nodes, ${kept.nodeClaims} NodeClaims, ${kept.pods} pods (${kept.templates} templates); ${mib(body.length)} MiB gzipped, ${mib(text.length)} MiB of text, ${mib(text.indexOf('\n'))} MiB of it the head`,
  );
  console.log(
    `  changes since it (${CHANGED.pods} pods, ${CHANGED.nodes} Nodes, ${CHANGED.nodeClaims} NodeClaims): ${(changesBody.length / 1024).toFixed(1)} KiB gzipped, ${(changes.length / 1024).toFixed(1)} KiB of text`,
  );
  for (const what of READS) {
    const runs = Array.from({ length: RUNS }, () => runCase(file, what, changesFile));
    const median = [...runs].sort((a, b) => a.totalMs - b.totalMs)[Math.floor(RUNS / 2)] as SummaryReadResult;
    const phases = Object.entries(median.phasesMs)
      .map(([phase, ms]) => `${phase} ${ms.toFixed(0)}`)
      .join(', ');
    console.log(
      `  ${what}: ${median.totalMs.toFixed(0)} ms (${phases}); runs: ${runs.map((r) => r.totalMs.toFixed(0)).join(', ')} ms`,
    );
    rows.push(`| ${sizeLabel(size)} | ${what} | ${median.totalMs.toFixed(0)} | ${phases} |`);
  }
  const publish = runPublish(sizeLabel(size));
  const times = publish.publishMs.map((ms) => ms.toFixed(0)).join(', ');
  const medianMs =
    [...publish.publishMs].sort((a, b) => a - b)[Math.floor(publish.publishMs.length / 2)] ?? 0;
  const added = publish.peakRssBytes - publish.rssAfterBuildBytes;
  console.log(
    `  publish: ${medianMs.toFixed(0)} ms median (${times}); resident ${mib(publish.rssAfterBuildBytes)} MiB after the build, ${mib(publish.peakRssBytes)} MiB at its peak (+${mib(added)})`,
  );
  publishRows.push(
    `| ${sizeLabel(size)} | ${medianMs.toFixed(0)} | ${mib(publish.gzippedBytes)} | ${mib(publish.rssAfterBuildBytes)} | ${mib(publish.peakRssBytes)} | +${mib(added)} |`,
  );
}
console.log(
  ['', '| size | read | ms (median) | phases (ms) |', '| --- | --- | ---: | --- |', ...rows].join('\n'),
);
console.log(
  [
    '',
    '| size | publish ms (median of 5) | MiB gzipped | resident MiB after the build | peak resident MiB publishing | added |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...publishRows,
  ].join('\n'),
);
