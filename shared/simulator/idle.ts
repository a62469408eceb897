import type { SimPoolSample } from './record.ts';

// Idle capacity: what the running nodes cost that no pod requests. Pure: the sampler hands in
// what it sees of each node, the reports read the sums.

/** What one running instance offers and what the pods bound to it request. */
export interface NodeUse {
  readonly nodePool: string;
  readonly pricePerHour: number;
  /** Undefined while the node is not registered (booting): no pod can use it yet. */
  readonly allocatable?: { readonly cpuMillis: number; readonly memoryBytes: number };
  readonly requested: { readonly cpuMillis: number; readonly memoryBytes: number };
}

/** The share of a resource requested: 0 when nothing is allocatable and nothing requested. */
function usedShare(requested: number, allocatable: number): number {
  if (allocatable <= 0) return requested > 0 ? 1 : 0;
  return Math.min(1, requested / allocatable);
}

/**
 * The share of a node no pod requests: 1 − the busier of cpu and memory (requested ÷
 * allocatable, at most 1); 1 for a node not registered yet.
 */
export function idleShare(node: NodeUse): number {
  if (node.allocatable === undefined) return 1;
  const cpu = usedShare(node.requested.cpuMillis, node.allocatable.cpuMillis);
  const memory = usedShare(node.requested.memoryBytes, node.allocatable.memoryBytes);
  return 1 - Math.max(cpu, memory);
}

/** $/hour rounded as samples keep it (to 1/10,000 of a dollar). */
const roundUsd = (usd: number) => Math.round(usd * 10_000) / 10_000;

/** Per NodePool: nodes, cost, idle cost (SimPoolSample), requested and allocatable. */
export function poolSamples(nodes: readonly NodeUse[]): Record<string, SimPoolSample> {
  const pools = new Map<string, { -readonly [K in keyof SimPoolSample]: number }>();
  for (const node of nodes) {
    let pool = pools.get(node.nodePool);
    if (pool === undefined) {
      pool = {
        nodes: 0,
        costPerHour: 0,
        idleCostPerHour: 0,
        cpuMillisRequested: 0,
        cpuMillisAllocatable: 0,
        memoryBytesRequested: 0,
        memoryBytesAllocatable: 0,
      };
      pools.set(node.nodePool, pool);
    }
    pool.nodes += 1;
    pool.costPerHour += node.pricePerHour;
    pool.idleCostPerHour += node.pricePerHour * idleShare(node);
    if (node.allocatable !== undefined) {
      pool.cpuMillisRequested += node.requested.cpuMillis;
      pool.memoryBytesRequested += node.requested.memoryBytes;
      pool.cpuMillisAllocatable += node.allocatable.cpuMillis;
      pool.memoryBytesAllocatable += node.allocatable.memoryBytes;
    }
  }
  const out: Record<string, SimPoolSample> = {};
  for (const name of [...pools.keys()].sort()) {
    const pool = pools.get(name);
    if (pool === undefined) continue;
    out[name] = {
      ...pool,
      costPerHour: roundUsd(pool.costPerHour),
      idleCostPerHour: roundUsd(pool.idleCostPerHour),
    };
  }
  return out;
}
