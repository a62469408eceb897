import { computeReportDetails, evictionCells, poolCells, type ReportDetails } from './breakdown.ts';
import { costHolds } from './cost-holds.ts';
import { NODE_HOLD_NOTE } from './holds.ts';
import type { SimulationRecord } from './record.ts';
import {
  ASSUMED_PRICE_NOTE,
  CAPACITY_TYPES,
  computeReportStats,
  formatDuration,
  formatInstant,
  formatRunTime,
  formatUsd,
  OVERLAY_PRICE_NOTE,
  priceMarks,
  type ReportStats,
  WINDOWS_PRICE_NOTE,
} from './stats.ts';

// The plain-text summary of a simulation run, for a terminal. Deterministic: the same record
// always gives the same text.

/** Groups of unschedulable pods listed before "… and N more". */
export const MAX_UNSCHEDULABLE_GROUPS = 8;
/** Pod names listed per group before "… and N more". */
export const MAX_PODS_PER_GROUP = 5;
/** Columns of the $/hour sparkline. */
export const SPARKLINE_WIDTH = 48;
/** Time points of $/hour listed under the sparkline (start and end included). */
const COST_POINTS = 5;

const BARS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'] as const;

/** Rows of held nodes listed before "… and N more". */
export const MAX_NODE_HOLDS = 8;

/**
 * The run as plain text: scenario and span, launches by instance type and capacity type, $/hour
 * and idle $/hour over time, total cost, each NodePool, pod wait percentiles, interruptions,
 * disruptions by reason, what held disruptions back, evictions, terminations and the pods left
 * unschedulable with their reasons. Times are UTC, with the date when the run spans days.
 */
export function renderSummary(record: SimulationRecord): string {
  const stats = computeReportStats(record);
  const details = computeReportDetails(record);
  const sections = [
    header(record),
    launches(stats),
    cost(record, stats),
    idle(record, details),
    pools(details),
    waits(stats),
    interruptions(stats),
    disruptions(record, stats),
    held(record, details),
    evictions(record, details),
    terminations(stats),
    costLimits(record),
    unschedulable(stats),
  ];
  return `${sections
    .filter((lines) => lines.length > 0)
    .map((lines) => lines.join('\n'))
    .join('\n\n')}\n`;
}

function header(record: SimulationRecord): string[] {
  const { scenario } = record;
  const end = scenario.startMs + scenario.durationMs;
  return [
    `Flotilla simulation "${scenario.name}"`,
    ...(scenario.description === undefined ? [] : [`  ${scenario.description}`]),
    `  region ${scenario.region}${scenario.knownPricesOnly === true ? ' (known prices only)' : ''}, ${formatInstant(scenario.startMs)} to ${formatInstant(end)} (${formatDuration(scenario.durationMs)} of virtual time), ${record.samples.length} samples, ${record.decisions.length} decisions logged`,
    ...(scenario.initialNodes === undefined
      ? []
      : [
          `  nodes at the start: ${scenario.initialNodes.flotilla} of Flotilla's NodePools (in the costs), ${scenario.initialNodes.foreign} foreign (another autoscaler's: never disrupted or terminated, not in the costs)`,
        ]),
    '  times below are UTC, as budget schedules are',
  ];
}

/** Rows as columns: the first left-aligned, the rest right-aligned, two spaces apart. */
export function table(rows: readonly (readonly string[])[], indent = '  '): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map(
    (row) =>
      indent +
      row
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
  );
}

function launches(stats: ReportStats): string[] {
  if (stats.launchCount === 0) return ['Nodes launched: none'];
  const types = CAPACITY_TYPES.filter((c) => c !== 'reserved' || stats.launchTotals.reserved > 0);
  const split = types.map((c) => `${c} ${stats.launchTotals[c]}`).join(', ');
  const price = (min: number, max: number) =>
    min === max ? formatUsd(min) : `${formatUsd(min)}-${formatUsd(max)}`;
  return [
    `Nodes launched: ${stats.launchCount} (${split}); at most ${stats.peakNodes} running at once`,
    ...table([
      ['instance type', ...types, 'total', '$/hour each'],
      ...stats.launches.map((row) => [
        row.instanceType,
        ...types.map((c) => String(row.byCapacityType[c])),
        String(row.total),
        `${price(row.minPricePerHour, row.maxPricePerHour)}${priceMarks(row)}`,
      ]),
      ['total', ...types.map((c) => String(stats.launchTotals[c])), String(stats.launchCount), ''],
    ]),
    ...(stats.assumedPriceLaunches === 0 ? [] : [`  ${ASSUMED_PRICE_NOTE}`]),
    ...(stats.overlaidPriceLaunches === 0 ? [] : [`  ${OVERLAY_PRICE_NOTE}`]),
    ...(stats.windowsPriceLaunches === 0 ? [] : [`  ${WINDOWS_PRICE_NOTE}`]),
  ];
}

/**
 * One character per time bucket: the highest value in the bucket, scaled from 0 to the
 * overall maximum. Buckets without samples repeat the previous one.
 */
export function sparkline(points: readonly { atMs: number; value: number }[], width: number): string {
  const first = points[0];
  const last = points[points.length - 1];
  if (first === undefined || last === undefined) return '';
  const columns = Math.min(width, points.length);
  const span = Math.max(1, last.atMs - first.atMs);
  const buckets: (number | undefined)[] = Array.from({ length: columns }, () => undefined);
  for (const p of points) {
    const i = Math.min(columns - 1, Math.floor(((p.atMs - first.atMs) / span) * columns));
    buckets[i] = Math.max(buckets[i] ?? Number.NEGATIVE_INFINITY, p.value);
  }
  const max = Math.max(0, ...buckets.map((b) => b ?? 0));
  let previous = 0;
  return buckets
    .map((b) => {
      const value = b ?? previous;
      previous = value;
      const level = max === 0 ? 0 : Math.round((Math.max(0, value) / max) * (BARS.length - 1));
      return BARS[level];
    })
    .join('');
}

function cost(record: SimulationRecord, stats: ReportStats): string[] {
  const c = stats.cost;
  if (c === undefined) return ['Cost ($/hour): no samples'];
  const samples = record.samples;
  const startMs = record.scenario.startMs;
  const points = samples.map((s) => ({ atMs: s.atMs, value: s.costPerHour }));
  const first = samples[0]?.atMs ?? startMs;
  const last = samples[samples.length - 1]?.atMs ?? startMs;
  const picks = new Set<number>();
  for (let k = 0; k < COST_POINTS; k++) {
    const target = first + ((last - first) * k) / (COST_POINTS - 1);
    // The last sample at or before the target.
    let index = 0;
    for (let i = 0; i < samples.length && (samples[i]?.atMs ?? 0) <= target; i++) index = i;
    picks.add(index);
  }
  const timePoints = [...picks]
    .sort((a, b) => a - b)
    .map((i) => samples[i])
    .filter((s) => s !== undefined)
    .map((s) => `${formatRunTime(record, s.atMs)} ${formatUsd(s.costPerHour)}`)
    .join('  ');
  return [
    `Cost ($/hour): min ${formatUsd(c.minPerHour)}  avg ${formatUsd(c.avgPerHour)}  max ${formatUsd(c.maxPerHour)}  final ${formatUsd(c.finalPerHour)}`,
    `  ${formatRunTime(record, first)} ${sparkline(points, SPARKLINE_WIDTH)} ${formatRunTime(record, last)}  (full height ${formatUsd(c.maxPerHour)}/hour)`,
    `  ${timePoints}`,
    `Total cost: ${formatUsd(c.totalUsd)} over ${formatDuration(record.scenario.durationMs)}`,
  ];
}

function waits(stats: ReportStats): string[] {
  const w = stats.waits;
  if (w === undefined) return ['Pod wait: no pods got a node'];
  const counted =
    w.notStarted === 0
      ? `${w.count} pods, creation to binding`
      : `${w.count} pods, creation to binding; ${w.notStarted} not started by the end, counted with their wait so far`;
  return [
    `Pod wait (${counted}): p50 ${formatDuration(w.p50Ms)}  p95 ${formatDuration(w.p95Ms)}  max ${formatDuration(w.maxMs)}`,
  ];
}

function interruptions(stats: ReportStats): string[] {
  if (stats.interruptionCount === 0) return ['Interruptions: none'];
  const notHandled = stats.interruptionCount - stats.interruptionsHandled;
  return [
    `Interruptions: ${stats.interruptionCount} (${stats.interruptionsHandled} handled, ${notHandled} not handled)`,
    ...table([
      ['kind', 'count', 'handled', 'not handled'],
      ...stats.interruptions.map((r) => [
        r.kind,
        String(r.count),
        String(r.handled),
        String(r.count - r.handled),
      ]),
    ]),
  ];
}

function disruptions(record: SimulationRecord, stats: ReportStats): string[] {
  if (stats.disruptionCount === 0) return ['Disruptions: none'];
  return [
    `Disruptions: ${stats.disruptionCount} (${stats.disruptions.map((d) => `${d.reason} ${d.count}`).join(', ')})`,
    ...table([
      ['reason', 'nodes', 'first', 'last'],
      ...stats.disruptions.map((d) => [
        d.reason,
        String(d.count),
        formatRunTime(record, d.firstAtMs),
        formatRunTime(record, d.lastAtMs),
      ]),
    ]),
    ...savings(stats),
  ];
}

/** What the Empty and Underutilized commands saved, when there were any. */
function savings(stats: ReportStats): string[] {
  if (stats.savings.length === 0) return [];
  const parts = stats.savings.map(
    (row) =>
      `${row.reason}: ${row.commands} ${row.commands === 1 ? 'command' : 'commands'}, ${formatUsd(row.perHour)}/hour, ${formatUsd(row.usd)}`,
  );
  return [
    `Saved by consolidation: ${formatUsd(stats.savedUsd)} (${parts.join('; ')})`,
    "  each command's $/hour saving counted from its nodes' deletion to the end of the run",
  ];
}

function terminations(stats: ReportStats): string[] {
  const total = stats.terminations.reduce((sum, t) => sum + t.count, 0);
  if (total === 0) return ['Nodes terminated: none'];
  return [
    `Nodes terminated: ${total} (${stats.terminations.map((t) => `${t.reason} ${t.count}`).join(', ')})`,
  ];
}

function unschedulable(stats: ReportStats): string[] {
  if (stats.unschedulableCount === 0) return ['Pods left unschedulable: none'];
  const lines = [`Pods left unschedulable: ${stats.unschedulableCount}`];
  for (const group of stats.unschedulable.slice(0, MAX_UNSCHEDULABLE_GROUPS)) {
    const reasons = group.reasons.length === 0 ? 'no reason recorded' : group.reasons.join('; ');
    lines.push(`  ${group.pods.length} ${group.pods.length === 1 ? 'pod' : 'pods'}: ${reasons}`);
    const shown = group.pods.slice(0, MAX_PODS_PER_GROUP).join(', ');
    const more = group.pods.length - MAX_PODS_PER_GROUP;
    lines.push(`    ${shown}${more > 0 ? `, … and ${more} more` : ''}`);
  }
  const moreGroups = stats.unschedulable.length - MAX_UNSCHEDULABLE_GROUPS;
  if (moreGroups > 0) {
    const pods = stats.unschedulable
      .slice(MAX_UNSCHEDULABLE_GROUPS)
      .reduce((sum, g) => sum + g.pods.length, 0);
    lines.push(`  … and ${moreGroups} more reasons (${pods} pods)`);
  }
  return lines;
}

/** The share as a whole percentage: `34%`. */
const percent = (share: number) => `${Math.round(share * 100)}%`;

function idle(record: SimulationRecord, details: ReportDetails): string[] {
  const i = details.idle;
  if (i === undefined) return ['Idle capacity: no samples'];
  const samples = record.samples;
  const first = samples[0]?.atMs ?? record.scenario.startMs;
  const last = samples[samples.length - 1]?.atMs ?? first;
  const points = samples.map((s) => ({ atMs: s.atMs, value: s.idleCostPerHour ?? 0 }));
  return [
    `Idle capacity ($/hour of the nodes no pod requests): avg ${formatUsd(i.avgPerHour)}  peak ${formatUsd(i.maxPerHour)} at ${formatRunTime(record, i.maxAtMs)}  idle share ${percent(i.share)} of the spend, ${formatUsd(i.totalUsd)} over the run`,
    `  ${formatRunTime(record, first)} ${sparkline(points, SPARKLINE_WIDTH)} ${formatRunTime(record, last)}  (full height ${formatUsd(i.maxPerHour)}/hour)`,
    "  each node's price × (1 − requested ÷ allocatable of the busier of cpu and memory); a node not yet registered is all idle",
  ];
}

function pools(details: ReportDetails): string[] {
  if (details.pools.length === 0) return ['NodePools: none launched'];
  const cells = poolCells(details.pools);
  return [`NodePools: ${details.pools.length}`, ...table([cells.headers, ...cells.rows])];
}

/** What the dollar limits held back (the section is left out when no limit held a pod). */
function costLimits(record: SimulationRecord): string[] {
  const holds = costHolds(record);
  if (holds.length === 0) return [];
  return [
    'Dollar limits reached:',
    ...holds.map(
      (h) =>
        `  ${h.limit} ${h.amount}: up to ${h.pods} ${h.pods === 1 ? 'pod' : 'pods'} waited, ${formatRunTime(record, h.fromMs)} to ${formatRunTime(record, h.untilMs)}`,
    ),
  ];
}

/** What kept disruption from acting: one line per budget and per kind of reason nodes were kept for. */
function held(record: SimulationRecord, details: ReportDetails): string[] {
  const { budgetHolds, nodeHolds, rolloutHolds } = details;
  if (budgetHolds.length === 0 && nodeHolds.length === 0 && rolloutHolds.length === 0) {
    return ['Disruptions blocked: none'];
  }
  const lines = ['Disruptions blocked:'];
  for (const r of rolloutHolds) {
    const span = `${formatRunTime(record, r.fromMs)} to ${r.atEnd ? 'the end' : formatRunTime(record, r.untilMs)}`;
    lines.push(
      `  rollout of ${r.nodePool} held by alarm(s) ${r.alarms.join(', ') || '(annotation)'} (${r.reason}) for ${formatDuration(r.untilMs - r.fromMs)} (${span}): drift and expiration waited`,
    );
  }
  for (const b of budgetHolds) {
    const passes = `${b.passes} ${b.passes === 1 ? 'pass' : 'passes'}`;
    const span = `${formatRunTime(record, b.firstAtMs)} to ${b.atEnd ? 'the end' : formatRunTime(record, b.untilMs)}`;
    lines.push(
      `  budget ${b.key} held ${b.reason} disruptions for ${formatDuration(b.heldMs)} over ${passes} (${span})`,
    );
  }
  for (const h of nodeHolds.slice(0, MAX_NODE_HOLDS)) {
    const nodes = `${h.nodeClaims.length} ${h.nodeClaims.length === 1 ? 'node' : 'nodes'}`;
    const example = h.example === h.kind ? '' : `, e.g. "${h.example}"`;
    lines.push(
      `  ${nodes} held: ${h.kind}, ${formatDuration(h.heldMs)} of node time, longest ${formatDuration(h.longestMs)}${example}`,
    );
  }
  const more = nodeHolds.length - MAX_NODE_HOLDS;
  if (more > 0) lines.push(`  … and ${more} more reasons`);
  if (nodeHolds.length > 0) lines.push(`  ${NODE_HOLD_NOTE}`);
  return lines;
}

function evictions(record: SimulationRecord, details: ReportDetails): string[] {
  if (details.evictedPods === 0) return ['Evictions: none'];
  const cells = evictionCells(record, details.evictions);
  const byReason = new Map<string, number>();
  for (const r of details.evictions)
    byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + r.evicted + r.forceDeleted);
  return [
    `Evictions: ${details.evictedPods} pods (${[...byReason].map(([reason, n]) => `${reason} ${n}`).join(', ')})`,
    ...table([cells.headers, ...cells.rows]),
  ];
}
