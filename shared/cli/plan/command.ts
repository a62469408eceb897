import fs from 'node:fs';
import { type CliIo, type Command, parseCommandArgs, stringValue } from '../command.ts';
import { PlanInputError } from './input.ts';
import { planFromSnapshot } from './plan.ts';
import { renderPlan } from './render.ts';

/** The `plan` lines of `flotilla help`. */
export const PLAN_USAGE = `  plan       print the NodeClaims Flotilla would launch for a cluster snapshot, why, and the $/hour:
               flotilla plan --cluster <file> --nodepools <file> [--region us-west-2]
                             [--zones a,b,c] [--output text|json]
             --cluster    output of \`kubectl get pods,nodes,daemonsets -A -o yaml\` (Namespaces
                          and NodeClaims in it are used too). Pending pods are the ones
                          kube-scheduler marked Unschedulable, plus Pending pods it has not
                          looked at yet (no PodScheduled condition); gated pods are not.
             --nodepools  Karpenter v1 NodePools and EC2NodeClasses (multi-document YAML);
                          every NodePool counts as Ready
             --region     prices and instance types from the bundled catalog (default us-west-2)
             --zones      zones of the EC2NodeClasses' subnets, as letters or names
                          (default a,b,c of the region)
`;

function readInput(flag: string, file: string): { path: string; text: string } | string {
  try {
    return { path: file, text: fs.readFileSync(file, 'utf8') };
  } catch (error) {
    return `cannot read the --${flag} file ${file}: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export const planCommand: Command = { name: 'plan', summary: PLAN_USAGE, run: runPlan };

const OPTIONS = {
  cluster: { type: 'string' },
  nodepools: { type: 'string' },
  region: { type: 'string' },
  zones: { type: 'string' },
  output: { type: 'string' },
} as const;

/** `flotilla plan …`: returns the exit code (0 planned, 2 bad arguments or input files). */
async function runPlan(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(args, OPTIONS, 0);
  const refuse = (problem: string) => {
    io.err(`flotilla plan: ${problem}\n\nUsage:\n${PLAN_USAGE}`);
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
  const region = flags.get('region') ?? 'us-west-2';
  const zones = (flags.get('zones') ?? 'a,b,c')
    .split(',')
    .map((z) => z.trim())
    .filter((z) => z !== '')
    .map((z) => (/^[a-z]$/.test(z) ? `${region}${z}` : z));

  const fail = (problem: string) => {
    io.err(`flotilla plan: ${problem}\n`);
    return 2;
  };
  const cluster = readInput('cluster', clusterFile);
  if (typeof cluster === 'string') return fail(cluster);
  const pools = readInput('nodepools', poolsFile);
  if (typeof pools === 'string') return fail(pools);
  try {
    const plan = await planFromSnapshot(cluster, pools, { region, zones });
    io.out(output === 'json' ? `${JSON.stringify(plan, null, 2)}\n` : renderPlan(plan));
    return 0;
  } catch (error) {
    if (!(error instanceof PlanInputError)) throw error;
    // One `file:line:column: problem` line per problem, nothing planned.
    io.err(`${error.message}\n`);
    return 2;
  }
}
