import fs from 'node:fs';
import path from 'node:path';
import { writeReports } from '../simulator/decision-log.ts';
import { simulate } from '../simulator/engine.ts';
import { loadScenario, ScenarioError, ScenarioFileError } from '../simulator/scenario.ts';
import { formatDuration } from '../simulator/stats.ts';
import { type CliIo, type Command, parseCommandArgs, stringValue } from './command.ts';

const root = path.resolve(import.meta.dirname, '..', '..');

/** The scenario `flotilla simulate` (and `npm start`) runs when given none. */
export const DEFAULT_SCENARIO = path.join(root, 'examples', 'steady-web.yaml');

export const simulateUsage = `Usage: flotilla simulate [scenario.yaml] [--out <dir>]

Runs a scenario on the in-memory cluster and cloud with a virtual clock (no AWS, no cluster) and
prints what Flotilla did. Without a scenario, runs examples/steady-web.yaml. Writes the summary
(summary.txt), an HTML report with charts (report.html), the decision log (decisions.jsonl) and
the whole record (record.json) into --out (default .flotilla-sim).
`;

export const simulateCommand: Command = {
  name: 'simulate',
  summary: `  simulate   run a scenario (default: examples/steady-web.yaml) on a virtual clock, no AWS or
             cluster needed: \`flotilla simulate [scenario.yaml] [--out <dir>]\`
`,
  run: runSimulate,
};

/** `flotilla simulate`: returns the exit code (0 done, 2 bad arguments or a scenario that cannot run). */
async function runSimulate(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(
    args,
    { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    Number.POSITIVE_INFINITY,
  );
  if ('problem' in parsed) return usageError(io, parsed.problem);
  const [first, second] = parsed.positionals;
  if (second !== undefined) return usageError(io, `one scenario at a time, got ${first} and ${second}`);
  if (parsed.values['help'] === true) {
    io.out(simulateUsage);
    return 0;
  }
  const scenarioPath = first;
  const outDir = stringValue(parsed, 'out') ?? '.flotilla-sim';

  let scenario: ReturnType<typeof loadScenario>;
  try {
    scenario = loadScenario(scenarioPath ?? DEFAULT_SCENARIO);
  } catch (error) {
    if (!(error instanceof ScenarioError || error instanceof ScenarioFileError)) throw error;
    // One `file:line:column: field: problem` line per problem, nothing run.
    io.err(`${error.message}\n`);
    return 2;
  }

  io.err(`Simulating ${scenario.name} (${formatDuration(scenario.durationMs)} of virtual time)…\n`);
  const step = Math.max(scenario.sampleIntervalMs, Math.ceil(scenario.durationMs / 12 / 60_000) * 60_000);
  let lastReported = -1;
  const started = Date.now();
  const record = await simulate(scenario, {
    onProgress: (p) => {
      const bucket = Math.floor(p.offsetMs / step);
      if (bucket === lastReported && p.offsetMs < p.durationMs) return;
      lastReported = bucket;
      io.err(
        `  ${formatDuration(p.offsetMs).padStart(7)} / ${formatDuration(p.durationMs)}  nodes ${String(p.nodes).padStart(3)}  pending ${String(p.pendingPods).padStart(4)}  running ${String(p.runningPods).padStart(4)}  $${p.costPerHour.toFixed(2)}/h\n`,
      );
    },
  });
  io.err(`Done in ${((Date.now() - started) / 1000).toFixed(1)}s.\n\n`);

  const paths = writeReports(record, outDir);
  fs.writeFileSync(path.join(outDir, 'record.json'), `${JSON.stringify(record)}\n`);
  io.out(fs.readFileSync(paths.summary, 'utf8'));
  io.out(`\nReport (open in a browser): ${paths.html}\nDecision log: ${paths.decisions}\n`);
  return 0;
}

function usageError(io: CliIo, problem: string): number {
  io.err(`flotilla simulate: ${problem}\n\n${simulateUsage}`);
  return 2;
}
