import type { CapacityType } from '../core/index.ts';
import { byName, type LaunchRow, launchRows } from './launch-table.ts';
import type { SimDisruptionReason, SimUnschedulablePod, SimulationRecord } from './record.ts';

export {
  ASSUMED_PRICE_NOTE,
  CAPACITY_TYPES,
  type LaunchRow,
  OVERLAY_PRICE_NOTE,
  priceMarks,
  WINDOWS_PRICE_NOTE,
} from './launch-table.ts';

// The numbers both reports (text summary, HTML) show, computed once from a SimulationRecord. Pure
// and deterministic: ties are broken by name so equal records give equal reports.

export interface CostStats {
  readonly minPerHour: number;
  readonly avgPerHour: number;
  readonly maxPerHour: number;
  readonly finalPerHour: number;
  /**
   * Dollars over the run: each instance billed from its launch to its termination (the record's
   * `billedUsd`); for a record without it, each sample's $/hour held until the next sample, the
   * last one until the end of the run (`startMs + durationMs`).
   */
  readonly totalUsd: number;
}

export interface WaitStats {
  /** Pods counted: those that got a node and those still waiting at the end. */
  readonly count: number;
  /** Pods still waiting for a node at the end, counted with their wait so far. */
  readonly notStarted: number;
  /** Nearest-rank percentiles, milliseconds. */
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly maxMs: number;
}

export interface InterruptionRow {
  readonly kind: string;
  readonly count: number;
  readonly handled: number;
}

/** Pods that share the same reasons. */
export interface UnschedulableGroup {
  readonly reasons: readonly string[];
  /** `namespace/name`, sorted. */
  readonly pods: readonly string[];
}

/** Why a node was disrupted: the disruption controller's reasons, and interruptions. */
export type DisruptionRowReason = SimDisruptionReason | 'Interrupted';

/** The order reports list disruption reasons in. */
export const DISRUPTION_REASONS: readonly DisruptionRowReason[] = [
  'Scheduled',
  'Empty',
  'Drifted',
  'Expired',
  'Underutilized',
  'Interrupted',
];

/** Nodes disrupted for one reason, and when the first and the last went. */
export interface DisruptionRow {
  readonly reason: DisruptionRowReason;
  readonly count: number;
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

export interface TerminationRow {
  readonly reason: string;
  readonly count: number;
}

/** The disruption controller's reasons that are about cost: nodes removed or replaced to save money. */
export const SAVING_REASONS = ['Empty', 'Underutilized'] as const;
export type SavingReason = (typeof SAVING_REASONS)[number];

/** What the commands for one cost reason saved. */
export interface SavingsRow {
  readonly reason: SavingReason;
  /** Commands whose candidates were deleted. */
  readonly commands: number;
  /** Σ over those commands of the candidates' launch prices minus the replacements', $/hour. */
  readonly perHour: number;
  /** Σ over those commands of that $/hour from the candidates' deletion to the end of the run. */
  readonly usd: number;
}

export interface ReportStats {
  readonly launches: readonly LaunchRow[];
  readonly launchTotals: Readonly<Record<CapacityType, number>>;
  readonly launchCount: number;
  /** Undefined when the record has no samples. */
  readonly cost: CostStats | undefined;
  readonly peakNodes: number;
  readonly peakPendingPods: number;
  /** Undefined when no pod waited for a node. */
  readonly waits: WaitStats | undefined;
  /** Launches at a price the catalog only assumes. */
  readonly assumedPriceLaunches: number;
  /** Launches at a NodeOverlay's price (SimLaunch.priceOverlaid). */
  readonly overlaidPriceLaunches: number;
  /** Windows launches at their Linux price (SimLaunch.priceWithoutWindowsLicense). */
  readonly windowsPriceLaunches: number;
  readonly interruptions: readonly InterruptionRow[];
  readonly interruptionCount: number;
  readonly interruptionsHandled: number;
  readonly terminations: readonly TerminationRow[];
  /** Reasons that occurred, in DISRUPTION_REASONS order. */
  readonly disruptions: readonly DisruptionRow[];
  readonly disruptionCount: number;
  /** Cost reasons that had a command carried out, in SAVING_REASONS order. */
  readonly savings: readonly SavingsRow[];
  /** Σ of the savings rows' `usd`. */
  readonly savedUsd: number;
  /** Largest group first. */
  readonly unschedulable: readonly UnschedulableGroup[];
  readonly unschedulableCount: number;
}

/**
 * The value at nearest rank `ceil(p/100 × n)` of the values (need not be sorted).
 * @returns undefined for no values.
 */
export function nearestRank(values: readonly number[], percentile: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((percentile / 100) * sorted.length)));
  return sorted[rank - 1];
}

/** The largest value, 0 for none (a loop: spreading a long array into Math.max overflows the stack). */
export function largest(values: readonly number[]): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

/** Cost over the run; see CostStats.totalUsd for how $/hour is integrated. */
export function computeCost(record: SimulationRecord): CostStats | undefined {
  const samples = record.samples;
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (first === undefined || last === undefined) return undefined;
  const endMs = Math.max(last.atMs, record.scenario.startMs + record.scenario.durationMs);
  let totalUsd = 0;
  let min = first.costPerHour;
  let max = first.costPerHour;
  let sum = 0;
  samples.forEach((s, i) => {
    const nextMs = samples[i + 1]?.atMs ?? endMs;
    totalUsd += (s.costPerHour * Math.max(0, nextMs - s.atMs)) / 3_600_000;
    min = Math.min(min, s.costPerHour);
    max = Math.max(max, s.costPerHour);
    sum += s.costPerHour;
  });
  return {
    minPerHour: min,
    avgPerHour: sum / samples.length,
    maxPerHour: max,
    finalPerHour: last.costPerHour,
    totalUsd: record.billedUsd ?? totalUsd,
  };
}

/**
 * Waits of the pods that got a node and, counted with their wait so far, of the pods still
 * waiting at the end: a pod that never ran waited at least that long.
 */
function waitStats(record: SimulationRecord): WaitStats | undefined {
  const notStarted = record.podWaitsNotStartedMs ?? [];
  const waits = [...record.podWaitsMs, ...notStarted];
  const p50 = nearestRank(waits, 50);
  const p95 = nearestRank(waits, 95);
  if (p50 === undefined || p95 === undefined) return undefined;
  return {
    count: waits.length,
    notStarted: notStarted.length,
    p50Ms: p50,
    p95Ms: p95,
    maxMs: largest(waits),
  };
}

function interruptionRows(record: SimulationRecord): InterruptionRow[] {
  const rows = new Map<string, { count: number; handled: number }>();
  for (const i of record.interruptions) {
    const row = rows.get(i.kind) ?? { count: 0, handled: 0 };
    row.count += 1;
    if (i.handled) row.handled += 1;
    rows.set(i.kind, row);
  }
  return [...rows.entries()]
    .map(([kind, r]) => ({ kind, ...r }))
    .sort((a, b) => b.count - a.count || byName(a.kind, b.kind));
}

function terminationRows(record: SimulationRecord): TerminationRow[] {
  const counts = new Map<string, number>();
  for (const t of record.terminations) counts.set(t.reason, (counts.get(t.reason) ?? 0) + 1);
  return [...counts.entries()]
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count || byName(a.reason, b.reason));
}

const isSavingReason = (value: unknown): value is SavingReason =>
  SAVING_REASONS.some((reason) => reason === value);

/** The node names of a decision's `candidates` or `replacements` field, with the price it logged. */
function namedNodes(value: unknown): { nodeClaim: string; pricePerHour: number }[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { nodeClaim, pricePerHour } = entry as { nodeClaim?: unknown; pricePerHour?: unknown };
    if (typeof nodeClaim !== 'string') return [];
    return [{ nodeClaim, pricePerHour: typeof pricePerHour === 'number' ? pricePerHour : 0 }];
  });
}

/**
 * What consolidation saved: for each `Empty` or `Underutilized` command whose candidates were
 * deleted, what its candidates cost per hour minus what its replacements cost (the prices the
 * instances launched at; the logged price where a launch is not in the record), counted from the
 * deletion to the end of the run, as if the candidates would otherwise have run on. An estimate:
 * a later scale-down might have removed some of them anyway.
 */
export function consolidationSavings(record: SimulationRecord): SavingsRow[] {
  const endMs = record.scenario.startMs + record.scenario.durationMs;
  const launched = new Map(record.launches.map((l) => [l.nodeClaim, l.pricePerHour]));
  const price = (node: { nodeClaim: string; pricePerHour: number }) =>
    launched.get(node.nodeClaim) ?? node.pricePerHour;
  const sum = (nodes: { nodeClaim: string; pricePerHour: number }[]) =>
    nodes.reduce((total, node) => total + price(node), 0);
  const rows = new Map<SavingReason, { commands: number; perHour: number; usd: number }>();
  const seen = new Set<string>();
  for (const line of record.decisions) {
    if (line['decision'] !== 'disrupt' || line['outcome'] !== 'deleted') continue;
    const reason = line['reason'];
    const atMs = line['atMs'];
    if (!isSavingReason(reason) || typeof atMs !== 'number') continue;
    const id = typeof line['commandId'] === 'string' ? line['commandId'] : undefined;
    if (id !== undefined && seen.has(id)) continue;
    if (id !== undefined) seen.add(id);
    const perHour = sum(namedNodes(line['candidates'])) - sum(namedNodes(line['replacements']));
    const row = rows.get(reason) ?? { commands: 0, perHour: 0, usd: 0 };
    row.commands += 1;
    row.perHour += perHour;
    row.usd += (perHour * Math.max(0, endMs - atMs)) / 3_600_000;
    rows.set(reason, row);
  }
  return SAVING_REASONS.flatMap((reason) => {
    const row = rows.get(reason);
    return row === undefined ? [] : [{ reason, ...row }];
  });
}

/** Each disruption with its reason: the disruption controller's, then interruptions (not rebalances). */
function disruptionEvents(record: SimulationRecord): { atMs: number; reason: DisruptionRowReason }[] {
  return [
    ...record.disruptions.map((d) => ({ atMs: d.atMs, reason: d.reason as DisruptionRowReason })),
    ...record.interruptions
      .filter((i) => i.kind !== 'rebalance')
      .map((i) => ({ atMs: i.atMs, reason: 'Interrupted' as const })),
  ];
}

function disruptionRows(record: SimulationRecord): DisruptionRow[] {
  const rows = new Map<DisruptionRowReason, { count: number; firstAtMs: number; lastAtMs: number }>();
  for (const { atMs, reason } of disruptionEvents(record)) {
    const row = rows.get(reason);
    if (row === undefined) rows.set(reason, { count: 1, firstAtMs: atMs, lastAtMs: atMs });
    else {
      row.count += 1;
      row.firstAtMs = Math.min(row.firstAtMs, atMs);
      row.lastAtMs = Math.max(row.lastAtMs, atMs);
    }
  }
  return DISRUPTION_REASONS.flatMap((reason) => {
    const row = rows.get(reason);
    return row === undefined ? [] : [{ reason, ...row }];
  });
}

/**
 * For each reason that occurred (DISRUPTION_REASONS order), the nodes disrupted for it up to each
 * sample's time: one value per sample, rising over the run.
 */
export function disruptionSeries(
  record: SimulationRecord,
): { readonly reason: DisruptionRowReason; readonly values: readonly number[] }[] {
  const events = disruptionEvents(record);
  return disruptionRows(record).map(({ reason }) => {
    const times = events
      .filter((e) => e.reason === reason)
      .map((e) => e.atMs)
      .sort((a, b) => a - b);
    let seen = 0;
    return {
      reason,
      values: record.samples.map((s) => {
        while (seen < times.length && (times[seen] ?? 0) <= s.atMs) seen += 1;
        return seen;
      }),
    };
  });
}

/** Groups pods by their (sorted) reasons; the largest group first, then by the reasons' text. */
export function groupUnschedulable(pods: readonly SimUnschedulablePod[]): UnschedulableGroup[] {
  const groups = new Map<string, { reasons: string[]; pods: string[] }>();
  for (const pod of pods) {
    const reasons = [...new Set(pod.reasons)].sort(byName);
    const key = JSON.stringify(reasons);
    const group = groups.get(key) ?? { reasons, pods: [] };
    group.pods.push(`${pod.namespace}/${pod.name}`);
    groups.set(key, group);
  }
  return [...groups.values()]
    .map((g) => ({ reasons: g.reasons, pods: g.pods.sort(byName) }))
    .sort((a, b) => b.pods.length - a.pods.length || byName(a.reasons.join('\n'), b.reasons.join('\n')));
}

/** Everything the reports show, from one record. */
export function computeReportStats(record: SimulationRecord): ReportStats {
  const { rows, totals } = launchRows(record);
  const interruptions = interruptionRows(record);
  const disruptions = disruptionRows(record);
  const savings = consolidationSavings(record);
  return {
    launches: rows,
    launchTotals: totals,
    launchCount: record.launches.length,
    cost: computeCost(record),
    peakNodes: largest(record.samples.map((s) => s.nodes)),
    peakPendingPods: largest(record.samples.map((s) => s.peakPendingPods ?? s.pendingPods)),
    waits: waitStats(record),
    assumedPriceLaunches: record.launches.filter((l) => l.priceAssumed === true).length,
    overlaidPriceLaunches: record.launches.filter((l) => l.priceOverlaid === true).length,
    windowsPriceLaunches: record.launches.filter((l) => l.priceWithoutWindowsLicense === true).length,
    interruptions,
    interruptionCount: record.interruptions.length,
    interruptionsHandled: record.interruptions.filter((i) => i.handled).length,
    terminations: terminationRows(record),
    disruptions,
    disruptionCount: disruptions.reduce((sum, d) => sum + d.count, 0),
    savings,
    savedUsd: savings.reduce((sum, row) => sum + row.usd, 0),
    unschedulable: groupUnschedulable(record.unschedulable),
    unschedulableCount: record.unschedulable.length,
  };
}

/** A duration for people: `850ms`, `12.5s`, `2m05s`, `1h02m`, `2d03h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(Math.round(ms / 100) / 10).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  if (totalSeconds < 3600) {
    return `${Math.floor(totalSeconds / 60)}m${String(totalSeconds % 60).padStart(2, '0')}s`;
  }
  const totalMinutes = Math.round(ms / 60_000);
  if (totalMinutes < 24 * 60) {
    return `${Math.floor(totalMinutes / 60)}h${String(totalMinutes % 60).padStart(2, '0')}m`;
  }
  const totalHours = Math.round(ms / 3_600_000);
  return `${Math.floor(totalHours / 24)}d${String(totalHours % 24).padStart(2, '0')}h`;
}

/** Dollars: `$0.0960` below one dollar, `$12.34` above. */
export function formatUsd(usd: number): string {
  return Math.abs(usd) < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** An instant as ISO 8601 UTC without milliseconds: `2025-01-01T00:00:00Z`. */
export function formatInstant(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Whether the run's start and end fall on different UTC dates: its times then need the date. */
export function spansDays(record: Pick<SimulationRecord, 'scenario'>): boolean {
  const { startMs, durationMs } = record.scenario;
  return (
    new Date(startMs).toISOString().slice(0, 10) !== new Date(startMs + durationMs).toISOString().slice(0, 10)
  );
}

/**
 * A time of day in UTC (budgets' schedules are UTC cron): `14:30`, `14:30:15` with seconds, and
 * `2025-03-03 14:30` with the date.
 */
export function formatClock(ms: number, options: { date?: boolean; seconds?: boolean } = {}): string {
  const iso = new Date(ms).toISOString();
  const time = iso.slice(11, options.seconds === true ? 19 : 16);
  return options.date === true ? `${iso.slice(0, 10)} ${time}` : time;
}

/** A time of the run in UTC for the reports: with the date when the run spans days. */
export function formatRunTime(record: Pick<SimulationRecord, 'scenario'>, ms: number): string {
  return formatClock(ms, { date: spansDays(record) });
}
