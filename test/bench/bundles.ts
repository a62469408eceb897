// Lambda bundles and their cold start: `npm run bench:bundles` (`-- --runs 10`, `--out <dir>` to
// reuse a synthesized cloud assembly). Synthesizes the stack with `cdk synth` (each Lambda bundled by
// esbuild as the stack bundles it), then imports every bundle in a fresh Node process, `runs` times,
// the Lambdas taking turns within each round so that the machine's slow moments fall on all of them
// alike. Each process is pinned to one core (BENCH_CPU, default 0) with taskset when there is one. The
// import is module evaluation and client construction: a cold start's own share, before the Lambda
// runtime's. Prints one Markdown table: size, zipped size, median (min–max) import time, and the
// ratio of the median to the catalog Lambda's, which talks to no cluster.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { lambdaImportEnv, offlineEnv } from '../fixtures/lambda-env.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(`--${name}`);
  return at < 0 ? undefined : args[at + 1];
};
const runs = Number(option('runs') ?? 10);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a positive whole number, got ${runs}`);
const cpu = process.env['BENCH_CPU'] ?? '0';
const pinned = spawnSync('taskset', ['-c', cpu, 'true']).status === 0;

function synthesize(): string {
  const given = option('out');
  if (given !== undefined && fs.existsSync(given)) return given;
  const out = given ?? fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-bundles-'));
  process.stderr.write(`cdk synth into ${out} (every Lambda bundled; a minute or two)\n`);
  execFileSync(
    path.join(root, 'node_modules/.bin/cdk'),
    ['synth', '-c', 'clusterName=bench', '--quiet', '--output', out],
    { cwd: root, env: offlineEnv(), stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return out;
}

interface Bundle {
  readonly lambda: string;
  readonly file: string;
  readonly bytes: number;
  readonly zippedBytes: number;
  readonly importMs: number[];
}

/** Each asset's bundle, named by the handler its source map leads back to. */
function bundles(out: string): Bundle[] {
  const found: Bundle[] = [];
  for (const asset of fs.readdirSync(out).filter((name) => name.startsWith('asset.'))) {
    const file = path.join(out, asset, 'index.mjs');
    if (!fs.existsSync(file)) continue;
    const sources = (JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as { sources: string[] }).sources;
    const lambda = sources.map((s) => /lambdas\/([a-z-]+)\/handler\.ts$/.exec(s)?.[1]).find((s) => s);
    if (lambda === undefined) continue;
    const text = fs.readFileSync(file);
    found.push({ lambda, file, bytes: text.length, zippedBytes: gzipSync(text).length, importMs: [] });
  }
  return found.sort((a, b) =>
    a.lambda === 'catalog' ? -1 : b.lambda === 'catalog' ? 1 : a.lambda.localeCompare(b.lambda),
  );
}

const IMPORT =
  'const t = performance.now(); const m = await import(process.argv[1]); if (typeof m.handler !== "function") throw new Error("no handler"); process.stdout.write(String(performance.now() - t));';

function importOnce(file: string): number {
  const command = [process.execPath, '--input-type=module', '-e', IMPORT, file];
  const result = pinned
    ? spawnSync('taskset', ['-c', cpu, ...command], { env: lambdaImportEnv('bench'), encoding: 'utf8' })
    : spawnSync(command[0] ?? 'node', command.slice(1), { env: lambdaImportEnv('bench'), encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`importing ${file} failed: ${result.stderr}`);
  return Number(result.stdout);
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

const list = bundles(synthesize());
if (!list.some((b) => b.lambda === 'catalog')) throw new Error('no catalog bundle in the cloud assembly');
process.stderr.write(
  `${list.length} bundles, ${runs} rounds, node ${process.version}, ${pinned ? `pinned to cpu ${cpu}` : 'not pinned'}\n`,
);
for (let round = 1; round <= runs; round++) {
  for (const bundle of list) bundle.importMs.push(importOnce(bundle.file));
  process.stderr.write(`round ${round}/${runs} done\n`);
}
const catalog = median(list.find((b) => b.lambda === 'catalog')?.importMs ?? []);
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
console.log('| Lambda | bundle (MB) | zipped (MB) | import, median (ms) | min–max (ms) | × catalog |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const b of list) {
  const m = median(b.importMs);
  console.log(
    `| ${b.lambda} | ${mb(b.bytes)} | ${mb(b.zippedBytes)} | ${m.toFixed(0)} | ${Math.min(...b.importMs).toFixed(0)}–${Math.max(...b.importMs).toFixed(0)} | ${(m / catalog).toFixed(2)} |`,
  );
}
