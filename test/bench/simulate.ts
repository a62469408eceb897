// Simulator benchmark: `npm run bench:sim`. Runs every scenario in examples/ three times in this
// process (after one warm-up run of the first) and prints a Markdown table with the median real
// time of `simulate()` alone; parsing and process start are not counted. The machine is shared,
// timings are noisy.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { simulate } from '../../shared/simulator/engine.ts';
import { loadScenario } from '../../shared/simulator/scenario.ts';

const examples = path.resolve(import.meta.dirname, '../../examples');
const files = readdirSync(examples)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

const first = files[0];
if (first !== undefined) await simulate(loadScenario(path.join(examples, first)));

console.log(
  '| scenario | virtual time | pods bound | nodes launched | decisions | real time (median of 3) |',
);
console.log('|---|---:|---:|---:|---:|---:|');
for (const file of files) {
  const scenario = loadScenario(path.join(examples, file));
  const times: number[] = [];
  let summary = { pods: 0, nodes: 0, decisions: 0 };
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const record = await simulate(scenario);
    times.push(performance.now() - started);
    summary = {
      pods: record.podWaitsMs.length,
      nodes: record.launches.length,
      decisions: record.decisions.length,
    };
  }
  const median = [...times].sort((a, b) => a - b)[1] ?? 0;
  console.log(
    `| ${scenario.name} | ${scenario.durationMs / 60_000} min | ${summary.pods} | ${summary.nodes} | ${summary.decisions} | ${(median / 1000).toFixed(2)} s |`,
  );
}
