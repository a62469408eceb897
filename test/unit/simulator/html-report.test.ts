import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DecisionLogError, toJsonLines, writeReports } from '../../../shared/simulator/decision-log.ts';
import {
  CHART_COLOURS,
  CHART_IDS,
  escapeHtml,
  niceStep,
  renderHtmlReport,
  timeStep,
} from '../../../shared/simulator/html-report.ts';
import { disruptionSeries } from '../../../shared/simulator/stats.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { dayRecord, disruptedRecord, emptyRecord, START_MS, unschedulablePod } from './records.ts';

/** The `<svg id="…">…</svg>` element of one chart. */
function svg(html: string, id: string): string {
  const match = new RegExp(`<svg id="${id}"[\\s\\S]*?</svg>`).exec(html);
  if (match === null) throw new Error(`no chart ${id}`);
  return match[0];
}

describe('renderHtmlReport', () => {
  const html = renderHtmlReport(dayRecord());

  it('is one self-contained page: no scripts, no external resources', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('draws the three charts with a title, axes, ticks and a legend in their documented colours', () => {
    const nodes = svg(html, CHART_IDS.nodes);
    expect(nodes).toContain('<title>Nodes over time, by capacity type</title>');
    expect(nodes).toContain(`fill="${CHART_COLOURS.nodesOnDemand}"`);
    expect(nodes).toContain(`fill="${CHART_COLOURS.nodesSpot}"`);
    expect(nodes).not.toContain(CHART_COLOURS.nodesReserved);
    // y ticks 0, 3, …, 12 for at most 12 nodes; x ticks every 30 minutes over 6 hours.
    for (const tick of ['>0<', '>3<', '>6<', '>9<', '>12<']) expect(nodes).toContain(tick);
    for (const tick of ['>00:00<', '>00:30<', '>03:00<', '>06:00<']) expect(nodes).toContain(tick);
    expect(nodes).toContain('>running nodes<');
    expect(nodes).toContain('>time (UTC, hh:mm)<');
    // One day: no dates under the ticks.
    expect(nodes).not.toContain('>2025-03-03<');
    expect(nodes).toContain('>on-demand<');
    expect(nodes).toContain('>spot<');

    const cost = svg(html, CHART_IDS.cost);
    expect(cost).toContain(`stroke="${CHART_COLOURS.costLine}"`);
    expect(cost).toContain(`fill="${CHART_COLOURS.costArea}"`);
    for (const tick of ['>$0.00<', '>$0.50<', '>$1.50<', '>$2.00<']) expect(cost).toContain(tick);

    const pods = svg(html, CHART_IDS.pods);
    expect(pods).toContain(`stroke="${CHART_COLOURS.podsPending}"`);
    expect(pods).toContain(`stroke="${CHART_COLOURS.podsRunning}"`);
    expect(pods).toContain('>pending<');
    expect(pods).toContain('>running<');
  });

  it('uses each chart colour only in its own chart', () => {
    const outside = html.replace(/<svg id="chart-[\s\S]*?<\/svg>/g, '');
    for (const colour of Object.values(CHART_COLOURS)) expect(outside).not.toContain(colour);
  });

  it('draws the stacked node areas up to the running nodes of each sample', () => {
    const record = {
      ...emptyRecord(),
      samples: [0, 1, 2].map((i) => ({
        atMs: START_MS + i * 1_200_000,
        nodes: i + 1,
        nodesByCapacityType: { 'on-demand': 1, spot: i, reserved: i === 2 ? 1 : 0 },
        costPerHour: i,
        pendingPods: 0,
        runningPods: 0,
      })),
    };
    const nodes = svg(renderHtmlReport(record), CHART_IDS.nodes);
    // 0..4 nodes over a 228-pixel-high plot: on-demand steady at 1, spot 0 → 1 → 2, reserved only at the end.
    expect(nodes).toMatch(
      new RegExp(
        `<path d="M72,\\d+(\\.\\d)? H440 V\\d+(\\.\\d)? H808 V\\d+(\\.\\d)? H1176 [^"]*" fill="${CHART_COLOURS.nodesOnDemand}"`,
      ),
    );
    expect(nodes).toContain(`fill="${CHART_COLOURS.nodesReserved}"`);
    expect(nodes).toContain('>reserved<');
  });

  it('has the summary tables and points to the decision log', () => {
    expect(html).toContain('<h2>Nodes launched: 16</h2>');
    expect(html).toContain(
      '<tr><td>c7g.xlarge</td><td>1</td><td>3</td><td>4</td><td>$0.0512 to $0.1450</td></tr>',
    );
    expect(html).toContain('<h2>Interruptions: 3 (2 handled)</h2>');
    expect(html).toContain('<tr><td>rebalance</td><td>1</td><td>0</td><td>1</td></tr>');
    expect(html).toContain('<h2>Pods left unschedulable: 3</h2>');
    expect(html).toContain('<a href="decisions.jsonl">decisions.jsonl</a>');
    expect(html).toContain('<b>$4.09</b>total cost');
    expect(html).toContain('<b>1m11s / 1m38s</b>pod wait p50 / p95');
  });

  it('escapes every text from the record', () => {
    const evil = '<script>alert("x")</script>&';
    const record = {
      ...dayRecord({
        name: evil,
        unschedulable: [unschedulablePod('ns', '<img onerror=1>', [`nodePool "<b>": ${evil}`])],
      }),
    };
    const out = renderHtmlReport(record);
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('<b>":');
    expect(out).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;');
    expect(escapeHtml(`a<b>&"c'`)).toBe('a&lt;b&gt;&amp;&quot;c&#39;');
  });

  it('draws the nodes disrupted so far, one line per reason that occurred', () => {
    const record = disruptedRecord();
    expect(disruptionSeries(record)).toEqual([
      { reason: 'Empty', values: [0, 0, 1] },
      { reason: 'Drifted', values: [0, 1, 2] },
      { reason: 'Interrupted', values: [0, 0, 1] },
    ]);
    const out = renderHtmlReport(record);
    const chart = svg(out, CHART_IDS.disruptions);
    expect(chart).toContain('<title>Nodes disrupted over time, by reason</title>');
    for (const colour of [
      CHART_COLOURS.disruptedEmpty,
      CHART_COLOURS.disruptedDrifted,
      CHART_COLOURS.disruptedInterrupted,
    ]) {
      expect(chart).toContain(`stroke="${colour}"`);
    }
    expect(chart).not.toContain(CHART_COLOURS.disruptedExpired);
    for (const name of ['>Empty<', '>Drifted<', '>Interrupted<']) expect(chart).toContain(name);
    expect(out).toContain('<b>4</b>nodes disrupted');
    expect(out).toContain('<h2>Disruptions: 4</h2>');
  });

  it('renders a run without samples with empty charts', () => {
    const out = renderHtmlReport(emptyRecord());
    for (const id of [CHART_IDS.nodes, CHART_IDS.cost, CHART_IDS.pods]) {
      expect(svg(out, id)).toContain('>no samples<');
    }
    // No disruptions, no chart of them.
    expect(out).not.toContain(CHART_IDS.disruptions);
    expect(out).toContain('<h2>Disruptions</h2>\n<p>None.</p>');
    expect(out).toContain('<b>no pods</b>pod wait p50 / p95');
  });
});

describe('axis steps', () => {
  it.each([
    [12, 5, true, 3],
    [1.71, 5, false, 0.5],
    [125, 5, true, 25],
    [0.3, 5, false, 0.1],
    [3, 5, true, 1],
    [0, 5, true, 1],
  ])('niceStep(%d, %d, %s) is %d', (max, count, integer, step) => {
    expect(niceStep(max, count, integer)).toBeCloseTo(step, 10);
  });

  it.each([
    [6 * 3_600_000, 30 * 60_000],
    [3_600_000, 5 * 60_000],
    [120_000, 10_000],
    [7 * 24 * 3_600_000, 24 * 3_600_000],
  ])('timeStep(%d) is %d', (span, step) => {
    expect(timeStep(span)).toBe(step);
  });
});

describe('decision log', () => {
  it('writes one JSON object per decision with its virtual time first', () => {
    const record = dayRecord();
    const text = toJsonLines(record);
    const rows = text.trimEnd().split('\n');
    expect(rows).toHaveLength(record.decisions.length);
    const first = JSON.parse(rows[0] ?? '') as Record<string, unknown>;
    expect(Object.keys(first).slice(0, 2)).toEqual(['time', 'atMs']);
    expect(first).toMatchObject({
      time: '2025-03-03T00:00:00.000Z',
      atMs: START_MS,
      message: 'launch decided',
    });
    expect(rows.map((r) => (JSON.parse(r) as { atMs: number }).atMs)).toEqual(
      record.decisions.map((d) => d['atMs']),
    );
    expect(text.endsWith('\n')).toBe(true);
    expect(toJsonLines(emptyRecord())).toBe('');
  });

  it('refuses a decision without its virtual time', () => {
    const record = {
      ...emptyRecord(),
      decisions: [{ atMs: START_MS, message: 'ok' }, { message: 'launch decided' }],
    };
    expect(() => toJsonLines(record)).toThrow(DecisionLogError);
    expect(() => toJsonLines(record)).toThrow(/decision 1 \("launch decided"\) has atMs null/);
  });

  it('writes the three report files and returns their paths', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-report-'));
    try {
      const record = dayRecord();
      const paths = writeReports(record, path.join(dir, 'out'));
      expect(paths).toEqual({
        summary: path.join(dir, 'out', 'summary.txt'),
        html: path.join(dir, 'out', 'report.html'),
        decisions: path.join(dir, 'out', 'decisions.jsonl'),
      });
      expect(fs.readFileSync(paths.summary, 'utf8')).toBe(renderSummary(record));
      expect(fs.readFileSync(paths.html, 'utf8')).toBe(renderHtmlReport(record));
      expect(fs.readFileSync(paths.decisions, 'utf8')).toBe(toJsonLines(record));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
