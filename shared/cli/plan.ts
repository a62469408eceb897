import fs from 'node:fs';
import { PlanInputError, planFromSnapshot, renderPlan } from '../simulator/plan.ts';
import type { CliIo } from './main.ts';

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

const FLAGS = new Set(['cluster', 'nodepools', 'region', 'zones', 'output']);

function parseFlags(args: readonly string[]): Map<string, string> | string {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const match = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    if (match === null) return `unexpected argument "${arg}"`;
    const name = match[1] ?? '';
    if (!FLAGS.has(name)) return `unknown option --${name}`;
    const value = match[2] ?? args[++i];
    if (value === undefined || value === '') return `--${name} needs a value`;
    flags.set(name, value);
  }
  return flags;
}

function readInput(flag: string, file: string): { path: string; text: string } | string {
  try {
    return { path: file, text: fs.readFileSync(file, 'utf8') };
  } catch (error) {
    return `cannot read the --${flag} file ${file}: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** `flotilla plan …`: returns the exit code (0 planned, 1 bad input file, 2 bad arguments). */
export async function planCommand(args: readonly string[], io: CliIo): Promise<number> {
  const flags = parseFlags(args);
  const refuse = (problem: string) => {
    io.err(`flotilla plan: ${problem}\n\nUsage:\n${PLAN_USAGE}`);
    return 2;
  };
  if (typeof flags === 'string') return refuse(flags);
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
    return 1;
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
    return fail(`the input files have problems:\n${error.message}`);
  }
}
