// Scheduling benchmark: `npm run bench` (all cases, then the planning cost cases of planning.ts and
// the consolidation benchmark of consolidation.ts) or `npm run bench -- diverse:5000:catalog …` (selected scheduling cases only). Every case runs in its own Node process pinned to one core (taskset when
// available), so its time and peak memory are its own. Prints one line per case as it finishes
// and a Markdown table at the end. Cases up to 5,000 pods run three times (fresh process each)
// and report the run with the median solve time; the machine is shared, timings are noisy. A case's
// time is one cold solve in a fresh process; `warm` is the same input solved again in that process.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

interface CaseResult {
  readonly mix: string;
  readonly pods: number;
  readonly typeSet: string;
  readonly instanceTypes: number;
  readonly seconds: number;
  readonly warmSeconds: number;
  readonly podsPerSecond: number;
  readonly nodes: number;
  readonly scheduled: number;
  readonly unschedulable: number;
  readonly costPerHour: number;
  readonly lowerBound: number;
  readonly ratio: number;
  readonly wholePodBound: number;
  readonly wholePodRatio: number;
  readonly aggregateBound: number;
  readonly aggregateRatio: number;
  readonly heapAfterSolveMiB: number;
  readonly peakRssMiB: number;
}

const SIZES = [100, 1000, 5000, 20000];
const TYPE_SETS = ['400', 'catalog'];
const MIXES = ['diverse', 'plain-requests'];

const requested = process.argv.slice(2);
const cases =
  requested.length > 0
    ? requested.map((arg) => {
        const [mix = '', pods = '', typeSet = ''] = arg.split(':');
        return { mix, pods: Number(pods), typeSet };
      })
    : TYPE_SETS.flatMap((typeSet) => SIZES.flatMap((pods) => MIXES.map((mix) => ({ mix, pods, typeSet }))));

const caseScript = fileURLToPath(new URL('./case.ts', import.meta.url));
// BENCH_CPU picks the core to pin to (default 0), so a run can stay off a core busy with other work.
const benchCpu = process.env['BENCH_CPU'] ?? '0';
const hasTaskset = spawnSync('taskset', ['-c', benchCpu, 'true']).status === 0;

console.log(
  `scheduling benchmark: ${cases.length} cases, node ${process.version}, ${cpus().length} cpus (${cpus()[0]?.model ?? '?'}), ${hasTaskset ? `pinned to cpu ${benchCpu}` : 'not pinned'}`,
);
const results: CaseResult[] = [];
function runOnce(c: { mix: string; pods: number; typeSet: string }): CaseResult {
  const args = ['--import', 'tsx', caseScript, c.mix, String(c.pods), c.typeSet];
  const options = { encoding: 'utf8', maxBuffer: 1 << 24 } as const;
  const out = hasTaskset
    ? execFileSync('taskset', ['-c', benchCpu, process.execPath, ...args], options)
    : execFileSync(process.execPath, args, options);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as CaseResult;
}

for (const c of cases) {
  const runs = Array.from({ length: c.pods <= 5000 ? 3 : 1 }, () => runOnce(c)).sort(
    (a, b) => a.seconds - b.seconds,
  );
  const r = runs[Math.floor(runs.length / 2)] as CaseResult;
  results.push(r);
  console.log(
    `${r.mix.padEnd(14)} ${String(r.pods).padStart(6)} pods × ${String(r.instanceTypes).padStart(4)} types: ` +
      `${r.seconds.toFixed(2)} s (warm ${r.warmSeconds.toFixed(3)} s), ${Math.round(r.podsPerSecond)} pods/s, ${r.nodes} nodes, ` +
      `$${r.costPerHour.toFixed(2)}/h = ${r.wholePodRatio.toFixed(3)}× whole-pod bound, ${r.ratio.toFixed(3)}× assignment bound (${r.aggregateRatio.toFixed(2)}× aggregate LP), ` +
      `unschedulable ${r.unschedulable}, heap ${Math.round(r.heapAfterSolveMiB)} MiB, peak RSS ${Math.round(r.peakRssMiB)} MiB` +
      (runs.length > 1
        ? ` (median of ${runs.length}: ${runs.map((x) => x.seconds.toFixed(2)).join(' / ')} s)`
        : ''),
  );
}

console.log(
  '\n| mix | pods | types | time (s) | warm (s) | pods/s | nodes | unsched. | $/hour | whole-pod LP bound | ratio | assignment-LP bound | ratio | aggregate-LP bound | ratio | heap after solve (MiB) | peak RSS (MiB) |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of results) {
  console.log(
    `| ${r.mix} | ${r.pods} | ${r.instanceTypes} | ${r.seconds.toFixed(2)} | ${r.warmSeconds.toFixed(3)} | ${Math.round(r.podsPerSecond)} | ${r.nodes} | ${r.unschedulable} | ${r.costPerHour.toFixed(2)} | ${r.wholePodBound.toFixed(2)} | ${r.wholePodRatio.toFixed(3)} | ${r.lowerBound.toFixed(2)} | ${r.ratio.toFixed(3)} | ${r.aggregateBound.toFixed(2)} | ${r.aggregateRatio.toFixed(3)} | ${Math.round(r.heapAfterSolveMiB)} | ${Math.round(r.peakRssMiB)} |`,
  );
}

// With no cases named, the planning cost cases and the consolidation benchmark follow (their own
// processes, their own tables).
if (requested.length === 0) {
  console.log('');
  const planning = fileURLToPath(new URL('./planning.ts', import.meta.url));
  const planned = spawnSync(process.execPath, ['--import', 'tsx', planning], { stdio: 'inherit' }).status;
  if (planned !== 0) process.exitCode = planned ?? 1;
  console.log('');
  const consolidation = fileURLToPath(new URL('./consolidation.ts', import.meta.url));
  const status = spawnSync(process.execPath, ['--import', 'tsx', consolidation], { stdio: 'inherit' }).status;
  if (status !== 0) process.exitCode = status ?? 1;
}
