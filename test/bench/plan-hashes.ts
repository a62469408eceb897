// The plans solve() makes, one hash per input, to show a change to the scheduler keeps every plan.
// Usage: tsx test/bench/plan-hashes.ts > hashes.json in each checkout, then compare the files.
// Inputs: both scheduling-bench mixes at 100, 1,000, 2,000 and 5,000 pods over 400 types and the
// whole catalog, and 200 random plain inputs (1–30 request shapes, up to 600 pods, a zone selector
// on some pods, random subsets of the catalog, some with existing nodes, a cpu limit, or the
// re-packing pass off), and 100 random inputs with minValues requirements (below). Deterministic;
// no timings.
import { createHash } from 'node:crypto';
import { Label, type Pod, parseResourceList, type SolveInput, solve } from '../../shared/core/index.ts';
import { benchInput, loadInstanceTypes, rng } from './workloads.ts';

const out: Record<string, string> = {};
const hash = (x: unknown): string =>
  createHash('sha1')
    .update(JSON.stringify(x, (_k, v: unknown) => (v instanceof Map ? [...v] : v)))
    .digest('hex');
const typeSets = [
  ['400', loadInstanceTypes('400')],
  ['catalog', loadInstanceTypes('catalog')],
] as const;
for (const [name, types] of typeSets) {
  for (const pods of [100, 1000, 2000, 5000]) {
    for (const mix of ['plain-requests', 'diverse'] as const) {
      out[`${mix}:${pods}:${name}`] = hash(solve(benchInput(mix, pods, types)));
    }
  }
}
const catalog = typeSets[1][1];
const rand = rng(42);
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const quantities = (cpu: string, memory: string, pods?: string) =>
  parseResourceList(
    { cpu, memory, ...(pods === undefined ? {} : { pods }) },
    { object: 'bench', field: 'requests' },
  );
/** A pending pod of the random inputs, labelled as one of `apps` apps; `extra` adds its constraints. */
const randomPod = (
  uid: string,
  i: number,
  apps: number,
  cpu: string,
  memory: string,
  extra: Partial<Pod>,
): Pod => ({
  uid,
  name: `p${i}`,
  namespace: 'default',
  createdAtMs: i,
  labels: { app: `a${i % apps}` },
  ...extra,
  containers: [{ name: 'c', requests: quantities(cpu, memory) }],
});
/** The plan's hash under `key`, or the error solve() threw. */
const record = (key: string, input: SolveInput): void => {
  try {
    out[key] = hash(solve(input));
  } catch (error) {
    out[key] = `error: ${(error as Error).message}`;
  }
};
for (let k = 0; k < 200; k++) {
  const shapeCount = 1 + Math.floor(rand() * 30);
  const shapes = Array.from({ length: shapeCount }, () => [
    `${50 + Math.floor(rand() * 4000)}m`,
    `${64 + Math.floor(rand() * 16000)}Mi`,
  ]);
  const podCount = 1 + Math.floor(rand() * 600);
  const subset = catalog.filter(() => rand() < 0.3);
  const pods: Pod[] = Array.from({ length: podCount }, (_, i) => {
    const [cpu, memory] = shapes[Math.floor(rand() * shapeCount)] as [string, string];
    const zone = rand() < 0.15 ? ZONES[Math.floor(rand() * 3)] : undefined;
    return randomPod(
      `r${k}-${i}`,
      i,
      7,
      cpu,
      memory,
      zone === undefined ? {} : { nodeSelector: { [Label.zone]: zone } },
    );
  });
  const nodes =
    rand() < 0.3
      ? Array.from({ length: 1 + Math.floor(rand() * 20) }, (_, i) => ({
          name: `n${i}`,
          nodePoolName: 'default',
          initialized: true,
          pods: [],
          labels: {
            [Label.zone]: ZONES[i % 3] as string,
            [Label.hostname]: `n${i}`,
            [Label.capacityType]: 'on-demand',
            [Label.nodePool]: 'default',
          },
          allocatable: quantities(`${1 + Math.floor(rand() * 8)}`, `${1 + Math.floor(rand() * 16)}Gi`, '110'),
        }))
      : [];
  const limited = rand() < 0.2;
  const input: SolveInput = {
    pods,
    nodes,
    nodePools: [
      {
        name: 'default',
        nodeClassName: 'default',
        requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
        ...(limited ? { limits: { cpu: (20 + Math.floor(rand() * 200)) * 1000 } } : {}),
      },
    ],
    instanceTypes: new Map([['default', subset.length > 0 ? subset : catalog]]),
    nowMs: 1_700_000_000_000 + k,
    ...(rand() < 0.2 ? { options: { repack: false } } : {}),
  };
  record(`random:${k}`, input);
}
// 100 random inputs with minValues: large pods beside small pods whose required node affinity asks
// for distinct instance families, instance types or hostnames, a NodePool that may ask the same,
// few candidates per NodeClaim (maxInstanceTypes 2–10), either minValues policy, on half the inputs
// only types of up to 4 vCPUs, and on half instance types labelled with a few hostnames, so a
// minValues on hostname has values to count. Claims that share a candidate list but differ in such
// requirements must keep their own candidates.
const randMin = rng(4242);
const MIN_KEYS = [Label.instanceFamily, Label.instanceType, Label.hostname] as const;
const minValuesTerm = () => {
  const key = MIN_KEYS[Math.floor(randMin() * MIN_KEYS.length)] as string;
  return { key, operator: 'Exists' as const, minValues: 1 + Math.floor(randMin() * 3) };
};
for (let k = 0; k < 100; k++) {
  const hostLabelled = randMin() < 0.5;
  // Half the inputs offer only types of up to 4 vCPUs, so large pods open a claim each.
  const small = randMin() < 0.5;
  const subset = catalog
    .filter((t) => (!small || (t.capacity['cpu'] ?? 0) <= 4000) && randMin() < 0.15)
    .map((t, i) => (hostLabelled ? { ...t, labels: { ...t.labels, [Label.hostname]: `h${i % 3}` } } : t));
  // The first shape is large and asks nothing; the rest are small, half of them with a minValues.
  const shapeCount = 2 + Math.floor(randMin() * 5);
  const shapes = Array.from({ length: shapeCount }, (_, i) => ({
    cpu: `${i === 0 ? 1500 + Math.floor(randMin() * 2000) : 100 + Math.floor(randMin() * 400)}m`,
    memory: `${128 + Math.floor(randMin() * (i === 0 ? 6000 : 1000))}Mi`,
    term: i > 0 && randMin() < 0.5 ? [minValuesTerm()] : undefined,
  }));
  const pods: Pod[] = Array.from({ length: 2 + Math.floor(randMin() * 40) }, (_, i) => {
    const shape = shapes[Math.floor(randMin() * shapeCount)] as (typeof shapes)[number];
    return randomPod(
      `m${k}-${i}`,
      i,
      3,
      shape.cpu,
      shape.memory,
      shape.term === undefined
        ? {}
        : {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: shape.term }],
                },
              },
            },
          },
    );
  });
  const poolMin = randMin() < 0.3 ? [minValuesTerm()] : [];
  const input: SolveInput = {
    pods,
    nodePools: [
      {
        name: 'default',
        nodeClassName: 'default',
        requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }, ...poolMin],
        ...(randMin() < 0.3 ? { limits: { cpu: (10 + Math.floor(randMin() * 100)) * 1000 } } : {}),
      },
    ],
    instanceTypes: new Map([['default', subset.length > 0 ? subset : catalog]]),
    nowMs: 1_700_000_000_000 + k,
    options: {
      maxInstanceTypes: 2 + Math.floor(randMin() * 9),
      minValuesPolicy: randMin() < 0.5 ? 'Strict' : 'BestEffort',
      ...(randMin() < 0.3 ? { repack: false } : {}),
    },
  };
  record(`minValues:${k}`, input);
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
