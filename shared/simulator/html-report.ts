import {
  computeReportDetails,
  evictionCells,
  evictionSeries,
  poolCells,
  type ReportDetails,
} from './breakdown.ts';
import { NODE_HOLD_NOTE } from './holds.ts';
import { chart, escapeHtml, HEIGHT, WIDTH } from './html-chart.ts';
import type { SimSample, SimulationRecord } from './record.ts';

export { escapeHtml, niceStep, timeStep } from './html-chart.ts';

import {
  ASSUMED_PRICE_NOTE,
  CAPACITY_TYPES,
  computeReportStats,
  type DisruptionRowReason,
  disruptionSeries,
  formatDuration,
  formatInstant,
  formatRunTime,
  formatUsd,
  OVERLAY_PRICE_NOTE,
  priceMarks,
  type ReportStats,
  WINDOWS_PRICE_NOTE,
} from './stats.ts';

// The HTML report of a simulation run: one self-contained file (no scripts, no network, no
// fonts to fetch) with three inline SVG charts drawn here and the summary tables. Every piece of
// text from the record is escaped.

/**
 * The colours the charts draw with, each used nowhere else on the page, so a screenshot can be
 * checked for the charts by colour:
 * - `chart-nodes`: stacked areas of running nodes, on-demand (blue) under spot (amber) under
 *   reserved (violet);
 * - `chart-cost`: the $/hour line (red) over a light red area;
 * - `chart-pods`: pending pods (magenta) and running pods (green) as lines;
 * - `chart-disruptions` (only when nodes were disrupted): nodes disrupted so far, one line per
 *   reason: Scheduled (slate), Empty (cyan), Drifted (orange), Expired (lime), Underutilized
 *   (brown), Interrupted (rose);
 * - `chart-idle`: the idle $/hour line (teal) over a light teal area;
 * - `chart-evictions` (only when pods were evicted): pods evicted so far, one line per reason in
 *   the EVICTION_COLOURS order.
 */
export const CHART_COLOURS = {
  nodesOnDemand: '#1d4ed8',
  nodesSpot: '#f59e0b',
  nodesReserved: '#7c3aed',
  costLine: '#dc2626',
  costArea: '#fecaca',
  podsPending: '#c026d3',
  podsRunning: '#059669',
  disruptedScheduled: '#475569',
  disruptedEmpty: '#0891b2',
  disruptedDrifted: '#ea580c',
  disruptedExpired: '#65a30d',
  disruptedUnderutilized: '#92400e',
  disruptedInterrupted: '#be123c',
  idleLine: '#0f766e',
  idleArea: '#99f6e4',
} as const;

/** The eviction chart's lines, one per reason in name order, the colours taken in turn. */
export const EVICTION_COLOURS = ['#6d28d9', '#0369a1', '#a16207', '#166534', '#9f1239', '#1e3a8a'] as const;

const DISRUPTION_COLOURS: Readonly<Record<DisruptionRowReason, string>> = {
  Scheduled: CHART_COLOURS.disruptedScheduled,
  Empty: CHART_COLOURS.disruptedEmpty,
  Drifted: CHART_COLOURS.disruptedDrifted,
  Expired: CHART_COLOURS.disruptedExpired,
  Underutilized: CHART_COLOURS.disruptedUnderutilized,
  Interrupted: CHART_COLOURS.disruptedInterrupted,
};

/** Element ids of the charts. */
export const CHART_IDS = {
  nodes: 'chart-nodes',
  cost: 'chart-cost',
  pods: 'chart-pods',
  disruptions: 'chart-disruptions',
  idle: 'chart-idle',
  evictions: 'chart-evictions',
} as const;

/** The decision log's file name, next to the report (see writeReports). */
export const DECISION_LOG_FILE = 'decisions.jsonl';

/** Unschedulable groups, and pods per group, listed before "… and N more". */
const MAX_GROUPS = 50;
const MAX_PODS_PER_GROUP = 20;

export function renderHtmlReport(record: SimulationRecord): string {
  const stats = computeReportStats(record);
  const details = computeReportDetails(record);
  const { scenario } = record;
  const title = `Flotilla simulation "${scenario.name}"`;
  const end = scenario.startMs + scenario.durationMs;
  const body = [
    `<h1>${escapeHtml(title)}</h1>`,
    scenario.description === undefined
      ? ''
      : `<p class="description">${escapeHtml(scenario.description)}</p>`,
    `<p class="span">Region ${escapeHtml(scenario.region)}, ${formatInstant(scenario.startMs)} to ${formatInstant(end)} (${formatDuration(scenario.durationMs)} of virtual time), ${record.samples.length} samples. Times are UTC, as budget schedules are.</p>`,
    headline(stats, details),
    nodesChart(record),
    costChart(record),
    idleChart(record, details),
    podsChart(record),
    disruptionsChart(record, stats),
    evictionsChart(record, details),
    launchesTable(stats),
    poolsTable(details),
    interruptionsTable(stats),
    disruptionsTable(record, stats),
    heldTable(record, details),
    evictionsTable(record, details),
    terminationsTable(stats),
    unschedulableTable(stats),
    decisionLog(record),
  ]
    .filter((part) => part !== '')
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; color: #111827; background: #ffffff; margin: 16px 24px; max-width: ${WIDTH}px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 22px 0 6px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
p { margin: 4px 0; }
.headline { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 10px 0 4px; }
.headline div { font-size: 13px; color: #4b5563; }
.headline b { display: block; font-size: 18px; color: #111827; }
svg.chart { display: block; margin: 10px 0 0; width: ${WIDTH}px; height: ${HEIGHT}px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e5e7eb; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th.text, td.text { text-align: left; }
a { color: #111827; }
</style>
</head>
<body>
${body}
</body>
</html>
`;
}

function headline(stats: ReportStats, details: ReportDetails): string {
  const items: [string, string][] = [
    ['nodes launched', String(stats.launchCount)],
    ['most nodes at once', String(stats.peakNodes)],
    ['total cost', stats.cost === undefined ? 'no samples' : formatUsd(stats.cost.totalUsd)],
    ['average $/hour', stats.cost === undefined ? 'no samples' : formatUsd(stats.cost.avgPerHour)],
    [
      'average idle $/hour (share of the spend)',
      details.idle === undefined
        ? 'no samples'
        : `${formatUsd(details.idle.avgPerHour)} (${Math.round(details.idle.share * 100)}%)`,
    ],
    [
      stats.waits !== undefined && stats.waits.notStarted > 0
        ? `pod wait p50 / p95 (${stats.waits.notStarted} of ${stats.waits.count} pods not started, counted with their wait so far)`
        : 'pod wait p50 / p95',
      stats.waits === undefined
        ? 'no pods'
        : `${formatDuration(stats.waits.p50Ms)} / ${formatDuration(stats.waits.p95Ms)}`,
    ],
    ['interruptions (handled)', `${stats.interruptionCount} (${stats.interruptionsHandled})`],
    ['nodes disrupted', String(stats.disruptionCount)],
    ['pods evicted', String(details.evictedPods)],
    ['saved by consolidation', formatUsd(stats.savedUsd)],
    ['pods left unschedulable', String(stats.unschedulableCount)],
  ];
  return `<div class="headline">${items.map(([label, value]) => `<div><b>${escapeHtml(value)}</b>${escapeHtml(label)}</div>`).join('')}</div>`;
}

const byCapacity = (samples: readonly SimSample[], c: (typeof CAPACITY_TYPES)[number]) =>
  samples.map((s) => s.nodesByCapacityType[c] ?? 0);

function nodesChart(record: SimulationRecord): string {
  const s = record.samples;
  const reserved = byCapacity(s, 'reserved');
  return chart({
    id: CHART_IDS.nodes,
    title: 'Nodes over time, by capacity type',
    yLabel: 'running nodes',
    record,
    areas: [
      { name: 'on-demand', colour: CHART_COLOURS.nodesOnDemand, values: byCapacity(s, 'on-demand') },
      { name: 'spot', colour: CHART_COLOURS.nodesSpot, values: byCapacity(s, 'spot') },
      ...(reserved.some((n) => n > 0)
        ? [{ name: 'reserved', colour: CHART_COLOURS.nodesReserved, values: reserved }]
        : []),
    ],
    formatY: String,
    integer: true,
  });
}

function costChart(record: SimulationRecord): string {
  return chart({
    id: CHART_IDS.cost,
    title: 'Cost over time ($/hour of the running instances)',
    yLabel: '$/hour',
    record,
    lines: [
      {
        name: '$/hour',
        colour: CHART_COLOURS.costLine,
        fill: CHART_COLOURS.costArea,
        values: record.samples.map((x) => x.costPerHour),
      },
    ],
    formatY: (v) => `$${v < 10 ? v.toFixed(2) : v.toFixed(0)}`,
    integer: false,
  });
}

function idleChart(record: SimulationRecord, details: ReportDetails): string {
  if (details.idle === undefined) return '';
  return chart({
    id: CHART_IDS.idle,
    title: 'Idle capacity over time ($/hour of the nodes no pod requests)',
    yLabel: 'idle $/hour',
    record,
    lines: [
      {
        name: 'idle $/hour',
        colour: CHART_COLOURS.idleLine,
        fill: CHART_COLOURS.idleArea,
        values: record.samples.map((x) => x.idleCostPerHour ?? 0),
      },
    ],
    formatY: (v) => `$${v < 10 ? v.toFixed(2) : v.toFixed(0)}`,
    integer: false,
  });
}

function evictionsChart(record: SimulationRecord, details: ReportDetails): string {
  if (details.evictedPods === 0) return '';
  return chart({
    id: CHART_IDS.evictions,
    title: 'Pods evicted over time, by reason',
    yLabel: 'pods evicted so far',
    record,
    lines: evictionSeries(record).map((s, i) => ({
      name: s.reason,
      colour: EVICTION_COLOURS[i % EVICTION_COLOURS.length] ?? EVICTION_COLOURS[0],
      values: s.values,
    })),
    formatY: String,
    integer: true,
  });
}

function podsChart(record: SimulationRecord): string {
  return chart({
    id: CHART_IDS.pods,
    title: 'Pending and running pods over time',
    yLabel: 'pods',
    record,
    lines: [
      {
        name: 'running',
        colour: CHART_COLOURS.podsRunning,
        values: record.samples.map((x) => x.runningPods),
      },
      {
        // The most pods pending at once since the previous sample: an outage between samples shows.
        name: 'pending',
        colour: CHART_COLOURS.podsPending,
        values: record.samples.map((x) => x.peakPendingPods ?? x.pendingPods),
      },
    ],
    formatY: String,
    integer: true,
  });
}

function disruptionsChart(record: SimulationRecord, stats: ReportStats): string {
  if (stats.disruptionCount === 0) return '';
  return chart({
    id: CHART_IDS.disruptions,
    title: 'Nodes disrupted over time, by reason',
    yLabel: 'nodes disrupted so far',
    record,
    lines: disruptionSeries(record).map((s) => ({
      name: s.reason,
      colour: DISRUPTION_COLOURS[s.reason],
      values: s.values,
    })),
    formatY: String,
    integer: true,
  });
}

// ---- tables ----

function htmlTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  textColumns = 1,
): string {
  const cell = (tag: 'th' | 'td', text: string, i: number) =>
    `<${tag}${i < textColumns && i > 0 ? ' class="text"' : ''}>${escapeHtml(text)}</${tag}>`;
  return `<table>\n<tr>${headers.map((h, i) => cell('th', h, i)).join('')}</tr>\n${rows
    .map((r) => `<tr>${r.map((c, i) => cell('td', c, i)).join('')}</tr>`)
    .join('\n')}\n</table>`;
}

function launchesTable(stats: ReportStats): string {
  if (stats.launchCount === 0) return '<h2>Nodes launched</h2>\n<p>None.</p>';
  const types = CAPACITY_TYPES.filter((c) => c !== 'reserved' || stats.launchTotals.reserved > 0);
  const price = (min: number, max: number) =>
    min === max ? formatUsd(min) : `${formatUsd(min)} to ${formatUsd(max)}`;
  return `<h2>Nodes launched: ${stats.launchCount}</h2>\n${htmlTable(
    ['instance type', ...types, 'total', '$/hour each'],
    [
      ...stats.launches.map((r) => [
        r.instanceType,
        ...types.map((c) => String(r.byCapacityType[c])),
        String(r.total),
        `${price(r.minPricePerHour, r.maxPricePerHour)}${priceMarks(r)}`,
      ]),
      ['total', ...types.map((c) => String(stats.launchTotals[c])), String(stats.launchCount), ''],
    ],
  )}${stats.assumedPriceLaunches === 0 ? '' : `\n<p>${escapeHtml(ASSUMED_PRICE_NOTE)}</p>`}${
    stats.overlaidPriceLaunches === 0 ? '' : `\n<p>${escapeHtml(OVERLAY_PRICE_NOTE)}</p>`
  }${stats.windowsPriceLaunches === 0 ? '' : `\n<p>${escapeHtml(WINDOWS_PRICE_NOTE)}</p>`}`;
}

function interruptionsTable(stats: ReportStats): string {
  if (stats.interruptionCount === 0) return '<h2>Interruptions</h2>\n<p>None.</p>';
  return `<h2>Interruptions: ${stats.interruptionCount} (${stats.interruptionsHandled} handled)</h2>\n${htmlTable(
    ['kind', 'count', 'handled', 'not handled'],
    stats.interruptions.map((r) => [r.kind, String(r.count), String(r.handled), String(r.count - r.handled)]),
  )}`;
}

function disruptionsTable(record: SimulationRecord, stats: ReportStats): string {
  if (stats.disruptionCount === 0) return '<h2>Disruptions</h2>\n<p>None.</p>';
  return `<h2>Disruptions: ${stats.disruptionCount}</h2>\n${htmlTable(
    ['reason', 'nodes', 'first', 'last'],
    stats.disruptions.map((d) => [
      d.reason,
      String(d.count),
      formatRunTime(record, d.firstAtMs),
      formatRunTime(record, d.lastAtMs),
    ]),
  )}${savingsTable(stats)}`;
}

function savingsTable(stats: ReportStats): string {
  if (stats.savings.length === 0) return '';
  return `\n<h3>Saved by consolidation</h3>\n${htmlTable(
    ['reason', 'commands', '$/hour saved', '$ saved to the end of the run'],
    stats.savings.map((row) => [
      row.reason,
      String(row.commands),
      formatUsd(row.perHour),
      formatUsd(row.usd),
    ]),
  )}\n<p>Each command's $/hour saving (its nodes' launch prices minus its replacements') counted from its nodes' deletion to the end of the run.</p>`;
}

function poolsTable(details: ReportDetails): string {
  if (details.pools.length === 0) return '<h2>NodePools</h2>\n<p>None launched.</p>';
  const cells = poolCells(details.pools);
  return `<h2>NodePools: ${details.pools.length}</h2>\n${htmlTable(cells.headers, cells.rows)}`;
}

function heldTable(record: SimulationRecord, details: ReportDetails): string {
  const { budgetHolds, nodeHolds } = details;
  if (budgetHolds.length === 0 && nodeHolds.length === 0) return '<h2>Disruptions blocked</h2>\n<p>None.</p>';
  const budgets =
    budgetHolds.length === 0
      ? ''
      : `\n<h3>Budgets that allowed no disruption</h3>\n${htmlTable(
          ['NodePool/reason', 'held for', 'passes', 'from', 'until'],
          budgetHolds.map((b) => [
            b.key,
            formatDuration(b.heldMs),
            String(b.passes),
            formatRunTime(record, b.firstAtMs),
            b.atEnd ? 'the end' : formatRunTime(record, b.untilMs),
          ]),
        )}`;
  const nodes =
    nodeHolds.length === 0
      ? ''
      : `\n<h3>Nodes kept</h3>\n${htmlTable(
          ['why', 'nodes', 'node time held', 'longest', 'NodePools', 'for example'],
          nodeHolds.map((h) => [
            h.kind,
            String(h.nodeClaims.length),
            formatDuration(h.heldMs),
            formatDuration(h.longestMs),
            h.nodePools.join(', '),
            h.example,
          ]),
          1,
        )}`;
  const note = nodeHolds.length === 0 ? '' : `\n<p>${escapeHtml(NODE_HOLD_NOTE)}.</p>`;
  return `<h2>Disruptions blocked</h2>${budgets}${nodes}${note}`;
}

function evictionsTable(record: SimulationRecord, details: ReportDetails): string {
  if (details.evictedPods === 0) return '<h2>Evictions</h2>\n<p>None.</p>';
  const cells = evictionCells(record, details.evictions);
  return `<h2>Pods evicted: ${details.evictedPods}</h2>\n${htmlTable(cells.headers, cells.rows, 2)}`;
}

function terminationsTable(stats: ReportStats): string {
  if (stats.terminations.length === 0) return '<h2>Nodes terminated</h2>\n<p>None.</p>';
  const total = stats.terminations.reduce((sum, t) => sum + t.count, 0);
  return `<h2>Nodes terminated: ${total}</h2>\n${htmlTable(
    ['reason', 'nodes'],
    stats.terminations.map((t) => [t.reason, String(t.count)]),
  )}`;
}

function unschedulableTable(stats: ReportStats): string {
  if (stats.unschedulableCount === 0) return '<h2>Pods left unschedulable</h2>\n<p>None.</p>';
  const rows = stats.unschedulable.slice(0, MAX_GROUPS).map((g) => {
    const more = g.pods.length - MAX_PODS_PER_GROUP;
    return [
      String(g.pods.length),
      g.reasons.length === 0 ? 'no reason recorded' : g.reasons.join('; '),
      `${g.pods.slice(0, MAX_PODS_PER_GROUP).join(', ')}${more > 0 ? `, … and ${more} more` : ''}`,
    ];
  });
  const moreGroups = stats.unschedulable.length - MAX_GROUPS;
  return `<h2>Pods left unschedulable: ${stats.unschedulableCount}</h2>\n${htmlTable(['pods', 'reasons', 'which'], rows, 3)}${
    moreGroups > 0 ? `\n<p>… and ${moreGroups} more reasons.</p>` : ''
  }`;
}

function decisionLog(record: SimulationRecord): string {
  return `<h2>Decision log</h2>\n<p>${record.decisions.length} decisions, one JSON object per line with its virtual time, in <a href="${DECISION_LOG_FILE}">${DECISION_LOG_FILE}</a> next to this file.</p>`;
}
