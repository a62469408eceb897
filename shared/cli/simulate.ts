import fs from 'node:fs';
import path from 'node:path';
import { parseFeatureGates } from '../runtime/feature-gates.ts';
import { writeReports } from '../simulator/decision-log.ts';
import { simulate } from '../simulator/engine.ts';
import { loadScenario, ScenarioError, ScenarioFileError } from '../simulator/scenario.ts';
import { formatDuration } from '../simulator/stats.ts';
import { type CliIo, type Command, parseCommandArgs, stringValue } from './command.ts';
import { parseTarget } from './explain/command.ts';
import { explainInWorld } from './explain/simulated.ts';
import { renderShadowComparison } from './shadow/render.ts';

const root = path.resolve(import.meta.dirname, '..', '..');

/** The scenario `flotilla simulate` (and `npm start`) runs when given none. */
export const DEFAULT_SCENARIO = path.join(root, 'examples', 'steady-web.yaml');

export const simulateUsage = `Usage: flotilla simulate [scenario.yaml] [--out <dir>] [--known-prices]
                         [--feature-gates <Name=true,...>]
                         [--explain pod <namespace>/<name> | --explain node <name>]

Runs a scenario on the in-memory cluster and cloud with a virtual clock (no AWS, no cluster) and
prints what Flotilla did. Without a scenario, runs examples/steady-web.yaml. Writes the summary
(summary.txt), an HTML report with charts (report.html), the decision log (decisions.jsonl) and
the whole record (record.json) into --out (default .flotilla-sim; a directory, made if missing,
its earlier reports replaced).

Prices come from the bundled catalog. Where it has none it assumes one (spot at a 65% discount
for a type without a Spot Advisor estimate, another region's on-demand price), and the reports
mark those launches with *. --known-prices leaves the offerings with an assumed price out, so
nothing launches at one.

--feature-gates sets Karpenter's feature gates as the stack's \`featureGates\` does (e.g.
NodeOverlay=true,StaticCapacity=true: NodeRepair, ReservedCapacity, SpotToSpotConsolidation,
NodeOverlay, StaticCapacity), over the scenario's \`settings.featureGates\`.

--explain answers what \`flotilla explain\` answers on a real cluster, for the simulator's world at
the end of the run: why a pod waits (per NodePool) and what would launch for it, or why a node
stays. Its answer follows the summary.
`;

export const simulateCommand: Command = {
  name: 'simulate',
  summary: `  simulate   run a scenario (default: examples/steady-web.yaml) on a virtual clock, no AWS or
             cluster needed: \`flotilla simulate [scenario.yaml] [--out <dir>]\`
`,
  usage: simulateUsage,
  run: runSimulate,
};

/** `flotilla simulate`: returns the exit code (0 done, 2 bad arguments or a scenario that cannot run). */
async function runSimulate(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(
    args,
    {
      out: { type: 'string' },
      'known-prices': { type: 'boolean' },
      explain: { type: 'string' },
      'feature-gates': { type: 'string' },
    },
    Number.POSITIVE_INFINITY,
  );
  if ('problem' in parsed) return usageError(io, parsed.problem);
  const gatesText = stringValue(parsed, 'feature-gates');
  const gates = gatesText === undefined ? undefined : parseFeatureGates(gatesText);
  if (gates !== undefined && gates.problems.length > 0) {
    return usageError(io, `--feature-gates: ${gates.problems.join('; ')}`);
  }
  const explainWhat = stringValue(parsed, 'explain');
  const positionals = [...parsed.positionals];
  // With --explain, the last argument names the pod or node; the one before it is the scenario.
  const target =
    explainWhat === undefined ? undefined : parseTarget([explainWhat, ...positionals.splice(-1)]);
  if (target !== undefined && 'problem' in target) return usageError(io, `--explain: ${target.problem}`);
  const [first, second] = positionals;
  if (second !== undefined) return usageError(io, `one scenario at a time, got ${first} and ${second}`);
  const scenarioPath = first;
  const outDir = stringValue(parsed, 'out') ?? '.flotilla-sim';
  // Before the run, so a bad --out costs nothing.
  const outProblem = prepareOutDir(outDir);
  if (outProblem !== undefined) return usageError(io, outProblem);

  let scenario: ReturnType<typeof loadScenario>;
  try {
    const loaded = loadScenario(scenarioPath ?? DEFAULT_SCENARIO);
    scenario =
      gates === undefined
        ? loaded
        : {
            ...loaded,
            settings: {
              ...loaded.settings,
              featureGates: { ...loaded.settings.featureGates, ...gates.gates },
            },
          };
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
  let explained = '';
  const record = await simulate(scenario, {
    ...(target === undefined
      ? {}
      : {
          atEnd: async (world) => {
            explained = await explainInWorld(world, target, scenario.settings);
          },
        }),
    knownPricesOnly: parsed.values['known-prices'] === true,
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
  if (record.shadow !== undefined) {
    // The scenario's shadow Flotilla against the live side, as `flotilla shadow report` prints it.
    const shadow = renderShadowComparison(record.shadow);
    fs.writeFileSync(path.join(outDir, 'shadow.txt'), shadow);
    io.out(`\n${shadow}`);
  }
  io.out(`\nReport (open in a browser): ${paths.html}\nDecision log: ${paths.decisions}\n`);
  if (explained !== '') io.out(`\n${explained}`);
  return 0;
}

/**
 * Makes `dir` (and its parents) if missing and checks that the reports can be written into it.
 * Returns what is wrong, or undefined. Files of an earlier run in it are replaced.
 */
function prepareOutDir(dir: string): string | undefined {
  try {
    if (fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory() === false)
      return `--out ${dir} is a file, not a directory; name a directory (made if missing) or move the file`;
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `--out ${dir} cannot be used for the reports (${reason}); name a directory you can write to`;
  }
}

function usageError(io: CliIo, problem: string): number {
  io.err(`flotilla simulate: ${problem}\n\n${simulateUsage}`);
  return 2;
}
