import {
  DASHBOARD_COLUMNS,
  type DashboardSpec,
  type DashboardWidget,
  type FlotillaSeries,
  freeDimensions,
  type Statistic,
} from '../runtime/dashboard.ts';
import type { MetricPoint } from '../runtime/metrics.ts';
import { escapeHtml, niceStep, timeStep } from './html-chart.ts';

// The stack's dashboard (shared/runtime/dashboard.ts) drawn from metric points, as one SVG: the
// same rows and widgets, each statistic computed per period as CloudWatch would, on a UTC time
// axis. What the README shows and what a simulator run can be looked at with.

/** The time span drawn, epoch milliseconds; the period defaults to the spec's. */
export interface DashboardWindow {
  readonly startMs: number;
  readonly endMs: number;
  readonly periodMs?: number;
}

/** One line of a widget: its label and its value per period (`null`: no data in that period). */
export interface WidgetLine {
  readonly label: string;
  readonly values: readonly (number | null)[];
}

/** Pixels of one grid column and one grid row (CloudWatch's 24-column grid, widgets 6 rows high). */
export const COLUMN_PX = 50;
export const ROW_PX = 38;
const HEADING_PX = 34;
const GAP = 6;
const PLOT = { left: 56, right: 12, top: 50, bottom: 30 } as const;
const COLOURS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
] as const;

/** The statistic of one period's values, as CloudWatch computes it (percentiles by nearest rank). */
export function statisticOf(statistic: Statistic, values: readonly number[]): number | null {
  if (values.length === 0) return null;
  switch (statistic) {
    case 'Sum':
      return values.reduce((a, b) => a + b, 0);
    case 'SampleCount':
      return values.length;
    case 'Maximum':
      return Math.max(...values);
    case 'Minimum':
      return Math.min(...values);
    case 'Average':
      return values.reduce((a, b) => a + b, 0) / values.length;
    default: {
      const sorted = [...values].sort((a, b) => a - b);
      const rank = Math.ceil((Number(statistic.slice(1)) / 100) * sorted.length);
      return sorted[Math.max(0, rank - 1)] ?? null;
    }
  }
}

function periods(window: DashboardWindow, spec: DashboardSpec): { periodMs: number; count: number } {
  const periodMs = window.periodMs ?? spec.periodSeconds * 1000;
  return { periodMs, count: Math.max(1, Math.ceil((window.endMs - window.startMs) / periodMs)) };
}

/**
 * The lines of one series over the window: every point of the metric that has the series' keys
 * (and the values of its filter) counts, as an EMF line counts under each of its dimension sets;
 * a breakdown has a line per value of its free keys, sorted, or their sum.
 */
export function seriesLines(
  series: FlotillaSeries,
  points: readonly MetricPoint[],
  window: DashboardWindow,
  spec: DashboardSpec,
): WidgetLine[] {
  const { periodMs, count } = periods(window, spec);
  const free = freeDimensions(series);
  const groups = new Map<string, number[][]>();
  for (const point of points) {
    if (point.name !== series.metric || point.timeMs < window.startMs || point.timeMs >= window.endMs)
      continue;
    if (series.dimensions.some((key) => point.dimensions[key] === undefined)) continue;
    const filter = Object.entries(series.filter ?? {});
    if (filter.some(([key, value]) => point.dimensions[key as keyof MetricPoint['dimensions']] !== value))
      continue;
    const group = free.map((key) => point.dimensions[key] ?? '').join(' ');
    const buckets = groups.get(group) ?? Array.from({ length: count }, () => []);
    groups.set(group, buckets);
    buckets[Math.floor((point.timeMs - window.startMs) / periodMs)]?.push(...point.values);
  }
  const lines = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, buckets]) => ({
      label: group === '' ? series.label : `${series.label} ${group}`,
      values: buckets.map((values) => statisticOf(series.statistic, values)),
    }));
  if (series.combine !== 'sum' || lines.length === 0) return lines;
  const values = Array.from({ length: count }, (_, i) => {
    const present = lines
      .map((line) => line.values[i])
      .filter((v): v is number => v !== null && v !== undefined);
    return present.length === 0 ? null : present.reduce((a, b) => a + b, 0);
  });
  return [{ label: series.label, values }];
}

/** A compact number: 1.5k, 2.3M, 4G; up to two decimals below 1,000. */
export function compactNumber(value: number): string {
  const abs = Math.abs(value);
  for (const [size, suffix] of [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const) {
    if (abs >= size) return `${Number((value / size).toFixed(1))}${suffix}`;
  }
  return String(Number(value.toFixed(2)));
}

/** A UTC clock label for a tick `stepMs` apart from the next. */
export function utcLabel(ms: number, stepMs: number): string {
  const iso = new Date(ms).toISOString();
  if (stepMs >= 24 * 3_600_000) return iso.slice(5, 10);
  return stepMs < 60_000 ? iso.slice(11, 19) : iso.slice(11, 16);
}

interface Box {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

/** `text` cut with an ellipsis to fit `widthPx` at about `charPx` a character. */
function clip(text: string, widthPx: number, charPx: number): string {
  const max = Math.floor(widthPx / charPx);
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}

function noData(box: Box, text: string): string {
  return `<text x="${box.x + box.w / 2}" y="${box.y + box.h / 2}" font-size="13" text-anchor="middle" fill="#6b7280">${escapeHtml(text)}</text>`;
}

function legend(lines: readonly WidgetLine[], empty: readonly string[], box: Box): string[] {
  const parts: string[] = [];
  let x = box.x + 8;
  const items = [
    ...lines.map((line, i) => ({ label: line.label, colour: COLOURS[i % COLOURS.length] ?? '#000' })),
    ...empty.map((label) => ({ label: `${label} (no data)`, colour: '#d1d5db' })),
  ];
  for (const item of items) {
    const width = item.label.length * 6 + 22;
    if (x + width > box.x + box.w) break;
    parts.push(
      `<rect x="${x}" y="${box.y + 29}" width="10" height="10" fill="${item.colour}"/>`,
      `<text x="${x + 14}" y="${box.y + 38}" font-size="10" fill="#374151">${escapeHtml(item.label)}</text>`,
    );
    x += width;
  }
  return parts;
}

function graph(
  widget: DashboardWidget,
  lines: readonly WidgetLine[],
  box: Box,
  window: DashboardWindow,
  periodMs: number,
): string[] {
  const plot: Box = {
    x: box.x + PLOT.left,
    y: box.y + PLOT.top,
    w: box.w - PLOT.left - PLOT.right,
    h: box.h - PLOT.top - PLOT.bottom,
  };
  const stacked = widget.stacked === true;
  const drawn = stacked
    ? lines.map((line, l) => ({
        label: line.label,
        values: line.values.map((v, i) =>
          v === null ? null : lines.slice(0, l + 1).reduce((sum, below) => sum + (below.values[i] ?? 0), 0),
        ),
      }))
    : lines;
  const peak = Math.max(0, ...drawn.flatMap((line) => line.values.filter((v): v is number => v !== null)));
  const step = niceStep(peak, 4, false);
  const yMax = Math.max(step, Math.ceil(peak / step) * step);
  const span = window.endMs - window.startMs;
  const xOf = (ms: number) => round(plot.x + ((ms - window.startMs) / span) * plot.w);
  const yOf = (v: number) => round(plot.y + plot.h - (v / yMax) * plot.h);
  const parts: string[] = [
    `<rect class="plot" x="${plot.x}" y="${plot.y}" width="${plot.w}" height="${plot.h}" fill="none" stroke="#e5e7eb" data-y-max="${yMax}"/>`,
  ];
  for (let v = 0; v <= yMax + step / 1000; v += step) {
    parts.push(
      `<line x1="${plot.x}" y1="${yOf(v)}" x2="${plot.x + plot.w}" y2="${yOf(v)}" stroke="#f3f4f6"/>`,
      `<text x="${plot.x - 4}" y="${yOf(v) + 3}" font-size="10" text-anchor="end" fill="#374151">${compactNumber(v)}</text>`,
    );
  }
  // As many ticks as fit their labels (about 48 px each): timeStep gives at most 12 over a span.
  const tStep = timeStep((span * 12) / Math.max(2, Math.floor(plot.w / 48)));
  for (let t = Math.ceil(window.startMs / tStep) * tStep; t <= window.endMs; t += tStep) {
    parts.push(
      `<line x1="${xOf(t)}" y1="${plot.y + plot.h}" x2="${xOf(t)}" y2="${plot.y + plot.h + 4}" stroke="#374151"/>`,
      `<text x="${xOf(t)}" y="${plot.y + plot.h + 15}" font-size="10" text-anchor="middle" fill="#374151">${utcLabel(t, tStep)}</text>`,
    );
  }
  parts.push(
    `<text x="${plot.x + plot.w}" y="${plot.y + plot.h + 27}" font-size="9" text-anchor="end" fill="#6b7280">UTC</text>`,
  );
  if (drawn.length === 0) parts.push(noData(plot, 'no data'));
  drawn.forEach((line, l) => {
    const colour = COLOURS[l % COLOURS.length] ?? '#000';
    // A line through each period's middle, broken where a period has no data.
    let d = '';
    let open = false;
    const marks: string[] = [];
    line.values.forEach((v, i) => {
      if (v === null) {
        open = false;
        return;
      }
      const midMs = window.startMs + (i + 0.5) * periodMs;
      const [x, y] = [xOf(midMs), yOf(v)];
      d += `${open ? 'L' : 'M'}${x},${y} `;
      open = true;
      marks.push(
        `<circle cx="${x}" cy="${y}" r="1.5" fill="${colour}"><title>${escapeHtml(`${line.label} ${utcLabel(midMs, 60_000)} UTC: ${compactNumber(lines[l]?.values[i] ?? v)}`)}</title></circle>`,
      );
    });
    parts.push(
      `<path data-label="${escapeHtml(line.label)}" d="${d.trim()}" fill="none" stroke="${colour}" stroke-width="1.5"/>`,
      ...marks,
    );
  });
  return parts;
}

function numbers(widget: DashboardWidget, lines: readonly WidgetLine[], box: Box): string[] {
  if (lines.length === 0) return [noData(box, 'no data')];
  const width = (box.w - 16) / lines.length;
  return lines.flatMap((line, i) => {
    const last = [...line.values].reverse().find((v) => v !== null);
    const x = box.x + 8 + width * (i + 0.5);
    return [
      `<text x="${x}" y="${box.y + box.h / 2 + 4}" font-size="28" text-anchor="middle" fill="#111827" data-label="${escapeHtml(line.label)}">${last === undefined || last === null ? '–' : compactNumber(last)}</text>`,
      `<text x="${x}" y="${box.y + box.h / 2 + 26}" font-size="11" text-anchor="middle" fill="#374151">${escapeHtml(clip(line.label, width, 6))}</text>`,
      `<text x="${x}" y="${box.y + box.h / 2 + 40}" font-size="10" text-anchor="middle" fill="#6b7280">${escapeHtml(clip(widget.unit, width, 6))}</text>`,
    ];
  });
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * The dashboard as one SVG document, widgets laid out on CloudWatch's grid in the spec's order,
 * drawn from `points` over `window`. A series without points shows "no data"; the AWS metrics of
 * the stack's own queues and Lambdas exist in CloudWatch only and say so.
 */
export function renderDashboardSvg(
  spec: DashboardSpec,
  points: readonly MetricPoint[],
  window: DashboardWindow,
): string {
  const { periodMs } = periods(window, spec);
  const width = DASHBOARD_COLUMNS * COLUMN_PX;
  const parts: string[] = [];
  let y = GAP;
  for (const row of spec.rows) {
    parts.push(
      `<text x="${GAP}" y="${y + 22}" font-size="17" font-weight="600" fill="#111827">${escapeHtml(row.title)}</text>`,
    );
    y += HEADING_PX;
    let column = 0;
    let lineHeight = 0;
    for (const widget of row.widgets) {
      const columns = widget.width ?? 6;
      if (column + columns > DASHBOARD_COLUMNS) {
        y += lineHeight;
        column = 0;
      }
      const h = 6 * ROW_PX;
      const box: Box = { x: column * COLUMN_PX + GAP / 2, y, w: columns * COLUMN_PX - GAP, h: h - GAP };
      column += columns;
      lineHeight = h;
      const flotilla = widget.series.filter((s): s is FlotillaSeries => s.source === 'flotilla');
      // A daily widget draws one value per day of the window.
      const within = widget.days === undefined ? window : { ...window, periodMs: 86_400_000 };
      const perSeries = flotilla.map((s) => ({ series: s, lines: seriesLines(s, points, within, spec) }));
      const lines = perSeries.flatMap((s) => s.lines);
      const empty = perSeries.filter((s) => s.lines.length === 0).map((s) => s.series.label);
      parts.push(
        `<g class="widget" data-title="${escapeHtml(widget.title)}">`,
        `<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="4" fill="#ffffff" stroke="#d1d5db"/>`,
        `<text x="${box.x + 8}" y="${box.y + 18}" font-size="12" font-weight="600" fill="#111827">${escapeHtml(clip(widget.title, box.w - 16, 7))}</text>`,
      );
      if (flotilla.length === 0) {
        parts.push(
          noData(box, 'no data'),
          `<text x="${box.x + box.w / 2}" y="${box.y + box.h / 2 + 18}" font-size="10" text-anchor="middle" fill="#6b7280">${escapeHtml(clip('AWS metric: in CloudWatch only', box.w - 8, 5.5))}</text>`,
        );
      } else {
        parts.push(...legend(lines, empty, box));
        parts.push(
          ...(widget.kind === 'number'
            ? numbers(widget, lines, box)
            : graph(widget, lines, box, window, periodMs)),
        );
      }
      parts.push('</g>');
    }
    y += lineHeight + GAP;
  }
  const from = new Date(window.startMs).toISOString().slice(0, 16).replace('T', ' ');
  const to = new Date(window.endMs).toISOString().slice(0, 16).replace('T', ' ');
  parts.push(
    `<text x="${width - GAP}" y="${y + 12}" font-size="10" text-anchor="end" fill="#6b7280">${from} – ${to} UTC, ${compactNumber(periodMs / 1000)} s periods</text>`,
  );
  const height = y + 20;
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif">\n<rect width="${width}" height="${height}" fill="#f9fafb"/>\n${parts.join('\n')}\n</svg>\n`;
}
