import { type BudgetHold, budgetHolds, type NodeHold, nodeHolds } from './holds.ts';
import type { SimulationRecord } from './record.ts';
import { type RolloutHold, rolloutHolds } from './rollout-holds.ts';
import { DISRUPTION_REASONS, type DisruptionRowReason, formatRunTime, formatUsd } from './stats.ts';

// The report's breakdowns: idle capacity over the run, pod evictions by reason, and each NodePool
// on its own. Read from the samples and the decisions the simulator keeps. Pure and deterministic.

/** What the nodes cost that no pod requests (SimPoolSample.idleCostPerHour), over the run. */
export interface IdleStats {
  /** Idle $/hour averaged over the samples (each sample weighs the same, as the cost's average). */
  readonly avgPerHour: number;
  readonly maxPerHour: number;
  /** The first sample at the peak. */
  readonly maxAtMs: number;
  /** Σ idle $/hour ÷ Σ $/hour over the samples: the share of the spend no pod asked for. */
  readonly share: number;
  /** Dollars spent on idle capacity: each sample's idle $/hour until the next (as CostStats.totalUsd). */
  readonly totalUsd: number;
}

const idleOf = (s: SimulationRecord['samples'][number]) => s.idleCostPerHour ?? 0;

/** Undefined for a record whose samples carry no idle figures (older records) or no samples. */
export function computeIdle(record: SimulationRecord): IdleStats | undefined {
  const samples = record.samples;
  if (samples.length === 0 || samples.every((s) => s.idleCostPerHour === undefined)) return undefined;
  const endMs = Math.max(
    samples[samples.length - 1]?.atMs ?? 0,
    record.scenario.startMs + record.scenario.durationMs,
  );
  let sum = 0;
  let cost = 0;
  let max = Number.NEGATIVE_INFINITY;
  let maxAtMs = samples[0]?.atMs ?? 0;
  let totalUsd = 0;
  samples.forEach((s, i) => {
    const idle = idleOf(s);
    sum += idle;
    cost += s.costPerHour;
    if (idle > max) {
      max = idle;
      maxAtMs = s.atMs;
    }
    totalUsd += (idle * Math.max(0, (samples[i + 1]?.atMs ?? endMs) - s.atMs)) / 3_600_000;
  });
  return {
    avgPerHour: sum / samples.length,
    maxPerHour: max,
    maxAtMs,
    share: cost === 0 ? 0 : sum / cost,
    totalUsd,
  };
}

/** Pods evicted (or deleted past their termination deadline) by the drains of one reason and method. */
export interface EvictionRow {
  /** Why the NodeClaim terminated (its DisruptionReason condition, e.g. `Underutilized`, `SpotInterruption`), else `deleted`. */
  readonly reason: string;
  /** The disruption command's method (`emptiness`, `single-node`, …) when one took the node, else `-`. */
  readonly method: string;
  readonly evicted: number;
  /** Pods deleted once the termination grace period ran out. */
  readonly forceDeleted: number;
  /** Nodes drained. */
  readonly nodes: number;
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

/** One drain step's pods, with when and why. */
interface EvictionEvent {
  readonly atMs: number;
  readonly reason: string;
  readonly method: string;
  readonly nodeClaim: string;
  readonly evicted: number;
  readonly forceDeleted: number;
}

const str = (value: unknown) => (typeof value === 'string' ? value : '');
const num = (value: unknown) => (typeof value === 'number' ? value : 0);

function evictionEvents(record: SimulationRecord): EvictionEvent[] {
  const methods = new Map<string, string>();
  for (const d of record.decisions) {
    if (d['decision'] !== 'disrupt') continue;
    for (const c of Array.isArray(d['candidates']) ? (d['candidates'] as unknown[]) : []) {
      const nodeClaim = str((c as { nodeClaim?: unknown } | null)?.nodeClaim);
      if (!methods.has(nodeClaim)) methods.set(nodeClaim, str(d['method']));
    }
  }
  return record.decisions.flatMap((d) => {
    if (d['decision'] !== 'drain') return [];
    const evicted = d['action'] === 'evict' ? num(d['evicted']) : 0;
    const forceDeleted = d['action'] === 'forceDelete' ? num(d['podCount']) : 0;
    if (evicted + forceDeleted === 0) return [];
    const nodeClaim = str(d['nodeClaim']);
    return [
      {
        atMs: num(d['atMs']),
        reason: str(d['reason']) || 'deleted',
        method: methods.get(nodeClaim) || '-',
        nodeClaim,
        evicted,
        forceDeleted,
      },
    ];
  });
}

/** Evictions by reason and method, most pods first. */
export function evictionRows(record: SimulationRecord): EvictionRow[] {
  const rows = new Map<string, EvictionRow & { claims: Set<string> }>();
  for (const e of evictionEvents(record)) {
    const key = `${e.reason}\n${e.method}`;
    const row = rows.get(key) ?? {
      reason: e.reason,
      method: e.method,
      evicted: 0,
      forceDeleted: 0,
      nodes: 0,
      firstAtMs: e.atMs,
      lastAtMs: e.atMs,
      claims: new Set<string>(),
    };
    row.claims.add(e.nodeClaim);
    rows.set(key, {
      ...row,
      evicted: row.evicted + e.evicted,
      forceDeleted: row.forceDeleted + e.forceDeleted,
      nodes: row.claims.size,
      firstAtMs: Math.min(row.firstAtMs, e.atMs),
      lastAtMs: Math.max(row.lastAtMs, e.atMs),
    });
  }
  return [...rows.values()]
    .map(({ claims: _, ...row }) => row)
    .sort(
      (a, b) =>
        b.evicted + b.forceDeleted - (a.evicted + a.forceDeleted) ||
        (`${a.reason} ${a.method}` < `${b.reason} ${b.method}` ? -1 : 1),
    );
}

/** For each eviction reason, the pods evicted up to each sample's time: one value per sample. */
export function evictionSeries(record: SimulationRecord): { reason: string; values: number[] }[] {
  const events = evictionEvents(record);
  const reasons = [...new Set(events.map((e) => e.reason))].sort();
  return reasons.map((reason) => {
    const mine = events.filter((e) => e.reason === reason).sort((a, b) => a.atMs - b.atMs);
    let seen = 0;
    let pods = 0;
    return {
      reason,
      values: record.samples.map((s) => {
        for (let e = mine[seen]; e !== undefined && e.atMs <= s.atMs; e = mine[++seen]) {
          pods += e.evicted + e.forceDeleted;
        }
        return pods;
      }),
    };
  });
}

/** One NodePool over the run. */
export interface PoolRow {
  readonly nodePool: string;
  readonly launches: number;
  /** Launch decisions for it that did not launch (insufficient capacity, failed, fenced). */
  readonly failedLaunches: number;
  /** Pods its provisioning launches were for (each NodeClaim's pods counted once). */
  readonly podsLaunchedFor: number;
  /** Pods still pending at the end whose scheduling reasons name it (it was tried or skipped). */
  readonly podsLeftPending: number;
  readonly peakNodes: number;
  /** $/hour: averaged over the samples, and the highest. */
  readonly avgCostPerHour: number;
  readonly peakCostPerHour: number;
  readonly avgIdleCostPerHour: number;
  /** Its nodes disrupted, by reason (DISRUPTION_REASONS order, reasons that occurred). */
  readonly disruptions: readonly { readonly reason: DisruptionRowReason; readonly count: number }[];
}

/** The NodePools a pending pod's reasons name: `nodePool <name>: …` or `nodePool <name> skipped: …`. */
export function poolsNamed(reasons: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const reason of reasons) {
    for (const match of reason.matchAll(/(?:^|; )nodePool (\S+?)(?: skipped)?:/g)) {
      if (match[1] !== undefined) out.add(match[1]);
    }
  }
  return out;
}

/** Each NodePool that launched, was sampled, decided about or named by a pending pod, by name. */
export function poolRows(record: SimulationRecord): PoolRow[] {
  const poolOf = new Map(record.launches.map((l) => [l.nodeClaim, l.nodePool]));
  const names = new Set<string>(record.launches.map((l) => l.nodePool));
  for (const s of record.samples) for (const name of Object.keys(s.nodePools ?? {})) names.add(name);
  const launchDecisions = record.decisions.filter((d) => d['decision'] === 'launch');
  for (const d of launchDecisions) names.add(str(d['nodePool']));
  const pendingNamed = record.unschedulable.map((p) => poolsNamed(p.reasons));
  for (const named of pendingNamed) for (const name of named) names.add(name);
  names.delete('');
  const n = Math.max(1, record.samples.length);
  return [...names].sort().map((nodePool) => {
    const samples = record.samples.map((s) => s.nodePools?.[nodePool]);
    const podsFor = new Map<string, number>();
    let failed = 0;
    for (const d of launchDecisions) {
      if (str(d['nodePool']) !== nodePool) continue;
      if (d['outcome'] !== 'launched') failed += 1;
      if (d['reason'] === 'provisioning' && !podsFor.has(str(d['nodeClaim']))) {
        podsFor.set(str(d['nodeClaim']), num(d['podCount']));
      }
    }
    const disrupted = new Map<DisruptionRowReason, number>();
    const count = (reason: DisruptionRowReason) => disrupted.set(reason, (disrupted.get(reason) ?? 0) + 1);
    for (const d of record.disruptions) if (poolOf.get(d.nodeClaim) === nodePool) count(d.reason);
    for (const i of record.interruptions) {
      if (i.kind !== 'rebalance' && i.nodeClaim !== undefined && poolOf.get(i.nodeClaim) === nodePool) {
        count('Interrupted');
      }
    }
    return {
      nodePool,
      launches: record.launches.filter((l) => l.nodePool === nodePool).length,
      failedLaunches: failed,
      podsLaunchedFor: [...podsFor.values()].reduce((sum, v) => sum + v, 0),
      podsLeftPending: pendingNamed.filter((named) => named.has(nodePool)).length,
      peakNodes: samples.reduce((max, s) => Math.max(max, s?.nodes ?? 0), 0),
      avgCostPerHour: samples.reduce((sum, s) => sum + (s?.costPerHour ?? 0), 0) / n,
      peakCostPerHour: samples.reduce((max, s) => Math.max(max, s?.costPerHour ?? 0), 0),
      avgIdleCostPerHour: samples.reduce((sum, s) => sum + (s?.idleCostPerHour ?? 0), 0) / n,
      disruptions: DISRUPTION_REASONS.flatMap((reason) => {
        const c = disrupted.get(reason);
        return c === undefined ? [] : [{ reason, count: c }];
      }),
    };
  });
}

/** Everything the reports show beyond ReportStats. */
export interface ReportDetails {
  readonly idle: IdleStats | undefined;
  readonly evictions: readonly EvictionRow[];
  readonly evictedPods: number;
  readonly pools: readonly PoolRow[];
  readonly budgetHolds: readonly BudgetHold[];
  readonly nodeHolds: readonly NodeHold[];
  readonly rolloutHolds: readonly RolloutHold[];
}

export function computeReportDetails(record: SimulationRecord): ReportDetails {
  const evictions = evictionRows(record);
  return {
    idle: computeIdle(record),
    evictions,
    evictedPods: evictions.reduce((sum, r) => sum + r.evicted + r.forceDeleted, 0),
    pools: poolRows(record),
    budgetHolds: budgetHolds(record),
    nodeHolds: nodeHolds(record),
    rolloutHolds: rolloutHolds(record),
  };
}

/** A table both reports draw: its header and its rows of cells. */
export interface TableCells {
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

/** The NodePool breakdown as cells. */
export function poolCells(pools: readonly PoolRow[]): TableCells {
  return {
    headers: [
      'nodepool',
      'launches',
      'failed',
      'pods launched for',
      'pods left pending',
      'peak nodes',
      'avg $/hour',
      'peak $/hour',
      'idle $/hour',
      'disrupted',
    ],
    rows: pools.map((p) => [
      p.nodePool,
      String(p.launches),
      String(p.failedLaunches),
      String(p.podsLaunchedFor),
      String(p.podsLeftPending),
      String(p.peakNodes),
      formatUsd(p.avgCostPerHour),
      formatUsd(p.peakCostPerHour),
      formatUsd(p.avgIdleCostPerHour),
      p.disruptions.length === 0 ? 'none' : p.disruptions.map((d) => `${d.reason} ${d.count}`).join(', '),
    ]),
  };
}

/** The evictions as cells, times in UTC. */
export function evictionCells(record: SimulationRecord, rows: readonly EvictionRow[]): TableCells {
  return {
    headers: ['reason', 'method', 'evicted', 'force-deleted', 'nodes', 'first', 'last'],
    rows: rows.map((r) => [
      r.reason,
      r.method,
      String(r.evicted),
      String(r.forceDeleted),
      String(r.nodes),
      formatRunTime(record, r.firstAtMs),
      formatRunTime(record, r.lastAtMs),
    ]),
  };
}
