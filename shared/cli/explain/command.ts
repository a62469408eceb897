import type { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_REGION } from '../../adapters/memory/index.ts';
import { FIT_SCORINGS, isFitScoring } from '../../core/resource-fit-score.ts';
import { ClusterApiError } from '../../ports/errors.ts';
import { makeLogger } from '../../runtime/logger.ts';
import { dropMetrics } from '../../runtime/metrics-sink.ts';
import { explainNode, type NodeExplanation } from '../../usecases/explain/node.ts';
import { explainPod, type PodExplanation } from '../../usecases/explain/pod.ts';
import { type CliIo, type Command, parseCommandArgs, parseSince, stringValue } from '../command.ts';
import { connect, loadKubeConfig } from './connect.ts';
import { type DecisionLookup, lastDecisions } from './logs.ts';
import { renderDecisions, renderNodeExplanation, renderPodExplanation } from './render.ts';

// `flotilla explain pod <namespace>/<name>` and `flotilla explain node <name>` against the cluster
// of the current kubeconfig: the provisioner's and the disruption controller's own steps on a
// read-only view of it (nothing is ever written), prices from the bundled catalog, and the last
// decisions from the stack's CloudWatch Logs when AWS credentials are there.

export const EXPLAIN_USAGE = `Usage: flotilla explain pod <namespace>/<name> [options]
       flotilla explain node <name> [options]

Explains, against the cluster of the current kubeconfig (read-only: nothing is written), why a pod
waits and what Flotilla would launch for it, or why a node stays and what disruption does next.
It runs the provisioner's and the disruption controller's own steps, as the Lambdas do.

  --kubeconfig    kubeconfig file (default: KUBECONFIG, then ~/.kube/config)
  --context       kubeconfig context (default: its current context)
  --region        region of the prices (bundled catalog) and of the CloudWatch Logs lookup;
                  default: the Nodes' topology.kubernetes.io/region, else AWS_REGION, else ${DEFAULT_REGION}
  --cluster-name  the cluster name the stack was deployed for (log groups Flotilla-<name>-…);
                  default: the kubeconfig cluster's name (the last part of an EKS ARN)
  --since         how far back to look for decisions in CloudWatch Logs, e.g. 30m, 6h (default 1h)
  --no-logs       do not look up the last decisions in CloudWatch Logs
  --repack-consolidation
                  the stack has repackConsolidation on: disruption also asks repack, and the
                  consolidation command that saves most acts (default: off, Karpenter's methods)
  --no-runaway-guard
                  the stack has runawayGuard off: no NodePool's launches are judged paused
  --max-cost-per-hour
                  the stack's maxCostPerHour, the cluster's dollar limit in USD per hour
                  (default: none; a NodePool's own flotilla.io/max-cost-per-hour is read from it)
  --kube-scheduler-scoring
                  the stack's kubeSchedulerScoring, the strategy the cluster's kube-scheduler
                  binds pods by: LeastAllocated (default) or MostAllocated
  --output        text (default) or json

Exit codes: 0 explained, 1 a failure while running (the API server unreachable), 2 bad arguments
or no such pod or node.
`;

const SUMMARY = `  explain    why a pod waits or a node stays, on the current kubeconfig's cluster (read-only):
             \`flotilla explain pod <namespace>/<name>\`, \`flotilla explain node <name>\`
`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  region: { type: 'string' },
  'cluster-name': { type: 'string' },
  since: { type: 'string' },
  'no-logs': { type: 'boolean' },
  'repack-consolidation': { type: 'boolean' },
  'no-runaway-guard': { type: 'boolean' },
  'max-cost-per-hour': { type: 'string' },
  'kube-scheduler-scoring': { type: 'string' },
  output: { type: 'string' },
} as const;

export const explainCommand: Command = {
  name: 'explain',
  summary: SUMMARY,
  usage: EXPLAIN_USAGE,
  run: runExplain,
};

/** What to explain, parsed from the positionals. */
export type ExplainTarget =
  | { readonly kind: 'pod'; readonly namespace: string; readonly name: string }
  | { readonly kind: 'node'; readonly name: string };

/** The target of `explain pod|node …`, or what is wrong with the arguments. */
export function parseTarget(positionals: readonly string[]): ExplainTarget | { readonly problem: string } {
  const [what, name, extra] = positionals;
  if (what === undefined) return { problem: 'say what to explain: pod <namespace>/<name> or node <name>' };
  if (extra !== undefined) return { problem: `one ${what} at a time, got ${positionals.slice(1).join(' ')}` };
  if (what !== 'pod' && what !== 'node') return { problem: `explain pod or node, not "${what}"` };
  if (name === undefined || name === '') return { problem: `name the ${what}` };
  if (what === 'node') return { kind: 'node', name };
  const parts = name.split('/');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
    return { problem: `name the pod as <namespace>/<name>, e.g. default/web-0, got "${name}"` };
  }
  return { kind: 'pod', namespace: parts[0] ?? '', name: parts[1] ?? '' };
}

/** `flotilla explain …`: 0 explained, 1 a failure while running, 2 bad arguments or not found. */
async function runExplain(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(args, OPTIONS, 2);
  const refuse = (problem: string) => {
    io.err(`flotilla explain: ${problem}\n\n${EXPLAIN_USAGE}`);
    return 2;
  };
  if ('problem' in parsed) return refuse(parsed.problem);
  const target = parseTarget(parsed.positionals);
  if ('problem' in target) return refuse(target.problem);
  const output = stringValue(parsed, 'output') ?? 'text';
  if (output !== 'text' && output !== 'json') return refuse(`--output is text or json, got "${output}"`);
  const sinceText = stringValue(parsed, 'since') ?? '1h';
  const sinceMs = parseSince(sinceText);
  if (sinceMs === undefined)
    return refuse(`--since is minutes or hours such as 30m or 6h, got "${sinceText}"`);
  const maxCostText = stringValue(parsed, 'max-cost-per-hour');
  if (maxCostText !== undefined && !/^\d+(\.\d+)?$/.test(maxCostText.trim())) {
    return refuse(
      `--max-cost-per-hour "${maxCostText}" is not a number of US dollars per hour, such as 50 or 12.5`,
    );
  }
  const maxCostPerHour = maxCostText === undefined ? undefined : Number(maxCostText.trim());
  const scoring = stringValue(parsed, 'kube-scheduler-scoring');
  if (scoring !== undefined && !isFitScoring(scoring)) {
    return refuse(`--kube-scheduler-scoring is ${FIT_SCORINGS.join(' or ')}, got "${scoring}"`);
  }

  let kc: KubeConfig;
  try {
    const path = stringValue(parsed, 'kubeconfig');
    kc = loadKubeConfig(path);
  } catch (error) {
    return refuse(`cannot load the kubeconfig: ${error instanceof Error ? error.message : String(error)}`);
  }
  const context = stringValue(parsed, 'context');
  if (context !== undefined) {
    if (!kc.getContexts().some((c) => c.name === context)) {
      return refuse(
        `no context "${context}" in the kubeconfig; it has ${
          kc
            .getContexts()
            .map((c) => c.name)
            .join(', ') || 'none'
        }`,
      );
    }
    kc.setCurrentContext(context);
  }
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined)
    return refuse(
      'the kubeconfig has no current cluster; pass --context or set one with kubectl config use-context',
    );

  const nowMs = Date.now();
  let explanation: PodExplanation | NodeExplanation;
  let region: string;
  try {
    const sources = await connect(kc, stringValue(parsed, 'region'));
    region = sources.region;
    const logger = makeLogger({}, { level: 'error', sink: () => {} });
    const ports = {
      ...sources,
      logger,
      metrics: dropMetrics(() => new Date(nowMs)),
      nowMs,
      repackConsolidation: parsed.values['repack-consolidation'] === true,
      runawayGuard: parsed.values['no-runaway-guard'] !== true,
      ...(maxCostPerHour === undefined ? {} : { maxCostPerHour }),
      ...(scoring === undefined ? {} : { kubeSchedulerScoring: scoring }),
    };
    explanation =
      target.kind === 'pod' ? await explainPod(ports, target) : await explainNode(ports, target.name);
  } catch (error) {
    if (!(error instanceof ClusterApiError)) throw error;
    io.err(
      `flotilla explain: cannot read the cluster at ${server}: ${error.message}\nCheck that the API server is reachable with this kubeconfig and context (kubectl get nodes) and that you may list pods, nodes and Flotilla's objects.\n`,
    );
    return 1;
  }
  if (explanation.kind === 'notFound') {
    io.err(`flotilla explain: ${explanation.message}\n`);
    return 2;
  }

  const clusterName = stringValue(parsed, 'cluster-name') ?? clusterNameOf(kc);
  const lookup: DecisionLookup =
    parsed.values['no-logs'] === true
      ? { kind: 'skipped', why: '--no-logs' }
      : await lastDecisions({
          clusterName,
          region,
          term: target.name,
          sinceMs: nowMs - sinceMs,
        });
  if (output === 'json') {
    io.out(`${JSON.stringify({ ...explanation, clusterName, lastDecisions: lookup }, null, 2)}\n`);
    return 0;
  }
  io.out(
    (explanation.kind === 'pod' ? renderPodExplanation(explanation) : renderNodeExplanation(explanation)) +
      renderDecisions(lookup),
  );
  return 0;
}

/** The cluster name of the kubeconfig's current cluster: an EKS ARN's last part, else its name. */
export function clusterNameOf(kc: KubeConfig): string {
  const name = kc.getCurrentCluster()?.name ?? '';
  return name.includes(':cluster/') ? (name.split(':cluster/')[1] ?? name) : name;
}
