import { computeAllocatable, type InstanceType } from '../../../shared/core/index.ts';
import { Random } from './random.ts';

// What one size loads, decided before anything is sent: the nodes (type, zone, capacity type), the
// workloads (ReplicaSets of Deployments, DaemonSets) and which node each pod runs on. Pure and
// seeded: the same size and seed give the same cluster.

/** A cluster size: nodes and pods (DaemonSet pods included). */
export interface ScaleSize {
  readonly nodes: number;
  readonly pods: number;
}

export function sizeLabel(size: ScaleSize): string {
  return `${size.nodes}x${size.pods}`;
}

/** `500x5000,2000x30000` → sizes. */
export function parseSizes(text: string): ScaleSize[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const match = /^(\d+)x(\d+)$/.exec(s);
      if (!match) throw new Error(`SCALE_SIZES: "${s}" is not <nodes>x<pods>, e.g. 500x5000`);
      const size = { nodes: Number(match[1]), pods: Number(match[2]) };
      if (size.pods < size.nodes * (DAEMONSETS.length + 1))
        throw new Error(
          `SCALE_SIZES: ${s} leaves fewer than one Deployment pod per node after ${DAEMONSETS.length} DaemonSet pods each`,
        );
      return size;
    });
}

/** What the loader needs to know of an instance type (from Flotilla's own offering cache). */
export interface NodeShape {
  readonly instanceType: string;
  /** Allocatable cpu (millicores), memory (bytes) and pods. */
  readonly cpuMillis: number;
  readonly memoryBytes: number;
  readonly maxPods: number;
}

export interface PlannedNode {
  readonly index: number;
  readonly shape: NodeShape;
  readonly zone: string;
  readonly capacityType: 'spot' | 'on-demand';
  /** The NodeClaim's name, as Flotilla names them (`<nodePool>-<10 hex>`). */
  readonly nodeClaimName: string;
  usedCpuMillis: number;
  usedMemoryBytes: number;
  pods: number;
}

export interface PlannedWorkload {
  readonly namespace: string;
  readonly team: string;
  /** The Deployment's name; its ReplicaSet is `<app>-<hash>`. */
  readonly app: string;
  readonly hash: string;
  readonly replicas: number;
  readonly cpuMillis: number;
  readonly memoryBytes: number;
  /** One PodDisruptionBudget per Deployment: maxUnavailable 1, or minAvailable 50%. */
  readonly pdb: { readonly maxUnavailable: number } | { readonly minAvailable: string };
  readonly seed: number;
}

export interface PlannedDaemonSet {
  readonly namespace: string;
  readonly name: string;
  readonly cpuMillis: number;
  readonly memoryBytes: number;
}

export interface PlannedPod {
  /** Index into `workloads`. */
  readonly workload: number;
  readonly name: string;
  /** Index into `nodes`. */
  readonly node: number;
}

export interface ClusterPlan {
  readonly size: ScaleSize;
  readonly nodes: readonly PlannedNode[];
  readonly namespaces: readonly string[];
  readonly workloads: readonly PlannedWorkload[];
  readonly daemonSets: readonly PlannedDaemonSet[];
  readonly pods: readonly PlannedPod[];
}

export const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'] as const;

/** Mostly a few instance types, as a real cluster's NodePool ends up with. */
export const NODE_MIX: readonly (readonly [string, number])[] = [
  ['m5.xlarge', 45],
  ['m5.2xlarge', 35],
  ['c6a.4xlarge', 20],
];

export const SPOT_SHARE = 0.3;

/** The shapes of NODE_MIX's types, from Flotilla's instance types (their allocatable). */
export function nodeShapes(types: ReadonlyMap<string, InstanceType>): Map<string, NodeShape> {
  const shapes = new Map<string, NodeShape>();
  for (const [name] of NODE_MIX) {
    const type = types.get(name);
    if (type === undefined) throw new Error(`${name} is not among the instance types offered`);
    const allocatable = computeAllocatable(type);
    shapes.set(name, {
      instanceType: name,
      cpuMillis: allocatable['cpu'] ?? 0,
      memoryBytes: allocatable['memory'] ?? 0,
      maxPods: allocatable['pods'] ?? 110,
    });
  }
  return shapes;
}

const TEAMS = [
  'payments',
  'checkout',
  'catalog',
  'search',
  'identity',
  'notifications',
  'ledger',
  'pricing',
  'shipping',
  'inventory',
  'reviews',
  'recommendations',
  'media',
  'analytics',
  'growth',
  'support',
  'platform',
  'risk',
  'loyalty',
  'partners',
];

const APP_WORDS = [
  'api',
  'worker',
  'gateway',
  'consumer',
  'scheduler',
  'indexer',
  'frontend',
  'backend',
  'sync',
  'exporter',
];

/** The DaemonSets whose pods run on every node (a CNI-like agent and a log shipper). */
export const DAEMONSETS: readonly PlannedDaemonSet[] = [
  { namespace: 'platform-system', name: 'node-network-agent', cpuMillis: 50, memoryBytes: 96 * 2 ** 20 },
  { namespace: 'platform-system', name: 'log-shipper', cpuMillis: 100, memoryBytes: 200 * 2 ** 20 },
];

/** Share of the nodes' allocatable cpu and memory the pods request. */
export const UTILISATION = { cpu: 0.72, memory: 0.62 };

export function planCluster(
  size: ScaleSize,
  shapes: ReadonlyMap<string, NodeShape>,
  seed: number,
): ClusterPlan {
  const random = new Random(seed);
  const nodes: PlannedNode[] = [];
  for (let index = 0; index < size.nodes; index += 1) {
    const type = random.weighted(NODE_MIX);
    const shape = shapes.get(type);
    if (shape === undefined) throw new Error(`instance type ${type} is not in the offering cache`);
    nodes.push({
      index,
      shape,
      zone: ZONES[index % ZONES.length] ?? 'us-east-1a',
      capacityType: random.next() < SPOT_SHARE ? 'spot' : 'on-demand',
      nodeClaimName: `default-${random.hex(10)}`,
      usedCpuMillis: 0,
      usedMemoryBytes: 0,
      pods: 0,
    });
  }
  for (const ds of DAEMONSETS) {
    for (const node of nodes) {
      node.usedCpuMillis += ds.cpuMillis;
      node.usedMemoryBytes += ds.memoryBytes;
      node.pods += 1;
    }
  }

  const namespaces = TEAMS.map((t) => `team-${t}`);
  const deploymentPods = size.pods - size.nodes * DAEMONSETS.length;
  const workloadCount = Math.max(1, Math.min(200, Math.floor(deploymentPods / 2)));
  // Replica counts skewed as in real clusters: a few large Deployments, many small ones.
  const weights = Array.from({ length: workloadCount }, (_, i) => 1 / (i + 1) ** 0.7);
  const weightSum = weights.reduce((a, b) => a + b, 0);
  const replicas = weights.map((w) => Math.max(1, Math.floor((w / weightSum) * deploymentPods)));
  let missing = deploymentPods - replicas.reduce((a, b) => a + b, 0);
  for (let i = 0; missing !== 0; i = (i + 1) % workloadCount) {
    const current = replicas[i] ?? 1;
    if (missing > 0) {
      replicas[i] = current + 1;
      missing -= 1;
    } else if (current > 1) {
      replicas[i] = current - 1;
      missing += 1;
    }
  }

  // Relative requests first, then scaled so that the pods fill the nodes to UTILISATION.
  const relative = replicas.map(() => ({
    cpu: random.weighted([
      [100, 20],
      [250, 30],
      [500, 25],
      [1000, 15],
      [2000, 10],
    ] as const),
    gibPerCpu: random.weighted([
      [1, 25],
      [2, 40],
      [4, 35],
    ] as const),
  }));
  const allocatable = nodes.reduce(
    (sum, n) => ({ cpu: sum.cpu + n.shape.cpuMillis, memory: sum.memory + n.shape.memoryBytes }),
    { cpu: 0, memory: 0 },
  );
  const daemon = nodes.reduce(
    (sum, n) => ({ cpu: sum.cpu + n.usedCpuMillis, memory: sum.memory + n.usedMemoryBytes }),
    {
      cpu: 0,
      memory: 0,
    },
  );
  const wantedCpu = relative.reduce((sum, r, i) => sum + r.cpu * (replicas[i] ?? 0), 0);
  const wantedMemory = relative.reduce((sum, r, i) => sum + r.cpu * r.gibPerCpu * (replicas[i] ?? 0), 0);
  const cpuScale = (allocatable.cpu * UTILISATION.cpu - daemon.cpu) / wantedCpu;
  const memoryScale = (allocatable.memory * UTILISATION.memory - daemon.memory) / wantedMemory;

  const usedNames = new Set<string>();
  const workloads: PlannedWorkload[] = replicas.map((count, i) => {
    const team = TEAMS[i % TEAMS.length] ?? 'platform';
    let app = `${team}-${random.pick(APP_WORDS)}`;
    for (let n = 2; usedNames.has(app); n += 1) app = `${team}-${random.pick(APP_WORDS)}-${n}`;
    usedNames.add(app);
    const r = relative[i] ?? { cpu: 250, gibPerCpu: 2 };
    return {
      namespace: `team-${team}`,
      team,
      app,
      hash: random.suffix(10),
      replicas: count,
      cpuMillis: Math.max(10, Math.round((r.cpu * cpuScale) / 10) * 10),
      memoryBytes: Math.max(32, Math.round((r.cpu * r.gibPerCpu * memoryScale) / 2 ** 20)) * 2 ** 20,
      pdb: random.next() < 0.6 ? { maxUnavailable: 1 } : { minAvailable: '50%' },
      seed: random.int(1, 2 ** 30),
    };
  });

  // Place the pods as a spreading scheduler would: biggest first, each on the least used node it fits.
  const todo: { workload: number; replica: number }[] = [];
  workloads.forEach((w, workload) => {
    for (let replica = 0; replica < w.replicas; replica += 1) todo.push({ workload, replica });
  });
  todo.sort(
    (a, b) =>
      (workloads[b.workload]?.cpuMillis ?? 0) - (workloads[a.workload]?.cpuMillis ?? 0) ||
      a.workload - b.workload ||
      a.replica - b.replica,
  );
  const pods: PlannedPod[] = [];
  const names = new Set<string>();
  for (const { workload } of todo) {
    const w = workloads[workload];
    if (w === undefined) continue;
    let best: PlannedNode | undefined;
    let bestScore = Number.POSITIVE_INFINITY;
    for (const node of nodes) {
      if (node.pods + 1 > node.shape.maxPods) continue;
      const cpu = node.usedCpuMillis + w.cpuMillis;
      const memory = node.usedMemoryBytes + w.memoryBytes;
      if (cpu > node.shape.cpuMillis * 0.97 || memory > node.shape.memoryBytes * 0.97) continue;
      const score = Math.max(cpu / node.shape.cpuMillis, memory / node.shape.memoryBytes);
      if (score < bestScore) {
        bestScore = score;
        best = node;
      }
    }
    if (best === undefined)
      throw new Error(
        `pod of ${w.app} (${w.cpuMillis}m, ${w.memoryBytes} B) fits no node: lower UTILISATION`,
      );
    best.usedCpuMillis += w.cpuMillis;
    best.usedMemoryBytes += w.memoryBytes;
    best.pods += 1;
    let name = `${w.app}-${w.hash}-${random.suffix(5)}`;
    while (names.has(name)) name = `${w.app}-${w.hash}-${random.suffix(5)}`;
    names.add(name);
    pods.push({ workload, name, node: best.index });
  }
  return { size, nodes, namespaces, workloads, daemonSets: DAEMONSETS, pods };
}

/** Requested share of allocatable over all nodes, for the report. */
export function planUtilisation(plan: ClusterPlan): { cpu: number; memory: number } {
  const sum = plan.nodes.reduce(
    (acc, n) => ({
      usedCpu: acc.usedCpu + n.usedCpuMillis,
      usedMemory: acc.usedMemory + n.usedMemoryBytes,
      cpu: acc.cpu + n.shape.cpuMillis,
      memory: acc.memory + n.shape.memoryBytes,
    }),
    { usedCpu: 0, usedMemory: 0, cpu: 0, memory: 0 },
  );
  return { cpu: sum.usedCpu / sum.cpu, memory: sum.usedMemory / sum.memory };
}
