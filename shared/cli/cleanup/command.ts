import { DEFAULT_REGION } from '../../adapters/memory/index.ts';
import type { ClusterResources } from '../../ports/cluster-resources.ts';
import { makeLogger } from '../../runtime/logger.ts';
import { cleanUpCluster } from '../../usecases/garbage-collection/cluster-cleanup.ts';
import { type CliIo, type Command, parseCommandArgs, stringValue } from '../command.ts';
import { awsResources } from './ec2.ts';

// `flotilla cleanup --dry-run`: what the clean-up Lambda would remove if the stack or the cluster
// were deleted now (shared/usecases/garbage-collection/cluster-cleanup.ts), read with the user's
// AWS credentials (read-only: DescribeInstances, DescribeLaunchTemplates). It removes nothing: the
// stack's deletion and EKS's DeleteCluster do.

const USAGE = `Usage: flotilla cleanup --cluster-name <name> --dry-run [--region <region>]

Lists every instance and launch template Flotilla launched for the cluster, found by their
ownership tags (kubernetes.io/cluster/<name>: owned with a karpenter.sh/nodepool tag): what the
stack's clean-up Lambda terminates and deletes when the stack is deleted (cdk destroy, unless
deployed with -c cleanUpOnDestroy=false) or EKS deletes the cluster. Nothing of another cluster or
maker is listed. Reads with your AWS credentials; removes nothing.

  --cluster-name  the cluster the stack was deployed for
  --region        the cluster's region (default: AWS_REGION, else ${DEFAULT_REGION})
  --dry-run       required: list only (the removal is the clean-up Lambda's)

Exit codes: 0 listed, 1 EC2 could not be read, 2 bad arguments.
`;

const SUMMARY = `  cleanup    \`flotilla cleanup --dry-run\`: what the clean-up removes when the stack or the cluster goes
`;

/** The dry run's decision is this command's output, not a metric. */
const NO_METRICS = { cluster: undefined, now: () => new Date(), publish: () => {} };

const OPTIONS = {
  'cluster-name': { type: 'string' },
  region: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

export const cleanupCommand: Command = {
  name: 'cleanup',
  summary: SUMMARY,
  usage: USAGE,
  run: (args, io) => runCleanup(args, io),
};

/** `flotilla cleanup`; `resourcesFor` reads EC2 (tests pass their own endpoint's). */
export async function runCleanup(
  args: readonly string[],
  io: CliIo,
  resourcesFor: (clusterName: string, region: string) => ClusterResources = awsResources,
): Promise<number> {
  const parsed = parseCommandArgs(args, OPTIONS, 0);
  const refuse = (problem: string) => {
    io.err(`flotilla cleanup: ${problem}\n\n${USAGE}`);
    return 2;
  };
  if ('problem' in parsed) return refuse(parsed.problem);
  const clusterName = stringValue(parsed, 'cluster-name');
  if (clusterName === undefined || clusterName === '') return refuse('--cluster-name is required');
  if (parsed.values['dry-run'] !== true) {
    return refuse(
      'only --dry-run: the clean-up Lambda removes them when the stack or the cluster is deleted',
    );
  }
  const region = stringValue(parsed, 'region') ?? process.env['AWS_REGION'] ?? DEFAULT_REGION;
  const logger = makeLogger({}, { level: 'error', sink: () => {} });
  const result = await cleanUpCluster(
    { resources: resourcesFor(clusterName, region), logger, metrics: NO_METRICS },
    clusterName,
    'dryRun',
  );
  const lines = [
    `Cluster ${clusterName} (${region}): the clean-up would terminate ${result.instances.length} instances and delete ${result.launchTemplates.length} launch templates.`,
    ...(result.instances.length === 0 ? [] : ['Instances:', ...result.instances.map((id) => `  ${id}`)]),
    ...(result.launchTemplates.length === 0
      ? []
      : ['Launch templates:', ...result.launchTemplates.map((name) => `  ${name}`)]),
  ];
  io.out(`${lines.join('\n')}\n`);
  return 0;
}
