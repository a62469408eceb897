// Cluster summary read benchmark: `npm run bench:summary` (2,000 nodes / 30,000 pods) or
// `npm run bench:summary -- 500x5000 …`. Builds the summary of the scale bench's cluster with the
// shim's own SummaryBuilder (summary-build.ts), gzipped as the shim publishes it, then times reading
// it in a fresh Node process per read (summary-read-case.ts), pinned to one core (BENCH_CPU,
// default 0) as the other benches are: the NodeClaims and the Nodes without their pods only (what a
// provisioner run with nothing pending reads), and everything (the pods and the Nodes with them
// too). Each read runs five times; the run of median total time is printed, with its phases. Then
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
import { cacheDir } from '../harness/paths.ts';
import { nodeShapes, parseSizes, planCluster, sizeLabel } from './scale/plan.ts';
import { buildSummary } from './summary-build.ts';
import type { SummaryPublishResult } from './summary-publish-case.ts';
import type { SummaryReadResult, SummaryReadWhat } from './summary-read-case.ts';
import { loadInstanceTypes } from './workloads.ts';

const gzipAsync = promisify(gzip);
const AT = '2026-11-26T12:00:00Z';
const RUNS = 5;
const READS: readonly SummaryReadWhat[] = ['nodeClaims', 'all'];

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

const runCase = (file: string, what: SummaryReadWhat) =>
  runFresh<SummaryReadResult>(['--import', 'tsx', caseScript, file, what]);

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
  const kept = builder.size();
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  console.log(
    `${sizeLabel(size)}: ${kept.nodes} Nodes, ${kept.nodeClaims} NodeClaims, ${kept.pods} pods (${kept.templates} templates); ${mib(body.length)} MiB gzipped, ${mib(text.length)} MiB of text, ${mib(text.indexOf('\n'))} MiB of it the head`,
  );
  for (const what of READS) {
    const runs = Array.from({ length: RUNS }, () => runCase(file, what));
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
