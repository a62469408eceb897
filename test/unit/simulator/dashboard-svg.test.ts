import { describe, expect, it } from 'vitest';
import { DASHBOARD } from '../../../shared/runtime/dashboard.ts';
import type { MetricPoint } from '../../../shared/runtime/metrics.ts';
import {
  renderDashboardSvg,
  seriesLines,
  statisticOf,
  utcLabel,
} from '../../../shared/simulator/dashboard-svg.ts';
import { CPU_USAGE, flotillaSeries, oneWidgetSpec } from '../runtime/dashboard-fixtures.ts';

const START = Date.parse('2026-11-27T06:00:00Z');
const MIN = 60_000;
const WINDOW = { startMs: START, endMs: START + 120 * MIN, periodMs: 5 * MIN };

const point = (
  name: MetricPoint['name'],
  atMin: number,
  values: number[],
  dimensions: MetricPoint['dimensions'] = {},
): MetricPoint => ({
  name,
  values,
  timeMs: START + atMin * MIN,
  dimensions: { cluster: 'demo', ...dimensions },
});

/** The `<g>` of the widget titled `title`. */
function widgetSvg(svg: string, title: string): string {
  const start = svg.indexOf(`<g class="widget" data-title="${title}">`);
  expect(start, title).toBeGreaterThanOrEqual(0);
  return svg.slice(start, svg.indexOf('</g>', start));
}

const num = (text: string, attribute: string) =>
  Number(new RegExp(`${attribute}="([-\\d.]+)"`).exec(text)?.[1]);

describe('statistics per period', () => {
  const values = [7, 3, 10, 1, 5, 9, 2, 8, 4, 6];
  it.each([
    ['Sum', 55],
    ['SampleCount', 10],
    ['Maximum', 10],
    ['Minimum', 1],
    ['Average', 5.5],
    ['p50', 5],
    ['p90', 9],
    ['p99', 10],
  ] as const)('%s of 1..10 is %d', (statistic, expected) => {
    expect(statisticOf(statistic, values)).toBe(expected);
  });

  it('is no data for a period without values', () => {
    expect(statisticOf('Sum', [])).toBeNull();
  });
});

describe('the lines of a series', () => {
  const cost = flotillaSeries('karpenter_nodepools_cost_total', 'Maximum', ['cluster', 'nodepool'], {
    label: 'cost',
  });
  const points = [
    point('karpenter_nodepools_cost_total', 1, [2], { nodepool: 'b' }),
    point('karpenter_nodepools_cost_total', 2, [3], { nodepool: 'b' }),
    point('karpenter_nodepools_cost_total', 6, [1.5], { nodepool: 'a' }),
    point('karpenter_nodepools_cost_total', 7, [4], { nodepool: 'b' }),
  ];

  it('has one line per NodePool, a value per period, and no data where a period has none', () => {
    const lines = seriesLines(cost, points, WINDOW, DASHBOARD);
    expect(lines.map((l) => l.label)).toEqual(['cost a', 'cost b']);
    expect(lines[0]?.values.slice(0, 3)).toEqual([null, 1.5, null]);
    expect(lines[1]?.values.slice(0, 3)).toEqual([3, 4, null]);
    expect(lines[1]?.values).toHaveLength(24);
  });

  it('sums the NodePools for a total, and rolls every point up under [cluster]', () => {
    expect(
      seriesLines({ ...cost, combine: 'sum' }, points, WINDOW, DASHBOARD)[0]?.values.slice(0, 3),
    ).toEqual([3, 5.5, null]);
    const created = seriesLines(
      flotillaSeries('karpenter_nodeclaims_created_total', 'Sum', ['cluster'], { label: 'created' }),
      [
        point('karpenter_nodeclaims_created_total', 0, [1], { nodepool: 'a', reason: 'provisioned' }),
        point('karpenter_nodeclaims_created_total', 3, [2], { nodepool: 'b', reason: 'underutilized' }),
      ],
      WINDOW,
      DASHBOARD,
    );
    expect(created).toEqual([{ label: 'created', values: [3, ...Array(23).fill(null)] }]);
  });

  it('keeps only the points its filter names, and none outside the window', () => {
    const usage = seriesLines(
      CPU_USAGE,
      [
        point('karpenter_nodepools_usage', 0, [8], { nodepool: 'a', resource_type: 'cpu' }),
        point('karpenter_nodepools_usage', 0, [3.2e10], { nodepool: 'a', resource_type: 'memory' }),
        point('karpenter_nodepools_usage', 500, [99], { nodepool: 'a', resource_type: 'cpu' }),
      ],
      WINDOW,
      DASHBOARD,
    );
    expect(usage).toEqual([{ label: 'usage a', values: [8, ...Array(23).fill(null)] }]);
  });
});

describe('the dashboard picture', () => {
  const points = [
    point('karpenter_pods_unbound_time_seconds', 2, [30, 90]),
    point('karpenter_pods_unbound_time_seconds', 12, [240]),
    point('karpenter_nodepools_cost_total', 1, [1.25], { nodepool: 'default' }),
  ];
  const svg = renderDashboardSvg(DASHBOARD, points, WINDOW);

  it('draws every widget of the spec, once', () => {
    for (const widget of DASHBOARD.rows.flatMap((row) => row.widgets)) {
      expect(svg.split(`data-title="${widget.title}"`)).toHaveLength(2);
    }
    for (const row of DASHBOARD.rows) expect(svg).toContain(`>${row.title}</text>`);
  });

  it('plots each period’s statistic at the middle of the period, on the widget’s scale', () => {
    const widget = widgetSvg(svg, 'Oldest pending pod (s)');
    const plot = /<rect class="plot"[^>]*>/.exec(widget)?.[0] ?? '';
    const [x, y, w, h, yMax] = ['x', 'y', 'width', 'height', 'data-y-max'].map((a) => num(plot, a)) as [
      number,
      number,
      number,
      number,
      number,
    ];
    expect(yMax).toBeGreaterThanOrEqual(240);
    const circles = [...widget.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => [
      Number(m[1]),
      Number(m[2]),
    ]);
    // Maximum per 5-minute period: 90 in 06:00–06:05, 240 in 06:10–06:15.
    const expected = [
      [2.5, 90],
      [12.5, 240],
    ].map(([atMin = 0, v = 0]) => [x + (atMin / 120) * w, y + h - (v / yMax) * h]);
    expect(circles).toHaveLength(2);
    circles.forEach(([cx = 0, cy = 0], i) => {
      expect(cx).toBeCloseTo(expected[i]?.[0] ?? Number.NaN, 0);
      expect(cy).toBeCloseTo(expected[i]?.[1] ?? Number.NaN, 0);
    });
    // The gap between them is a break in the line, not a line through it.
    expect(/d="M[\d.,]+ M[\d.,]+"/.test(widget)).toBe(true);
  });

  it('shows the latest value of a number widget', () => {
    expect(widgetSvg(svg, 'Cost now ($/hour)')).toMatch(/data-label="cost">1.25</);
  });

  it('says "no data" for a widget whose metrics have no points, and marks a series without points', () => {
    expect(widgetSvg(svg, 'Launch failures by reason')).toContain('>no data<');
    expect(widgetSvg(svg, 'Oldest pending pod (s)')).not.toContain('no data');
    expect(widgetSvg(svg, 'Cost now ($/hour)')).toContain('idle (no data)');
    expect(widgetSvg(svg, 'Lambda errors')).toContain('CloudWatch only');
  });

  it('labels the time axis in UTC', () => {
    const widget = widgetSvg(svg, 'Oldest pending pod (s)');
    for (const tick of ['06:00', '06:30', '07:00', '08:00']) expect(widget).toContain(`>${tick}</text>`);
    expect(widget).toContain('>UTC</text>');
    expect(svg).toContain('2026-11-27 06:00 – 2026-11-27 08:00 UTC');
    expect(utcLabel(Date.parse('2026-11-28T00:00:00Z'), 24 * 3_600_000)).toBe('11-28');
    expect(utcLabel(Date.parse('2026-11-27T06:00:30Z'), 30_000)).toBe('06:00:30');
  });

  it('stacks the lines of a stacked widget', () => {
    const spec = oneWidgetSpec(
      [flotillaSeries('karpenter_nodepools_cost_total', 'Maximum', ['cluster', 'nodepool'], { label: 'n' })],
      { title: 'nodes', stacked: true },
    );
    const stacked = renderDashboardSvg(
      spec,
      [
        point('karpenter_nodepools_cost_total', 0, [2], { nodepool: 'a' }),
        point('karpenter_nodepools_cost_total', 0, [3], { nodepool: 'b' }),
      ],
      WINDOW,
    );
    const widget = widgetSvg(stacked, 'nodes');
    const plot = /<rect class="plot"[^>]*>/.exec(widget)?.[0] ?? '';
    const top = num(plot, 'y') + num(plot, 'height') - (5 / num(plot, 'data-y-max')) * num(plot, 'height');
    const ys = [...widget.matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(ys[1]).toBeCloseTo(top, 0);
    // The tooltip gives the NodePool's own value, not the stacked height.
    expect(widget).toContain('n b 06:02 UTC: 3');
  });
});
