import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeReports } from '../../shared/simulator/decision-log.ts';
import { CHART_COLOURS } from '../../shared/simulator/html-report.ts';
import type { SimulationRecord } from '../../shared/simulator/record.ts';
import { chromium, screenshot } from '../harness/chromium.ts';
import { projectRoot } from '../harness/paths.ts';
import { type ColourRegion, decodePng, findColour, type Image } from '../harness/png.ts';
import { dayRecord, emptyRecord } from '../unit/simulator/records.ts';

// The HTML report opened in a real browser (headless Chromium): the screenshot must show the three
// charts, found by the colours html-report.ts documents for them. Screenshots stay in
// .cache/test-results/report-chromium/ for a person to look at.

const outDir = path.join(projectRoot, '.cache', 'test-results', 'report-chromium');
const WIDTH = 1280;
const HEIGHT = 2000;

async function render(record: SimulationRecord, name: string): Promise<Image> {
  const dir = path.join(outDir, name);
  const paths = writeReports(record, dir);
  const png = path.join(outDir, `${name}.png`);
  await screenshot(paths.html, png, { width: WIDTH, height: HEIGHT });
  return decodePng(fs.readFileSync(png));
}

function box(region: ColourRegion) {
  if (region.box === undefined) throw new Error(`colour not found (${region.count} pixels)`);
  return region.box;
}

beforeAll(async () => {
  await chromium();
}, 15 * 60_000);

describe('HTML report in headless Chromium', () => {
  it('shows the nodes, cost and pods charts, one under the other', async () => {
    const image = await render(dayRecord(), 'web-day');
    expect([image.width, image.height]).toEqual([WIDTH, HEIGHT]);

    const onDemand = findColour(image, CHART_COLOURS.nodesOnDemand);
    const spot = findColour(image, CHART_COLOURS.nodesSpot);
    const costLine = findColour(image, CHART_COLOURS.costLine);
    const costArea = findColour(image, CHART_COLOURS.costArea);
    const running = findColour(image, CHART_COLOURS.podsRunning);
    const pending = findColour(image, CHART_COLOURS.podsPending);

    // Stacked node areas and the area under the cost line fill tens of thousands of pixels; the
    // 3-pixel lines a few thousand. A legend swatch alone is 196.
    expect(onDemand.count).toBeGreaterThan(20_000);
    expect(spot.count).toBeGreaterThan(50_000);
    expect(costArea.count).toBeGreaterThan(50_000);
    expect(costLine.count).toBeGreaterThan(3_000);
    expect(running.count).toBeGreaterThan(3_000);
    expect(pending.count).toBeGreaterThan(1_500);

    // Each series spans the run: most of the 1,104-pixel plot width.
    for (const region of [onDemand, spot, costLine, costArea, running, pending]) {
      const b = box(region);
      expect(b.right - b.left).toBeGreaterThan(900);
    }

    // The charts in page order, not overlapping: nodes, then cost, then pods.
    const nodesBottom = Math.max(box(onDemand).bottom, box(spot).bottom);
    const costTop = Math.min(box(costLine).top, box(costArea).top);
    const costBottom = Math.max(box(costLine).bottom, box(costArea).bottom);
    const podsTop = Math.min(box(running).top, box(pending).top);
    expect(nodesBottom).toBeLessThan(costTop);
    expect(costBottom).toBeLessThan(podsTop);
    expect(Math.max(box(running).bottom, box(pending).bottom)).toBeLessThan(HEIGHT);
    // Spot is stacked on top of on-demand: its area reaches higher.
    expect(box(spot).top).toBeLessThanOrEqual(box(onDemand).top);
  });

  it('shows only the legends when the run has no samples', async () => {
    const image = await render(emptyRecord(), 'empty');
    for (const colour of [
      CHART_COLOURS.nodesOnDemand,
      CHART_COLOURS.nodesSpot,
      CHART_COLOURS.costLine,
      CHART_COLOURS.podsRunning,
      CHART_COLOURS.podsPending,
    ]) {
      const region = findColour(image, colour);
      // The 14 × 14 legend swatch, nothing else.
      expect(region.count).toBeGreaterThan(100);
      expect(region.count).toBeLessThan(400);
    }
    expect(findColour(image, CHART_COLOURS.costArea).count).toBe(0);
  });
});
