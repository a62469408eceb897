// Simulator benchmark: `npm run bench:sim`. Runs every scenario in examples/ three times in this
// process (after one warm-up run of the first) and prints a Markdown table with the median real
// time of `simulate()` alone; parsing and process start are not counted. The machine is shared,
// timings are noisy.
// Two checks ride on those runs, too heavy for the unit tests on a busy two-core machine: every
// example gives the same record in its three runs (the unit tests check one example), and the
// daily curve's report says consolidation saved about what the same day costs without it (the day,
// compressed, run again with consolidation off). Either failing sets exit code 1.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { simulate } from '../../shared/simulator/engine.ts';
import type { SimulationRecord } from '../../shared/simulator/record.ts';
import { loadScenario, parseScenario } from '../../shared/simulator/scenario.ts';
import { computeCost, computeReportStats, formatUsd } from '../../shared/simulator/stats.ts';
import { renderSummary } from '../../shared/simulator/summary.ts';

const examples = path.resolve(import.meta.dirname, '../../examples');
const files = readdirSync(examples)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

const first = files[0];
if (first !== undefined) await simulate(loadScenario(path.join(examples, first)));

const failures: string[] = [];

console.log(
  '| scenario | virtual time | pods bound | nodes launched | decisions | real time (median of 3) | same record in the 3 runs |',
);
console.log('|---|---:|---:|---:|---:|---:|---|');
for (const file of files) {
  const scenario = loadScenario(path.join(examples, file));
  const times: number[] = [];
  const runs: SimulationRecord[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    runs.push(await simulate(scenario));
    times.push(performance.now() - started);
  }
  const [record] = runs;
  if (record === undefined) continue;
  const same = runs.every((r) => isDeepStrictEqual(r, record));
  if (!same) failures.push(`${scenario.name}: its three runs gave different records`);
  const median = [...times].sort((a, b) => a - b)[1] ?? 0;
  console.log(
    `| ${scenario.name} | ${scenario.durationMs / 60_000} min | ${record.podWaitsMs.length} | ${record.launches.length} | ${record.decisions.length} | ${(median / 1000).toFixed(2)} s | ${same ? 'yes' : 'NO'} |`,
  );
}

// The daily curve: what the report says consolidation saved, against the same day without it. Both
// on the day compressed into 4 hours (each hour becomes 10 minutes), as the unit tests ran it.
const dailyFile = 'daily-curve.yaml';
const dailyText = readFileSync(path.join(examples, dailyFile), 'utf8');
const compressedDay = (consolidateAfter: string) =>
  dailyText
    .replace('duration: 24h', 'duration: 4h')
    .replace('sampleInterval: 5m', 'sampleInterval: 1m')
    .replace('consolidateAfter: 5m', `consolidateAfter: ${consolidateAfter}`)
    .replace(/at: (\d+)h/g, (_, hours: string) => `at: ${Number(hours) * 10}m`);
const withText = compressedDay('5m');
if (
  !withText.includes('duration: 4h') ||
  !withText.includes('consolidateAfter: 5m') ||
  !compressedDay('Never').includes('consolidateAfter: Never')
) {
  failures.push(`${dailyFile}: its day could not be compressed (duration, consolidateAfter)`);
} else {
  const daily = await simulate(parseScenario(withText));
  const without = await simulate(parseScenario(compressedDay('Never')));
  const rows = computeReportStats(daily).savings;
  const saved = rows.reduce((sum, row) => sum + row.usd, 0);
  const withCost = computeCost(daily);
  const withoutCost = computeCost(without);
  const difference = (withoutCost?.totalUsd ?? 0) - (withCost?.totalUsd ?? 0);
  const ratio = difference > 0 ? saved / difference : Number.NaN;
  const nightCheaper = (withCost?.finalPerHour ?? 0) < (withoutCost?.finalPerHour ?? 0);
  console.log(
    `\n${daily.scenario.name}, its day in 4 hours: the report says consolidation saved $${saved.toFixed(2)}; ` +
      `the day costs $${difference.toFixed(2)} more without it (ratio ${ratio.toFixed(3)}); the night after costs ` +
      `$${(withCost?.finalPerHour ?? 0).toFixed(4)}/h with it, $${(withoutCost?.finalPerHour ?? 0).toFixed(4)}/h without`,
  );
  if (!(ratio > 0.8 && ratio < 1.25))
    failures.push(`${dailyFile}: saved/difference ${ratio} is outside 0.8–1.25`);
  if (!nightCheaper) failures.push(`${dailyFile}: the night after is not cheaper with consolidation`);
  if (daily.unschedulable.length > 0 || without.unschedulable.length > 0) {
    failures.push(`${dailyFile}: pods left unschedulable`);
  }
  if (!rows.some((row) => row.reason === 'Underutilized'))
    failures.push(`${dailyFile}: no Underutilized savings`);
  if (rows.some((row) => !(row.perHour > 0))) failures.push(`${dailyFile}: a savings row of $0/h or less`);
  if (!renderSummary(daily).includes(`Saved by consolidation: ${formatUsd(saved)} (`)) {
    failures.push(`${dailyFile}: the summary does not say what consolidation saved`);
  }
}

for (const failure of failures) console.error(`bench:sim check failed: ${failure}`);
if (failures.length > 0) process.exitCode = 1;
