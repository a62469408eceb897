import type { SimSample, SimulationRecord } from './record.ts';
import {
  CAPACITY_TYPES,
  computeReportStats,
  formatDuration,
  formatInstant,
  formatUsd,
  largest,
  type ReportStats,
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
 * - `chart-pods`: pending pods (magenta) and running pods (green) as lines.
 */
export const CHART_COLOURS = {
  nodesOnDemand: '#1d4ed8',
  nodesSpot: '#f59e0b',
  nodesReserved: '#7c3aed',
  costLine: '#dc2626',
  costArea: '#fecaca',
  podsPending: '#c026d3',
  podsRunning: '#059669',
} as const;

/** Element ids of the charts. */
export const CHART_IDS = { nodes: 'chart-nodes', cost: 'chart-cost', pods: 'chart-pods' } as const;

/** The decision log's file name, next to the report (see writeReports). */
export const DECISION_LOG_FILE = 'decisions.jsonl';

/** Unschedulable groups, and pods per group, listed before "… and N more". */
const MAX_GROUPS = 50;
const MAX_PODS_PER_GROUP = 20;

const WIDTH = 1200;
const HEIGHT = 320;
const MARGIN = { left: 72, right: 24, top: 52, bottom: 52 } as const;

/** Text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** The run as one self-contained HTML page: charts of nodes, $/hour and pods over time, and tables. */
export function renderHtmlReport(record: SimulationRecord): string {
  const stats = computeReportStats(record);
  const { scenario } = record;
  const title = `Flotilla simulation "${scenario.name}"`;
  const end = scenario.startMs + scenario.durationMs;
  const body = [
    `<h1>${escapeHtml(title)}</h1>`,
    scenario.description === undefined
      ? ''
      : `<p class="description">${escapeHtml(scenario.description)}</p>`,
    `<p class="span">Region ${escapeHtml(scenario.region)}, ${formatInstant(scenario.startMs)} to ${formatInstant(end)} (${formatDuration(scenario.durationMs)} of virtual time), ${record.samples.length} samples.</p>`,
    headline(stats),
    nodesChart(record),
    costChart(record),
    podsChart(record),
    launchesTable(stats),
    interruptionsTable(stats),
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

function headline(stats: ReportStats): string {
  const items: [string, string][] = [
    ['nodes launched', String(stats.launchCount)],
    ['most nodes at once', String(stats.peakNodes)],
    ['total cost', stats.cost === undefined ? 'no samples' : formatUsd(stats.cost.totalUsd)],
    ['average $/hour', stats.cost === undefined ? 'no samples' : formatUsd(stats.cost.avgPerHour)],
    [
      'pod wait p50 / p95',
      stats.waits === undefined
        ? 'no pods'
        : `${formatDuration(stats.waits.p50Ms)} / ${formatDuration(stats.waits.p95Ms)}`,
    ],
    ['interruptions (handled)', `${stats.interruptionCount} (${stats.interruptionsHandled})`],
    ['pods left unschedulable', String(stats.unschedulableCount)],
  ];
  return `<div class="headline">${items.map(([label, value]) => `<div><b>${escapeHtml(value)}</b>${escapeHtml(label)}</div>`).join('')}</div>`;
}

// ---- charts ----

interface Series {
  readonly name: string;
  readonly colour: string;
  readonly values: readonly number[];
}

interface ChartSpec {
  readonly id: string;
  readonly title: string;
  readonly yLabel: string;
  readonly record: SimulationRecord;
  /** Stacked step areas (bottom first), filled with each series' colour. */
  readonly areas?: readonly Series[];
  /** Step lines drawn on top, with an optional area filled under them. */
  readonly lines?: readonly (Series & { readonly fill?: string })[];
  readonly formatY: (value: number) => string;
  /** Ticks at whole numbers only (counts). */
  readonly integer: boolean;
}

/** A "nice" step (1, 2, 2.5 or 5 × 10^k) that splits `max` into about `count` parts. */
export function niceStep(max: number, count: number, integer: boolean): number {
  if (max <= 0) return 1;
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude;
  return integer ? Math.max(1, Math.ceil(step)) : step;
}

const TIME_STEPS_MS = [
  10_000,
  15_000,
  30_000,
  60_000,
  2 * 60_000,
  5 * 60_000,
  10 * 60_000,
  15 * 60_000,
  30 * 60_000,
  3_600_000,
  2 * 3_600_000,
  3 * 3_600_000,
  6 * 3_600_000,
  12 * 3_600_000,
  24 * 3_600_000,
  48 * 3_600_000,
  7 * 24 * 3_600_000,
];

/** Tick spacing on the time axis: the smallest step that gives at most 12 ticks. */
export function timeStep(spanMs: number): number {
  return TIME_STEPS_MS.find((s) => spanMs / s <= 12) ?? spanMs / 12;
}

function timeLabel(offsetMs: number, stepMs: number): string {
  if (stepMs < 60_000) {
    const seconds = Math.round(offsetMs / 1000);
    return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
  }
  const minutes = Math.round(offsetMs / 60_000);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
}

const round = (n: number) => Math.round(n * 10) / 10;

function chart(spec: ChartSpec): string {
  const { record } = spec;
  const startMs = record.scenario.startMs;
  const samples = record.samples;
  const lastMs = samples[samples.length - 1]?.atMs ?? startMs;
  const endMs = Math.max(startMs + record.scenario.durationMs, lastMs, startMs + 1);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (ms: number) => round(MARGIN.left + ((ms - startMs) / (endMs - startMs)) * plotW);

  const areas = spec.areas ?? [];
  const lines = spec.lines ?? [];
  const stackTops = samples.map((_, i) => areas.reduce((sum, a) => sum + (a.values[i] ?? 0), 0));
  const peak = Math.max(largest(stackTops), ...lines.map((l) => largest(l.values)));
  const step = niceStep(peak, 5, spec.integer);
  const yMax = Math.max(step, Math.ceil(peak / step) * step);
  const y = (v: number) => round(MARGIN.top + plotH - (v / yMax) * plotH);

  const parts: string[] = [];
  parts.push(`<title>${escapeHtml(spec.title)}</title>`);
  parts.push(
    `<text x="${MARGIN.left}" y="22" font-size="16" font-weight="600" fill="#111827">${escapeHtml(spec.title)}</text>`,
  );

  // Grid and y axis ticks.
  for (let v = 0; v <= yMax + step / 1000; v += step) {
    const yy = y(v);
    parts.push(
      `<line x1="${MARGIN.left}" y1="${yy}" x2="${WIDTH - MARGIN.right}" y2="${yy}" stroke="#e5e7eb" stroke-width="1"/>`,
      `<text x="${MARGIN.left - 8}" y="${yy + 4}" font-size="12" text-anchor="end" fill="#374151">${escapeHtml(spec.formatY(v))}</text>`,
    );
  }
  // x axis ticks.
  const tStep = timeStep(endMs - startMs);
  for (let t = 0; t <= endMs - startMs + 1; t += tStep) {
    const xx = x(startMs + t);
    parts.push(
      `<line x1="${xx}" y1="${MARGIN.top + plotH}" x2="${xx}" y2="${MARGIN.top + plotH + 5}" stroke="#374151" stroke-width="1"/>`,
      `<text x="${xx}" y="${MARGIN.top + plotH + 19}" font-size="12" text-anchor="middle" fill="#374151">${timeLabel(t, tStep)}</text>`,
    );
  }

  if (samples.length === 0) {
    parts.push(
      `<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH / 2}" font-size="14" text-anchor="middle" fill="#6b7280">no samples</text>`,
    );
  } else {
    // Each sample's value holds until the next sample (step-after), the last until the end.
    const xs = samples.map((s) => x(s.atMs));
    const xEnd = x(endMs);
    const upper = (values: readonly number[]) =>
      values.map((v, i) => `${i === 0 ? 'M' : 'V'}${y(v)} H${xs[i + 1] ?? xEnd}`).join(' ');
    const start = `M${xs[0]},`;
    let below = samples.map(() => 0);
    for (const area of areas) {
      const top = below.map((b, i) => b + (area.values[i] ?? 0));
      // Upper edge left to right, lower edge right to left.
      const lowerBack = [...below.keys()]
        .reverse()
        .map((i) => `H${xs[i + 1] ?? xEnd} V${y(below[i] ?? 0)} H${xs[i]}`)
        .join(' ');
      parts.push(
        `<path d="${upper(top).replace(/^M/, start)} V${y(below[below.length - 1] ?? 0)} ${lowerBack} Z" fill="${area.colour}" stroke="none" shape-rendering="crispEdges"/>`,
      );
      below = top;
    }
    for (const line of lines) {
      const path = upper(line.values).replace(/^M/, start);
      if (line.fill !== undefined) {
        parts.push(
          `<path d="${path} V${y(0)} H${xs[0]} Z" fill="${line.fill}" stroke="none" shape-rendering="crispEdges"/>`,
        );
      }
      parts.push(
        `<path d="${path}" fill="none" stroke="${line.colour}" stroke-width="3" stroke-linejoin="miter" shape-rendering="crispEdges"/>`,
      );
    }
  }

  // Axes on top of the data.
  parts.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#374151" stroke-width="1"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${WIDTH - MARGIN.right}" y2="${MARGIN.top + plotH}" stroke="#374151" stroke-width="1"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 8}" font-size="12" text-anchor="middle" fill="#374151">time since start (h:mm${tStep < 60_000 ? ':ss' : ''})</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" font-size="12" text-anchor="middle" fill="#374151">${escapeHtml(spec.yLabel)}</text>`,
  );

  // Legend, right-aligned on the title line.
  const legend = [...areas, ...lines].reverse();
  let lx = WIDTH - MARGIN.right;
  for (const item of legend) {
    const textWidth = item.name.length * 7;
    lx -= textWidth + 24;
    parts.push(
      `<rect x="${lx}" y="11" width="14" height="14" fill="${item.colour}"/>`,
      `<text x="${lx + 19}" y="23" font-size="12" fill="#374151">${escapeHtml(item.name)}</text>`,
    );
    lx -= 12;
  }

  return `<svg id="${spec.id}" class="chart" xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}">\n${parts.join('\n')}\n</svg>`;
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
        name: 'pending',
        colour: CHART_COLOURS.podsPending,
        values: record.samples.map((x) => x.pendingPods),
      },
    ],
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
        price(r.minPricePerHour, r.maxPricePerHour),
      ]),
      ['total', ...types.map((c) => String(stats.launchTotals[c])), String(stats.launchCount), ''],
    ],
  )}`;
}

function interruptionsTable(stats: ReportStats): string {
  if (stats.interruptionCount === 0) return '<h2>Interruptions</h2>\n<p>None.</p>';
  return `<h2>Interruptions: ${stats.interruptionCount} (${stats.interruptionsHandled} handled)</h2>\n${htmlTable(
    ['kind', 'count', 'handled', 'not handled'],
    stats.interruptions.map((r) => [r.kind, String(r.count), String(r.handled), String(r.count - r.handled)]),
  )}`;
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
