import fs from 'node:fs';
import { bundledCatalogRegions, DEFAULT_REGION } from '../../adapters/memory/index.ts';
import { type CliIo, type Command, parseCommandArgs, stringValue } from '../command.ts';
import { PlanInputError } from './input.ts';
import { PlanTopologyError, planFromSnapshot } from './plan.ts';
import { renderPlan } from './render.ts';

/** The `plan` lines of `flotilla help`. */
const PLAN_SUMMARY = `  plan       print the NodeClaims Flotilla would launch for a cluster snapshot, why, and the $/hour:
             \`flotilla plan --cluster <file> --nodepools <file>\` (\`flotilla plan --help\` for more)
`;

/** \`flotilla plan --help\`, and what a refused command line is shown. */
export const PLAN_USAGE = `Usage: flotilla plan --cluster <file> --nodepools <file> [--region <region>] [--zones a,b,c]
                     [--known-prices] [--output text|json]

Prints the NodeClaims Flotilla would launch for a cluster snapshot, why, and the $/hour.

  --cluster       output of \`kubectl get pods,nodes,daemonsets -A -o yaml\` (Namespaces and
                  NodeClaims in it are used too). Pending pods are the ones kube-scheduler marked
                  Unschedulable, plus Pending pods it has not looked at yet (no PodScheduled
                  condition); gated pods are not.
  --nodepools     Karpenter v1 NodePools and EC2NodeClasses (multi-document YAML); every NodePool
                  counts as Ready
  --region        prices and instance types from the bundled catalog (${[...bundledCatalogRegions().keys()].join(', ')}); default:
                  the region of the snapshot's Nodes (topology.kubernetes.io/region), else ${DEFAULT_REGION}
  --zones         zones of the EC2NodeClasses' subnets, as letters or names; default: the zones
                  of the snapshot's Nodes, else a,b,c of the region
  --known-prices  leave out the offerings whose price the catalog only assumes (marked *
                  otherwise: no Spot Advisor estimate, another region's price)
  --output        text (default) or json
`;

function readInput(flag: string, file: string): { path: string; text: string } | string {
  try {
    return { path: file, text: fs.readFileSync(file, 'utf8') };
  } catch (error) {
    return `cannot read the --${flag} file ${file}: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export const planCommand: Command = {
  name: 'plan',
  summary: PLAN_SUMMARY,
  usage: PLAN_USAGE,
  run: runPlan,
};

const OPTIONS = {
  cluster: { type: 'string' },
  nodepools: { type: 'string' },
  region: { type: 'string' },
  zones: { type: 'string' },
  output: { type: 'string' },
  'known-prices': { type: 'boolean' },
} as const;

/** `flotilla plan …`: returns the exit code (0 planned, 2 bad arguments or input files). */
async function runPlan(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(args, OPTIONS, 0);
  const refuse = (problem: string) => {
    io.err(`flotilla plan: ${problem}\n\n${PLAN_USAGE}`);
    return 2;
  };
  if ('problem' in parsed) return refuse(parsed.problem);
  const flags = { get: (name: keyof typeof OPTIONS) => stringValue(parsed, name) };
  const clusterFile = flags.get('cluster');
  const poolsFile = flags.get('nodepools');
  if (clusterFile === undefined || poolsFile === undefined)
    return refuse('--cluster and --nodepools are required');
  const output = flags.get('output') ?? 'text';
  if (output !== 'text' && output !== 'json') return refuse(`--output is text or json, got "${output}"`);
  const region = flags.get('region');
  const zones = flags.get('zones')?.split(',');

  const fail = (problem: string) => {
    io.err(`flotilla plan: ${problem}\n`);
    return 2;
  };
  const cluster = readInput('cluster', clusterFile);
  if (typeof cluster === 'string') return fail(cluster);
  const pools = readInput('nodepools', poolsFile);
  if (typeof pools === 'string') return fail(pools);
  try {
    const plan = await planFromSnapshot(cluster, pools, {
      ...(region === undefined ? {} : { region }),
      ...(zones === undefined ? {} : { zones }),
      knownPricesOnly: parsed.values['known-prices'] === true,
    });
    io.out(output === 'json' ? `${JSON.stringify(plan, null, 2)}\n` : renderPlan(plan));
    return 0;
  } catch (error) {
    if (error instanceof PlanTopologyError)
      return error.fromFlags ? refuse(error.message) : fail(error.message);
    if (!(error instanceof PlanInputError)) throw error;
    // One `file:line:column: problem` line per problem, nothing planned.
    io.err(`${error.message}\n`);
    return 2;
  }
}
