import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type CatalogInstanceType,
  computeAllocatable,
  computePodRequests,
  type InstanceType,
  instanceTypesFromCatalog,
  Label,
  type Pod,
  parseResourceList,
  type SolveInput,
  type TopologySpreadConstraint,
} from '../../shared/core/index.ts';

export type Mix = 'diverse' | 'plain-requests';
export type TypeSet = '400' | 'catalog';

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function loadInstanceTypes(set: TypeSet): InstanceType[] {
  const path = fileURLToPath(new URL('../../shared/catalog/instance-types.json', import.meta.url));
  const records = JSON.parse(readFileSync(path, 'utf8')) as CatalogInstanceType[];
  const sorted = [...records].sort((a, b) => (a.name < b.name ? -1 : 1));
  // 400 types spread evenly over the name-sorted catalog (every family and size range appears).
  const chosen =
    set === 'catalog'
      ? sorted
      : Array.from(
          { length: 400 },
          (_, i) => sorted[Math.floor((i * sorted.length) / 400)] as CatalogInstanceType,
        );
  return instanceTypesFromCatalog(chosen, {
    region: 'us-east-1',
    zones: ZONES,
    capacityTypes: ['on-demand'],
  });
}

let counter = 0;

function makePod(
  name: string,
  cpu: string,
  memory: string,
  extra: Partial<Pick<Pod, 'labels' | 'affinity' | 'topologySpreadConstraints'>> = {},
): Pod {
  counter += 1;
  const requests = parseResourceList({ cpu, memory }, { object: name, field: 'requests' });
  return {
    uid: `uid-${counter}`,
    name,
    namespace: 'default',
    createdAtMs: counter,
    labels: extra.labels ?? {},
    containers: [{ name: 'app', requests }],
    ...(extra.affinity === undefined ? {} : { affinity: extra.affinity }),
    ...(extra.topologySpreadConstraints === undefined
      ? {}
      : { topologySpreadConstraints: extra.topologySpreadConstraints }),
  };
}

const DIVERSE_CPU = ['100m', '250m', '500m', '1', '1500m'];
const DIVERSE_MEM = ['100Mi', '256Mi', '512Mi', '1Gi', '2Gi', '4Gi'];

/**
 * Shaped like Karpenter's scheduling benchmark: a fifth each of plain pods, zonal topology
 * spread, hostname topology spread, zonal pod affinity and hostname pod anti-affinity (all
 * anti-affinity pods repel each other, so each needs its own node).
 */
export function diversePods(count: number, seed = 1): Pod[] {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out: Pod[] = [];
  const fifth = Math.floor(count / 5);
  const spread = (key: string, app: string): TopologySpreadConstraint[] => [
    {
      maxSkew: 1,
      topologyKey: key,
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { app } },
    },
  ];
  for (let i = 0; i < count; i++) {
    const kind = Math.min(4, Math.floor(i / Math.max(1, fifth)));
    const cpu = pick(DIVERSE_CPU);
    const mem = pick(DIVERSE_MEM);
    const name = `diverse-${i}`;
    switch (kind) {
      case 0:
        out.push(makePod(name, cpu, mem, { labels: { app: `generic-${i % 10}` } }));
        break;
      case 1: {
        const app = `zone-spread-${i % 10}`;
        out.push(
          makePod(name, cpu, mem, { labels: { app }, topologySpreadConstraints: spread(Label.zone, app) }),
        );
        break;
      }
      case 2: {
        const app = `host-spread-${i % 10}`;
        out.push(
          makePod(name, cpu, mem, {
            labels: { app },
            topologySpreadConstraints: spread(Label.hostname, app),
          }),
        );
        break;
      }
      case 3: {
        const app = `zone-affinity-${i % 10}`;
        out.push(
          makePod(name, cpu, mem, {
            labels: { app },
            affinity: {
              podAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { topologyKey: Label.zone, labelSelector: { matchLabels: { app } } },
                ],
              },
            },
          }),
        );
        break;
      }
      default:
        out.push(
          makePod(name, cpu, mem, {
            labels: { app: 'anti' },
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: 'anti' } } },
                ],
              },
            },
          }),
        );
    }
  }
  return out;
}

/** The plain-requests mix: cpu and memory requests, drawn uniformly. */
export const PLAIN_SHAPES: readonly [string, string][] = [
  ['250m', '512Mi'],
  ['500m', '1Gi'],
  ['500m', '4Gi'],
  ['1', '1Gi'],
  ['1', '2Gi'],
  ['1', '8Gi'],
  ['2', '2Gi'],
  ['2', '4Gi'],
  ['2', '16Gi'],
  ['4', '4Gi'],
  ['4', '8Gi'],
  ['3500m', '28Gi'],
  ['900m', '3100Mi'],
];

/** Pods of assorted cpu/memory shapes and no placement constraints. */
export function plainPods(count: number, seed = 2): Pod[] {
  const rand = rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const [cpu, mem] = PLAIN_SHAPES[Math.floor(rand() * PLAIN_SHAPES.length)] as [string, string];
    return makePod(`plain-${i}`, cpu, mem, { labels: { app: `plain-${i % 20}` } });
  });
}

export function benchInput(mix: Mix, pods: number, types: readonly InstanceType[]): SolveInput {
  return {
    pods: mix === 'diverse' ? diversePods(pods) : plainPods(pods),
    nodePools: [
      {
        name: 'default',
        nodeClassName: 'default',
        requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
        limits: { cpu: 10_000_000 * 1000, memory: 10_000_000 * 1024 ** 3 },
      },
    ],
    instanceTypes: new Map([['default', types]]),
    nowMs: 1_700_000_000_000,
  };
}

/** LP inputs: total pod demand and, per type, allocatable and cheapest on-demand price. */
export function lpInputs(input: SolveInput): {
  demand: number[];
  shapes: { count: number; req: number[] }[];
  types: { alloc: number[]; price: number }[];
} {
  const demand = [0, 0, 0];
  const shapes = new Map<string, { count: number; req: number[] }>();
  for (const p of input.pods) {
    const r = computePodRequests(p);
    const req = [r['cpu'] ?? 0, r['memory'] ?? 0, r['pods'] ?? 0];
    demand[0] = (demand[0] ?? 0) + (req[0] ?? 0);
    demand[1] = (demand[1] ?? 0) + (req[1] ?? 0);
    demand[2] = (demand[2] ?? 0) + (req[2] ?? 0);
    const key = req.join('/');
    const shape = shapes.get(key) ?? { count: 0, req };
    shape.count += 1;
    shapes.set(key, shape);
  }
  const types = [...input.instanceTypes.values()].flat().map((t) => {
    const a = computeAllocatable(t);
    const price = Math.min(
      ...t.offerings
        .filter((o) => o.available && o.capacityType === 'on-demand')
        .map((o) => o.priceUsdPerHour),
    );
    return { alloc: [a['cpu'] ?? 0, a['memory'] ?? 0, a['pods'] ?? 0], price };
  });
  // Memory in MiB keeps the LP well scaled.
  const scale = (v: number[]) => [v[0] ?? 0, (v[1] ?? 0) / 2 ** 20, v[2] ?? 0];
  return {
    demand: scale(demand),
    shapes: [...shapes.values()].map((s) => ({ count: s.count, req: scale(s.req) })),
    types: types
      .filter((t) => Number.isFinite(t.price))
      .map((t) => ({ alloc: scale(t.alloc), price: t.price })),
  };
}
