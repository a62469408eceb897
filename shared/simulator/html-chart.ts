import type { SimulationRecord } from './record.ts';
import { formatClock, largest, spansDays } from './stats.ts';

// The report's charts: step areas and lines over virtual time, drawn as inline SVG with nice
// ticks on both axes.

/** Chart size in SVG units (the page scales it). */
export const WIDTH = 1200;
export const HEIGHT = 320;
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

export interface Series {
  readonly name: string;
  readonly colour: string;
  readonly values: readonly number[];
}

export interface ChartSpec {
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

const round = (n: number) => Math.round(n * 10) / 10;

export function chart(spec: ChartSpec): string {
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
  // x axis ticks at whole multiples of the step in UTC (budgets' schedules are UTC cron); the
  // date under the first tick and under each tick of a new day when the run spans days.
  const tStep = timeStep(endMs - startMs);
  const withDates = spansDays(record);
  let previousDate = '';
  for (let t = Math.ceil(startMs / tStep) * tStep; t <= endMs; t += tStep) {
    const xx = x(t);
    parts.push(
      `<line x1="${xx}" y1="${MARGIN.top + plotH}" x2="${xx}" y2="${MARGIN.top + plotH + 5}" stroke="#374151" stroke-width="1"/>`,
      `<text x="${xx}" y="${MARGIN.top + plotH + 19}" font-size="12" text-anchor="middle" fill="#374151">${formatClock(t, { seconds: tStep < 60_000 })}</text>`,
    );
    const date = new Date(t).toISOString().slice(0, 10);
    if (withDates && date !== previousDate) {
      parts.push(
        `<text x="${xx}" y="${MARGIN.top + plotH + 33}" font-size="11" text-anchor="middle" fill="#6b7280">${date}</text>`,
      );
    }
    previousDate = date;
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
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 4}" font-size="12" text-anchor="middle" fill="#374151">time (UTC, hh:mm${tStep < 60_000 ? ':ss' : ''})</text>`,
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
