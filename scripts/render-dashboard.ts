/**
 * Draws the stack's dashboard (shared/runtime/dashboard.ts) from the metric points of a simulator
 * run, as the SVG the README shows:
 *
 *   npx tsx scripts/render-dashboard.ts .flotilla-sim/record.json docs/dashboard.svg
 *
 * The record is the `record.json` that `flotilla simulate` writes; its `metrics` are the points the
 * decision writer emitted during the run, drawn over the scenario's span.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { DASHBOARD } from '../shared/runtime/dashboard.ts';
import {
  METRICS,
  MetricDimension,
  type MetricDimensionKey,
  type MetricName,
} from '../shared/runtime/metrics.ts';
import { renderDashboardSvg } from '../shared/simulator/dashboard-svg.ts';

const recordSchema = z.object({
  scenario: z.object({ startMs: z.number(), durationMs: z.number().positive() }),
  metrics: z.array(
    z.object({
      name: z.enum(Object.keys(METRICS) as [MetricName, ...MetricName[]]),
      values: z.array(z.number()),
      timeMs: z.number(),
      dimensions: z.partialRecord(
        z.enum(Object.values(MetricDimension) as [MetricDimensionKey, ...MetricDimensionKey[]]),
        z.string(),
      ),
    }),
  ),
});

const [recordPath, svgPath, extra] = process.argv.slice(2);
if (recordPath === undefined || svgPath === undefined || extra !== undefined) {
  process.stderr.write('usage: npx tsx scripts/render-dashboard.ts <record.json> <out.svg>\n');
  process.exit(2);
}
const parsed = recordSchema.safeParse(JSON.parse(fs.readFileSync(recordPath, 'utf8')));
if (!parsed.success) {
  process.stderr.write(
    `${recordPath} is not a simulator record with metric points: ${parsed.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
      .join('; ')}\n`,
  );
  process.exit(1);
}
const { scenario, metrics } = parsed.data;
fs.writeFileSync(
  svgPath,
  renderDashboardSvg(DASHBOARD, metrics, {
    startMs: scenario.startMs,
    endMs: scenario.startMs + scenario.durationMs,
  }),
);
process.stdout.write(`${svgPath}: ${metrics.length} metric points drawn\n`);
