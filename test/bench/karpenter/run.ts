// Flotilla's scheduler beside Karpenter's, on the same input and the same core: the plain-requests
// mix of the scheduling benchmark, Flotilla's solve() in a fresh Node process (case.ts) and
// Karpenter v1.14.1's scheduler in a fresh Go process (main.go), taking turns, so a drift in the
// machine's speed falls on both; for each, the first solve in its process (cold) and the third
// (warm). Needs Go; the first run downloads the harness's modules.
// Usage: npm run bench:karpenter -- [pods] [typeSet] [pairs]   (defaults: 1000 400 7)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [podsArg = '1000', typeSet = '400', pairsArg = '7'] = process.argv.slice(2);
const pairs = Number(pairsArg);
if (!Number.isInteger(pairs) || pairs < 1)
  throw new Error(`pairs: ${pairsArg} is not a positive whole number`);
const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const cache = join(root, '.cache', 'bench');
mkdirSync(cache, { recursive: true });
// BENCH_CPU picks the core both sides are pinned to (default 0).
const cpu = process.env['BENCH_CPU'] ?? '0';
const pinned = spawnSync('taskset', ['-c', cpu, 'true']).status === 0;
const pin = (command: string, args: string[]): [string, string[]] =>
  pinned ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];

const inputPath = join(cache, `karpenter-input-${podsArg}-${typeSet}.json`);
writeFileSync(
  inputPath,
  execFileSync(process.execPath, ['--import', 'tsx', join(here, 'input.ts'), podsArg, typeSet], {
    maxBuffer: 1 << 28,
  }),
);
const binary = join(cache, 'karpenter-scheduler-bench');
execFileSync('go', ['build', '-o', binary, '.'], { cwd: here, stdio: ['ignore', 'inherit', 'inherit'] });

interface Side {
  cold: number[];
  warm: number[];
  costPerHour: number;
  nodes: number;
}
const flotilla: Side = { cold: [], warm: [], costPerHour: 0, nodes: 0 };
const karpenter: Side = { cold: [], warm: [], costPerHour: 0, nodes: 0 };

function runFlotilla(): void {
  const [command, args] = pin(process.execPath, [
    '--import',
    'tsx',
    join(root, 'test', 'bench', 'case.ts'),
    'plain-requests',
    podsArg,
    typeSet,
  ]);
  const out = JSON.parse(execFileSync(command, args, { cwd: root, encoding: 'utf8' })) as {
    seconds: number;
    warmSeconds: number;
    costPerHour: number;
    nodes: number;
  };
  flotilla.cold.push(out.seconds);
  flotilla.warm.push(out.warmSeconds);
  flotilla.costPerHour = out.costPerHour;
  flotilla.nodes = out.nodes;
}

function runKarpenter(): void {
  const [command, args] = pin(binary, [inputPath]);
  const out = JSON.parse(execFileSync(command, args, { encoding: 'utf8' })) as {
    coldSeconds: number;
    warmSeconds: number;
    costPerHour: number;
    nodes: number;
    unschedulable: number;
  };
  if (out.unschedulable > 0) throw new Error(`Karpenter left ${out.unschedulable} pods unschedulable`);
  karpenter.cold.push(out.coldSeconds);
  karpenter.warm.push(out.warmSeconds);
  karpenter.costPerHour = out.costPerHour;
  karpenter.nodes = out.nodes;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

for (let i = 0; i < pairs; i++) {
  if (i % 2 === 0) {
    runFlotilla();
    runKarpenter();
  } else {
    runKarpenter();
    runFlotilla();
  }
  process.stderr.write(`pair ${i + 1} of ${pairs}\n`);
}

const row = (name: string, s: Side): string =>
  `| ${name} | ${median(s.cold).toFixed(3)} | ${median(s.warm).toFixed(3)} | ${s.nodes} | ${s.costPerHour.toFixed(2)} |`;
process.stdout.write(
  [
    `plain-requests, ${podsArg} pods, ${typeSet} types, ${pairs} runs each (median), core ${pinned ? cpu : 'any'}`,
    '',
    '| scheduler | cold solve (s) | warm solve (s) | nodes | $/h |',
    '|---|---:|---:|---:|---:|',
    row('Flotilla', flotilla),
    row('Karpenter v1.14.1', karpenter),
    '',
    'Cold: the first solve in a fresh process; warm: the third in it. A Karpenter solve builds the',
    'topology and the scheduler and solves, as its provisioner does for each batch.',
    '',
  ].join('\n'),
);
