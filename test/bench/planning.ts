// Planning cost cases: `npm run bench:planning` (and `npm run bench` with no cases named). Each
// case is a workload whose cheapest plan a hand calculation gives; the table puts next to it the
// $/hour Flotilla plans (`solve()`) or launches for the pending pods (`simulate()`: the launches
// the provisioner made for pods, at their offering prices; consolidation's replacements are not
// counted). Limits: NodePools whose limits the cheapest plan does not exceed. Spot fallback and
// nodes on their way: examples/spot-fallback.yaml, and examples/gpu-jobs.yaml up to 9 minutes (the
// first wave of inference pods then runs on the nodes launched for it).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type CatalogInstanceType,
  type ExistingNode,
  type InstanceType,
  instanceTypesFromCatalog,
  Label,
  type NodePool,
  type Pod,
  parseResourceList,
  type SolveResult,
  solve,
} from '../../shared/core/index.ts';
import { simulate } from '../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../shared/simulator/record.ts';
import { parseScenario } from '../../shared/simulator/scenario.ts';

const catalog = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../shared/catalog/instance-types.json', import.meta.url)), 'utf8'),
) as CatalogInstanceType[];

function types(family: string): InstanceType[] {
  return instanceTypesFromCatalog(
    catalog.filter((r) => r.family === family),
    { region: 'us-east-1', zones: ['us-east-1a', 'us-east-1b', 'us-east-1c'], capacityTypes: ['on-demand'] },
  );
}

function pods(
  count: number,
  name: string,
  requests: Record<string, string>,
  extra: Partial<Pod> = {},
): Pod[] {
  return Array.from({ length: count }, (_, i) => ({
    uid: `uid-${name}-${i}`,
    name: `${name}-${i}`,
    namespace: 'default',
    createdAtMs: i,
    labels: { app: name },
    containers: [
      { name: 'main', requests: parseResourceList(requests, { object: name, field: 'requests' }) },
    ],
    ...extra,
  }));
}

function pool(limits: Record<string, string>): NodePool {
  return {
    name: 'default',
    nodeClassName: 'default',
    requirements: [],
    limits: parseResourceList(limits, { object: 'nodePool', field: 'spec.limits' }),
  };
}

interface Row {
  readonly name: string;
  readonly workload: string;
  readonly hand: string;
  readonly handPerHour: number;
  readonly perHour: number;
  readonly nodes: string;
  readonly unscheduled: number;
}

function byType(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([n, c]) => `${c} × ${n}`)
    .join(' + ');
}

function solved(name: string, workload: string, hand: string, handPerHour: number, result: SolveResult): Row {
  return {
    name,
    workload,
    hand,
    handPerHour,
    perHour: result.nodeClaims.reduce((s, c) => s + (c.instanceTypes[0]?.priceUsdPerHour ?? 0), 0),
    nodes: byType(result.nodeClaims.map((c) => c.instanceTypes[0]?.name ?? '?')),
    unscheduled: result.unschedulable.length,
  };
}

const g6 = types('g6');
const gpuPods = (n: number) => pods(n, 'infer', { cpu: '2', memory: '8Gi', 'nvidia.com/gpu': '1' });
const gpuNode: ExistingNode = {
  name: 'gpu-in-use',
  nodePoolName: 'default',
  labels: { [Label.hostname]: 'gpu-in-use', [Label.nodePool]: 'default' },
  allocatable: parseResourceList({ cpu: '47', memory: '180Gi', pods: '110' }, { object: 'n', field: 'a' }),
  capacity: parseResourceList({ cpu: '48', 'nvidia.com/gpu': '8' }, { object: 'n', field: 'c' }),
  pods: [],
  initialized: true,
};
const apart = {
  podAntiAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [
      { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: 'apart' } } },
    ],
  },
};
const input = (
  t: readonly InstanceType[],
  p: NodePool,
  ps: readonly Pod[],
  nodes: readonly ExistingNode[] = [],
) => ({
  pods: ps,
  nodePools: [p],
  instanceTypes: new Map([['default', t]]),
  nodes,
  nowMs: 1_700_000_000_000,
});

const rows: Row[] = [
  solved(
    'limit-gpu-in-use',
    '8 × 1-GPU pods, g6, limit 16 GPUs with 8 in use',
    '8 × g6.xlarge',
    8 * 0.8048,
    solve(input(g6, pool({ 'nvidia.com/gpu': '16' }), gpuPods(8), [gpuNode])),
  ),
  solved(
    'limit-gpu',
    '6 × 1-GPU pods, g6, limit 16 GPUs',
    '6 × g6.xlarge',
    6 * 0.8048,
    solve(input(g6, pool({ 'nvidia.com/gpu': '16' }), gpuPods(6))),
  ),
  solved(
    'limit-cpu-one-per-node',
    '10 × 1-cpu pods one per node, c6a, limit 20 cpu',
    '10 × c6a.large',
    10 * 0.0765,
    solve(
      input(
        types('c6a'),
        pool({ cpu: '20' }),
        pods(10, 'apart', { cpu: '1', memory: '1Gi' }, { affinity: apart }),
      ),
    ),
  ),
];

const examples = fileURLToPath(new URL('../../examples', import.meta.url));
async function example(file: string, duration?: string): Promise<SimulationRecord> {
  const text = readFileSync(path.join(examples, file), 'utf8');
  return simulate(
    parseScenario(duration === undefined ? text : text.replace(/^duration: .*$/m, `duration: ${duration}`)),
  );
}
/** What the provisioner launched for pending pods (not consolidation's replacements), by the launch prices. */
function simulated(
  name: string,
  workload: string,
  hand: string,
  handPerHour: number,
  r: SimulationRecord,
  pool?: string,
): Row {
  const forPods = new Set(
    r.decisions
      .filter((d) => d['decision'] === 'launch' && d['reason'] === 'provisioning')
      .map((d) => String(d['nodeClaim'])),
  );
  const launched = r.launches.filter(
    (l) => forPods.has(l.nodeClaim) && (pool === undefined || l.nodePool === pool),
  );
  return {
    name,
    workload,
    hand,
    handPerHour,
    perHour: launched.reduce((s, l) => s + l.pricePerHour, 0),
    nodes: byType(launched.map((l) => `${l.instanceType} ${l.capacityType}`)),
    unscheduled: r.samples.at(-1)?.pendingPods ?? 0,
  };
}
rows.push(
  simulated(
    'spot-fallback (sim)',
    '10 × 1-cpu pods, c6a spot or on-demand, no spot capacity',
    'c6a.2xlarge + c6a.xlarge on-demand',
    0.306 + 0.153,
    await example('spot-fallback.yaml'),
  ),
  simulated(
    'gpu-jobs to 9m (sim), gpu pool',
    '2 × 4-GPU + 6 × 1-GPU pods (preferred apart), limit 24 GPUs, 90 s boots',
    '2 × g6.12xlarge + 6 × g6.xlarge',
    2 * 4.6016 + 6 * 0.8048,
    await example('gpu-jobs.yaml', '9m'),
    'gpu',
  ),
);

console.log(
  '| case | workload | hand calculation | $/h by hand | $/h planned or launched | × hand | nodes | pods left |',
);
console.log('|---|---|---|---:|---:|---:|---|---:|');
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.workload} | ${r.hand} | ${r.handPerHour.toFixed(4)} | ${r.perHour.toFixed(4)} | ${(r.perHour / r.handPerHour).toFixed(3)} | ${r.nodes} | ${r.unscheduled} |`,
  );
}
