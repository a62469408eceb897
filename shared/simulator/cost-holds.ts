import type { SimulationRecord } from './record.ts';

// What the dollar limits held back, read from the provisioner's `unschedulable` decision lines: per
// limit (a NodePool's own, or the cluster's), the most pods waiting on it at one run and from when to
// when. A pod counts for a limit when one of its NodePool reasons is that limit. Pure and
// deterministic.

export interface CostHold {
  /** `nodePool web` for a NodePool's own limit, `cluster` for the cluster's. */
  readonly limit: string;
  /** `$0.8000/h`. */
  readonly amount: string;
  /** The most pods waiting on it after one provisioning run. */
  readonly pods: number;
  readonly fromMs: number;
  readonly untilMs: number;
}

const REASON = /nodePool ([^:;]+): dollar limit (\$[\d.]+\/h) \((the NodePool annotation|the cluster's)/g;

/** Every dollar limit that held pods back, in the order it first did. */
export function costHolds(record: SimulationRecord): CostHold[] {
  const holds = new Map<
    string,
    { amount: string; perRun: Map<number, number>; fromMs: number; untilMs: number }
  >();
  for (const d of record.decisions) {
    if (d['decision'] !== 'unschedulable' || typeof d['reason'] !== 'string') continue;
    const atMs = typeof d['atMs'] === 'number' ? d['atMs'] : 0;
    const count =
      typeof d['podCount'] === 'number' ? d['podCount'] : Array.isArray(d['pods']) ? d['pods'].length : 0;
    const limits = new Set<string>();
    for (const m of d['reason'].matchAll(REASON)) {
      const limit = m[3] === "the cluster's" ? 'cluster' : `nodePool ${m[1]}`;
      if (limits.has(limit)) continue;
      limits.add(limit);
      const hold = holds.get(limit) ?? { amount: m[2] ?? '', perRun: new Map(), fromMs: atMs, untilMs: atMs };
      hold.perRun.set(atMs, (hold.perRun.get(atMs) ?? 0) + count);
      hold.untilMs = Math.max(hold.untilMs, atMs);
      holds.set(limit, hold);
    }
  }
  return [...holds.entries()]
    .map(([limit, h]) => ({
      limit,
      amount: h.amount,
      pods: Math.max(...h.perRun.values()),
      fromMs: h.fromMs,
      untilMs: h.untilMs,
    }))
    .sort((a, b) => a.fromMs - b.fromMs || a.limit.localeCompare(b.limit));
}
