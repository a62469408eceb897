// Consolidation benchmark: `npm run bench:consolidation` (all six cases) or
// `npm run bench:consolidation -- 5000:catalog …` (selected cases; a further field sets the NodePool's
// minimum savings, e.g. `1000:400:0%`, or the simulated kube-scheduler's scoring, told to Flotilla
// too, e.g. `1000:400:MostAllocated`; `single:spot` or `single:on-demand:0%` runs the
// single-candidate case, consolidation-single.ts). Each case runs consolidation-case.ts in its own Node process
// pinned to one core (BENCH_CPU, default 0) and prints one line as it finishes, then a Markdown
// table. `npm run bench` with no cases named runs the four after the scheduling benchmark.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { FIT_SCORINGS, isFitScoring } from '../../shared/core/index.ts';
import { type DisruptionMethodName, METHOD_NAMES } from '../../shared/usecases/disruption/methods.ts';

interface Result {
  readonly pods: number;
  readonly typeSet: string;
  readonly minSavings: string;
  readonly scoring: string;
  readonly instanceTypes: number;
  readonly podsRemaining: number;
  readonly nodesBefore: number;
  readonly costBefore: number;
  readonly nodesAfter: number;
  readonly costAfter: number;
  readonly scratchNodes: number;
  readonly scratchCost: number;
  readonly wholePodBound: number;
  readonly ratioScratch: number;
  readonly ratioBound: number;
  readonly converged: boolean;
  readonly virtualMinutes: number;
  readonly commands: {
    readonly delete: number;
    readonly replace: number;
    readonly abandoned: number;
    readonly failed: number;
    /** Carried-out commands per disruption method. */
    readonly byMethod: Readonly<Record<DisruptionMethodName, number>>;
  };
  readonly podsMoved: number;
  readonly podsEvicted: number;
  readonly launchedForPending: number;
  readonly raisedCost: number;
  readonly stranded: number;
  readonly passes: number;
  readonly passesWithCommands: number;
  readonly passSecondsMedian: number;
  readonly passSecondsP95: number;
  readonly passSecondsMax: number;
  readonly passCpuSecondsMedian: number;
  readonly passCpuSecondsP95: number;
  readonly passCpuSecondsMax: number;
  readonly disruptWallSeconds: number;
  readonly peakRssMiB: number;
}

const DEFAULT_CASES = [
  '1000:400',
  '1000:catalog',
  '5000:400',
  '5000:catalog',
  'single:on-demand',
  'single:spot',
];
const requested = process.argv.slice(2);
const chosen = requested.length > 0 ? requested : DEFAULT_CASES;
const singles = chosen.filter((arg) => arg.startsWith('single:')).map((arg) => arg.split(':').slice(1));
const cases = chosen
  .filter((arg) => !arg.startsWith('single:'))
  .map((arg) => {
    // pods:types, then a minimum saving (`0%`) and kube-scheduler's scoring strategy, each optional.
    const [pods = '1000', typeSet = '400', ...rest] = arg.split(':');
    const scoring = rest.find((r) => /^[A-Z]/.test(r));
    if (scoring !== undefined && !isFitScoring(scoring)) {
      throw new Error(
        `case ${arg}: kube-scheduler scoring "${scoring}" is none of ${FIT_SCORINGS.join(', ')}`,
      );
    }
    const minSavings = rest.find((r) => r !== scoring);
    return { pods, typeSet, minSavings, scoring };
  });
const caseScript = fileURLToPath(new URL('./consolidation-case.ts', import.meta.url));
const singleScript = fileURLToPath(new URL('./consolidation-single.ts', import.meta.url));
const benchCpu = process.env['BENCH_CPU'] ?? '0';
const hasTaskset = spawnSync('taskset', ['-c', benchCpu, 'true']).status === 0;
console.log(
  `consolidation benchmark: ${cases.length + singles.length} cases, node ${process.version}, ${cpus().length} cpus, ${hasTaskset ? `pinned to cpu ${benchCpu}` : 'not pinned'}`,
);

/** Runs one case script in its own process (pinned when taskset is there); its last stdout line. */
function runCase(args: readonly string[]): unknown {
  const options = {
    encoding: 'utf8' as const,
    maxBuffer: 1 << 24,
    stdio: ['ignore', 'pipe', 'inherit'] as ('ignore' | 'pipe' | 'inherit')[],
  };
  const out = hasTaskset
    ? execFileSync('taskset', ['-c', benchCpu, process.execPath, ...args], options)
    : execFileSync(process.execPath, args, options);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}');
}

const results: Result[] = [];
for (const c of cases) {
  const args = [
    '--import',
    'tsx',
    caseScript,
    c.pods,
    c.typeSet,
    '12',
    ...(c.minSavings === undefined ? [] : [c.minSavings]),
    ...(c.scoring === undefined ? [] : [`--scoring=${c.scoring}`]),
  ];
  const r = runCase(args) as Result;
  results.push(r);
  console.log(
    `${r.pods} pods × ${r.instanceTypes} types (min savings ${r.minSavings}, kube-scheduler ${r.scoring}): $${r.costBefore.toFixed(2)}/h → $${r.costAfter.toFixed(2)}/h ` +
      `(${r.converged ? `converged in ${r.virtualMinutes.toFixed(0)} virtual min` : 'NOT converged'}), from scratch $${r.scratchCost.toFixed(2)}/h ` +
      `(${r.ratioScratch.toFixed(3)}×), whole-pod bound $${r.wholePodBound.toFixed(2)}/h (${r.ratioBound.toFixed(3)}×), ` +
      `${r.commands.delete} deletes + ${r.commands.replace} replaces, ${r.podsEvicted} pods evicted, ${r.launchedForPending} nodes launched for waiting pods, pass median ${r.passSecondsMedian.toFixed(2)} s / max ${r.passSecondsMax.toFixed(2)} s (cpu ${r.passCpuSecondsMedian.toFixed(2)} s / ${r.passCpuSecondsMax.toFixed(2)} s)`,
  );
}

if (results.length > 0) {
  console.log(
    `\n| pods placed → left | types | min savings | kube-scheduler scoring | nodes before → after | $/h before | $/h after | from-scratch solve | after ÷ scratch | whole-pod LP bound | after ÷ bound | commands (delete + replace; ${METHOD_NAMES.join(' / ')}) | abandoned / failed | pods evicted (commands' podsMoved) | converged after (virtual min) | passes | time per pass, median / p95 / max (s) | cpu per pass, median / p95 / max (s) | stranded pods | commands raising cost |`,
  );
  console.log(
    '|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of results) {
    const k = r.commands;
    console.log(
      `| ${r.pods} → ${r.podsRemaining} | ${r.instanceTypes} | ${r.minSavings} | ${r.scoring} | ${r.nodesBefore} → ${r.nodesAfter} (scratch ${r.scratchNodes}) | ${r.costBefore.toFixed(2)} | ${r.costAfter.toFixed(2)} | ${r.scratchCost.toFixed(2)} | ${r.ratioScratch.toFixed(3)} | ${r.wholePodBound.toFixed(2)} | ${r.ratioBound.toFixed(3)} | ` +
        `${k.delete} + ${k.replace}; ${METHOD_NAMES.map((name) => k.byMethod[name]).join(' / ')} | ${k.abandoned} / ${k.failed} | ${r.podsEvicted} (${r.podsMoved}) | ${r.converged ? r.virtualMinutes.toFixed(0) : `not converged`} | ${r.passes} (${r.passesWithCommands} with commands) | ${r.passSecondsMedian.toFixed(2)} / ${r.passSecondsP95.toFixed(2)} / ${r.passSecondsMax.toFixed(2)} | ${r.passCpuSecondsMedian.toFixed(2)} / ${r.passCpuSecondsP95.toFixed(2)} / ${r.passCpuSecondsMax.toFixed(2)} | ${r.stranded} | ${r.raisedCost} |`,
    );
  }
}

interface SingleResult {
  readonly capacityType: string;
  readonly minSavings: string;
  readonly replicas: number;
  readonly scaleTo: number;
  readonly costBefore: number;
  readonly costAfter: number;
  readonly freshCost: number;
  readonly ratioFresh: number;
  readonly nodesAfter: number;
  readonly freshNodes: number;
  readonly commands: Readonly<Record<string, number>>;
  readonly consolidation: readonly { readonly method: string; readonly minutesAfterScale: number }[];
}

if (singles.length > 0) {
  console.log(
    '\n| single candidate | min savings | $/h before consolidation | $/h after | fresh start | after ÷ fresh | nodes after (fresh) | commands by method | consolidated (min after the scale-down) |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---|---|');
}
for (const [capacityType = 'on-demand', minSavings] of singles) {
  const r = runCase([
    '--import',
    'tsx',
    singleScript,
    capacityType,
    ...(minSavings === undefined ? [] : [minSavings]),
  ]) as SingleResult;
  const methods = Object.entries(r.commands)
    .map(([m, n]) => `${m} ${n}`)
    .join(', ');
  const when = r.consolidation.map((c) => `${c.method} ${c.minutesAfterScale.toFixed(1)}`).join(', ');
  console.log(
    `| ${r.capacityType}, ${r.replicas} → ${r.scaleTo} replicas | ${r.minSavings} | ${r.costBefore.toFixed(4)} | ${r.costAfter.toFixed(4)} | ${r.freshCost.toFixed(4)} | ${r.ratioFresh.toFixed(3)} | ${r.nodesAfter} (${r.freshNodes}) | ${methods} | ${when} |`,
  );
}
