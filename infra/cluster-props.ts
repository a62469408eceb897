import fs from 'node:fs';
import path from 'node:path';
import { type Duration, Token } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { FIT_SCORINGS, type FitScoring } from '../shared/core/resource-fit-score.ts';
import { passIntervalProblem } from '../shared/messages/disruption-pass.ts';
import type { LogLevel } from '../shared/runtime/logger.ts';
import { operatorSettingsProblems } from '../shared/runtime/operator-settings.ts';
import {
  MIN_VALUES_POLICIES,
  type MinValuesPolicy,
  PREFERENCE_POLICIES,
  type PreferencePolicy,
} from '../shared/runtime/scheduling-policy.ts';
import { type ClusterSize, clusterSizeProblems } from './cluster-size.ts';
import { FLOTILLA_FUNCTIONS, type FunctionDefinition } from './functions.ts';
import { DEFAULT_FUNCTION_TIMEOUT } from './lambda-functions.ts';
import { CLUSTER_SIDE_DEFAULTS } from './manifests.ts';
import { featureGatesOf, type KarpenterSettingsProps, operatorSettingsOf } from './props-settings.ts';
import { QUEUES } from './queues.ts';
import { STACK_MODES, type StackMode } from './stack-mode.ts';

// The props of FlotillaCluster (infra/flotilla-cluster.ts) and their validation.

export { featureGatesOf, operatorSettingsOf } from './props-settings.ts';

/** The props of a FlotillaCluster: every setting of one cluster's Flotilla, with its default. */
export interface FlotillaClusterProps extends KarpenterSettingsProps {
  /**
   * Name of the EKS cluster Flotilla scales. It is part of IAM condition keys and tag values, so
   * it must be a literal (not a token) and a valid EKS cluster name.
   */
  readonly clusterName: string;
  /**
   * `live`: Flotilla scales the cluster. `shadow`: it runs beside the cluster's live autoscaler
   * (Karpenter, or a live Flotilla stack of the same cluster), decides as Flotilla would and only
   * logs it. A shadow stack deploys the catalog, provisioner and disruption Lambdas (told
   * `FLOTILLA_MODE=shadow`) on their schedules and the pod-event queue, with read-only rights in
   * AWS and in the cluster; no interruption, termination or garbage collection, no node role, no
   * CRDs, and a disruption pass per schedule tick at most. Its physical names, namespace, shim
   * ServiceAccount and controller group differ from a live stack's (stack-mode.ts). Props of what
   * it does not deploy (`extraNodeRoles`, `rebalanceAction`, `garbageCollectionInterval`,
   * `nodeRepair`) have no effect on it.
   * @default 'live'
   */
  readonly mode?: StackMode;
  /**
   * The Lambdas to deploy, one row each.
   * @default FLOTILLA_FUNCTIONS
   */
  readonly functions?: readonly FunctionDefinition[];
  /**
   * Folder that `functions[].entry` and `package-lock.json` are relative to.
   * @default the repository root
   */
  readonly projectRoot?: string;
  /**
   * How big the cluster may grow. The Lambdas that read the cluster, and the shim, get memory for
   * it with 30% headroom over what `npm run bench:scale` measured of them (BENCHMARKS.md); a
   * cluster beyond it makes them run short. Raise it before the cluster grows past it.
   * @default { nodes: 500, pods: 10_000 }
   */
  readonly clusterSize?: ClusterSize;
  /**
   * VPC for the Lambdas, for clusters whose API endpoint is private. The subnets need a route to
   * the AWS APIs (NAT or VPC endpoints for EC2, SQS, DynamoDB, S3, SSM, EKS, STS, and CloudWatch
   * for NodePools that name rollout alarms), and to the Pricing API unless `isolatedVPC` (it has no
   * VPC endpoint). The clean-up Lambda runs outside it.
   * @default the Lambdas run outside any VPC
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Subnets of `vpc` for the Lambdas; only with `vpc`.
   * @default the private subnets of `vpc`
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * Security groups of the Lambdas (e.g. one the cluster's security group admits on 443); only
   * with `vpc`.
   * @default a new security group with all egress allowed
   */
  readonly securityGroups?: ec2.ISecurityGroup[];
  /**
   * Topic the alarms (dead-letter queue depth, Lambda errors and throttles, pods pending too long,
   * launch failures, the runaway guard pausing a NodePool) notify on alarm and on recovery.
   * @default alarms have no actions
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * How long a pod that a NodePool could host may wait for a node before the pending-pod alarm
   * fires (karpenter_pods_unbound_time_seconds, the oldest such pod at each provisioning run). At least the
   * pending-pod poll interval: the wait is measured at each poll.
   * @default 10 minutes
   */
  readonly pendingPodAlarmAfter?: Duration;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default 'info' */
  readonly logLevel?: LogLevel;
  /**
   * What EC2 Instance Rebalance Recommendations do: `event` records a SpotRebalanceRecommendation
   * Event only (Karpenter's behaviour); `drain` terminates the node like a spot interruption.
   * @default 'event'
   */
  readonly rebalanceAction?: 'event' | 'drain';
  /**
   * Flotilla's own consolidation method, repack, which Karpenter does not have: a package of the
   * nodes priced furthest above what their pods need is re-planned together onto as many new nodes
   * as their cheapest plan takes, and the consolidation methods' commands compete on savings (the
   * largest wins). Off, consolidation is Karpenter's: multi-node, then single-node, the first that
   * finds a command acting.
   * @default false
   */
  readonly repackConsolidation?: boolean;
  /**
   * The NodeResourcesFit scoring strategy the cluster's kube-scheduler runs with. Before a
   * consolidation command is taken, Flotilla replays how kube-scheduler will bind the pods it moves
   * (Karpenter does not) and refuses a command that could leave one without a node:
   * `LeastAllocated`, kube-scheduler's default, sends each pod to the node with the most room left;
   * `MostAllocated`, for a kube-scheduler configured to pack pods, to the fullest node it fits.
   * Set it to what kube-scheduler really runs with: `MostAllocated` on a spreading scheduler lets
   * commands through whose pods then wait for a new node.
   * @default 'LeastAllocated'
   */
  readonly kubeSchedulerScoring?: FitScoring;
  /**
   * Flotilla's runaway guard, which Karpenter does not have: a NodePool whose new NodeClaims keep
   * failing (launch or registration timeouts, nodes that never initialize or sit empty under a
   * taint the NodePool did not set) pauses its launches, 1 minute and doubling up to 30, then
   * launches one NodeClaim at a time until one hosts pods. False, as Karpenter: every run launches
   * again for the same pods.
   * @default true
   */
  readonly runawayGuard?: boolean;
  /**
   * Whether `cdk destroy` of the stack terminates every instance and deletes every launch template
   * Flotilla launched for the cluster (found by their ownership tags), once its other Lambdas are
   * gone. False leaves them running, for a cluster that stays and that another autoscaler (Karpenter)
   * takes over; EKS deleting the cluster cleans up either way. Karpenter's uninstall removes nothing.
   * @default true
   */
  readonly cleanUpOnDestroy?: boolean;
  /**
   * Karpenter's MIN_VALUES_POLICY: `Strict` leaves pods pending when a NodePool's `minValues`
   * cannot be met; `BestEffort` launches with fewer values and annotates the NodeClaim.
   * @default 'Strict'
   */
  readonly minValuesPolicy?: MinValuesPolicy;
  /**
   * Karpenter's PREFERENCE_POLICY: `Respect` schedules preferred affinities and spreads as required
   * ones, relaxing them one by one only when a pod cannot otherwise schedule; `Ignore` drops them.
   * @default 'Respect'
   */
  readonly preferencePolicy?: PreferencePolicy;
  /**
   * Flotilla's own dollar limit for the whole cluster, USD per hour: what the NodeClaims of every
   * NodePool may cost together (each at its offering's price). A launch that would pass it is
   * refused, as a NodePool limit refuses one. A NodePool may carry its own with the annotation
   * `flotilla.io/max-cost-per-hour`. `-c maxCostPerHour=50`.
   * @default no limit
   */
  readonly maxCostPerHour?: number;
  /**
   * Deletion protection of the state table. Everything in it is rebuilt on its own (catalog
   * refresh) or expires within minutes (back-offs, leases, idempotency records), so by default
   * `cdk destroy` deletes it.
   * @default false
   */
  readonly stateTableDeletionProtection?: boolean;
  /**
   * SSM parameters of your own that EC2NodeClasses name in `amiSelectorTerms[].ssmParameter`, as
   * parameter names or prefixes ending in `*` (e.g. `/team/golden/*`): the provisioner may read
   * them. AWS's public parameters (AMI aliases) need nothing here.
   * @default none
   */
  readonly amiParameterPaths?: readonly string[];
  /**
   * IAM roles besides the stack's node role that EC2NodeClasses may name in `spec.role` (or hold
   * in the instance profile of `spec.instanceProfile`), by name or ARN: the provisioner may pass
   * them to EC2. A cluster taken over from Karpenter names Karpenter's node role
   * (`KarpenterNodeRole-<cluster>`); it keeps its own EKS access entry.
   * @default none
   */
  readonly extraNodeRoles?: readonly string[];
  /** How often the provisioner polls for pending pods (a backstop to the shim's events). @default 1 minute */
  readonly pendingPodPollInterval?: Duration;
  /** How often the offering cache is refreshed. @default 1 hour */
  readonly catalogRefreshInterval?: Duration;
  /** How often orphaned instances and NodeClaims are collected. @default 2 minutes (Karpenter's) */
  readonly garbageCollectionInterval?: Duration;
  /**
   * How often disruption (emptiness, expiry, drift, consolidation) is evaluated: whole minutes, or
   * 10, 12, 15, 20 or 30 seconds (the schedule then fires once a minute and each tick asks for the
   * passes before the next one on the disruption queue). @default 30 seconds
   */
  readonly disruptionInterval?: Duration;
  /**
   * Create EKS access entries (Lambda roles → `controllerGroup`, node role → EC2_LINUX). Needs the
   * cluster's authentication mode to be API or API_AND_CONFIG_MAP; with CONFIG_MAP only, set false
   * and map the roles in aws-auth yourself.
   * @default true
   */
  readonly accessEntries?: boolean;
  /**
   * Associate the shim's role with its ServiceAccount through EKS Pod Identity (needs the
   * eks-pod-identity-agent add-on).
   * @default true
   */
  readonly shimPodIdentity?: boolean;
  /**
   * Namespace of the shim; a shadow stack's must not be `flotilla`, the live stack's.
   * @default 'flotilla' ('flotilla-shadow' in shadow mode)
   */
  readonly namespace?: string;
  /** ServiceAccount of the shim. @default 'flotilla-shim' ('flotilla-shadow-shim' in shadow mode) */
  readonly shimServiceAccount?: string;
  /**
   * Kubernetes group the Lambda roles are mapped to; a shadow stack's must not be the live
   * controller's `flotilla:controller`, which may write.
   * @default 'flotilla:controller' ('flotilla-shadow:controller' in shadow mode)
   */
  readonly controllerGroup?: string;
}

const CLUSTER_NAME = /^[0-9A-Za-z][A-Za-z0-9\-_]*$/;
const K8S_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const FUNCTION_NAME = /^[a-z][a-z0-9-]*$/;
const NODE_ROLE = /^([\w+=,.@-]{1,64}|arn:aws[\w-]*:iam::\d{12}:role\/([\w+=,.@-]+\/)*[\w+=,.@-]{1,64})$/;

/** A configuration problem found before anything is built. */
export class FlotillaConfigError extends Error {
  override readonly name = 'FlotillaConfigError';
}

/**
 * Checks every prop of a FlotillaCluster before anything is built; `root` is the resolved
 * `projectRoot` the function entries must exist under.
 * @throws FlotillaConfigError listing every problem found.
 */
export function validateProps(props: FlotillaClusterProps, root: string): void {
  const problems: string[] = [];
  if (props.clusterSize !== undefined) problems.push(...clusterSizeProblems(props.clusterSize));
  const { clusterName } = props;
  if (Token.isUnresolved(clusterName)) {
    problems.push(
      'clusterName must be a literal string, not a token: it is part of IAM condition keys and tags',
    );
  } else if (clusterName.length === 0 || clusterName.length > 100 || !CLUSTER_NAME.test(clusterName)) {
    problems.push(
      `clusterName "${clusterName}" is not a valid EKS cluster name: 1 to 100 letters, digits, '-' or '_', starting with a letter or digit`,
    );
  }
  for (const [prop, value] of [
    ['namespace', props.namespace],
    ['shimServiceAccount', props.shimServiceAccount],
  ] as const) {
    if (value !== undefined && (value.length > 63 || !K8S_NAME.test(value))) {
      problems.push(
        `${prop} "${value}" is not a valid Kubernetes name (lower-case letters, digits and '-', at most 63)`,
      );
    }
  }
  if (
    props.controllerGroup !== undefined &&
    (props.controllerGroup === '' || props.controllerGroup.startsWith('system:'))
  ) {
    problems.push(
      `controllerGroup "${props.controllerGroup}" must be non-empty and must not start with "system:" (EKS refuses it)`,
    );
  }
  problems.push(...modeProblems(props));
  if (props.vpc === undefined && (props.vpcSubnets !== undefined || props.securityGroups !== undefined)) {
    problems.push(
      'vpcSubnets and securityGroups need vpc: pass the VPC the subnets and security groups belong to',
    );
  }
  for (const path of props.amiParameterPaths ?? []) {
    if (!/^\/[A-Za-z0-9_.\-/]+\*?$/.test(path) || path.startsWith('/aws/')) {
      problems.push(
        `amiParameterPaths entry "${path}" must be an SSM parameter name or a prefix ending in *, starting with / and outside /aws/`,
      );
    }
  }
  for (const role of props.extraNodeRoles ?? []) {
    if (!NODE_ROLE.test(role)) {
      problems.push(
        `extraNodeRoles entry "${role}" must be an IAM role name (1 to 64 of letters, digits and +=,.@_-) or a role ARN`,
      );
    }
  }
  const intervals = [
    ['pendingPodPollInterval', props.pendingPodPollInterval],
    ['catalogRefreshInterval', props.catalogRefreshInterval],
    ['garbageCollectionInterval', props.garbageCollectionInterval],
  ] as const;
  for (const [prop, value] of intervals) {
    if (value === undefined) continue;
    const seconds = value.toSeconds();
    if (seconds < 60 || seconds % 60 !== 0) {
      problems.push(
        `${prop} is ${value.toHumanString()}; EventBridge schedules run in whole minutes, at least 1`,
      );
    }
  }
  if (props.pendingPodAlarmAfter !== undefined) {
    const after = props.pendingPodAlarmAfter;
    const poll = props.pendingPodPollInterval?.toSeconds() ?? 60;
    const seconds = after.toSeconds({ integral: false });
    if (!Number.isInteger(seconds) || seconds < poll) {
      problems.push(
        `pendingPodAlarmAfter is ${after.toHumanString()}; it must be whole seconds and at least the pending-pod poll interval (${poll} s): the wait is measured at each poll, so a shorter one would page for every pod pending at a poll`,
      );
    }
  }
  if (props.minValuesPolicy !== undefined && !MIN_VALUES_POLICIES.includes(props.minValuesPolicy)) {
    problems.push(
      `minValuesPolicy is "${props.minValuesPolicy}"; it must be one of ${MIN_VALUES_POLICIES.join(', ')}`,
    );
  }
  if (props.kubeSchedulerScoring !== undefined && !FIT_SCORINGS.includes(props.kubeSchedulerScoring)) {
    problems.push(
      `kubeSchedulerScoring is "${props.kubeSchedulerScoring}"; it must be one of ${FIT_SCORINGS.join(', ')}`,
    );
  }
  if (props.preferencePolicy !== undefined && !PREFERENCE_POLICIES.includes(props.preferencePolicy)) {
    problems.push(
      `preferencePolicy is "${props.preferencePolicy}"; it must be one of ${PREFERENCE_POLICIES.join(', ')}`,
    );
  }
  if (
    props.maxCostPerHour !== undefined &&
    !(
      Number.isFinite(props.maxCostPerHour) &&
      props.maxCostPerHour >= 0 &&
      props.maxCostPerHour <= 10_000_000
    )
  ) {
    problems.push(
      `maxCostPerHour is ${props.maxCostPerHour}; it must be a number of US dollars per hour from 0 to 10000000`,
    );
  }
  problems.push(...featureGatesOf(props).problems);
  problems.push(...operatorSettingsProblems(operatorSettingsOf(props)));
  if (props.disruptionInterval !== undefined) {
    const problem = passIntervalProblem(props.disruptionInterval.toSeconds({ integral: false }));
    if (problem !== undefined) problems.push(`disruptionInterval: ${problem}`);
  }
  const seen = new Set<string>();
  for (const definition of props.functions ?? FLOTILLA_FUNCTIONS) {
    const { name } = definition;
    if (!FUNCTION_NAME.test(name))
      problems.push(`function name "${name}" must be kebab-case (a-z, 0-9, '-')`);
    if (seen.has(name)) problems.push(`function "${name}" is defined twice`);
    seen.add(name);
    if (!fs.existsSync(path.join(root, definition.entry))) {
      problems.push(`function "${name}": entry ${definition.entry} does not exist under ${root}`);
    }
    if (definition.triggers.length === 0) problems.push(`function "${name}" has no trigger`);
    const timeout = definition.timeout ?? DEFAULT_FUNCTION_TIMEOUT;
    for (const trigger of definition.triggers) {
      if (trigger.kind !== 'queue') continue;
      const visibility = QUEUES[trigger.queue].visibilityTimeout;
      if (timeout.toSeconds() > visibility.toSeconds()) {
        problems.push(
          `function "${name}": timeout ${timeout.toHumanString()} exceeds the ${trigger.queue} queue's visibility timeout ${visibility.toHumanString()}; messages would be redelivered while still in flight`,
        );
      }
    }
    if (definition.reservedConcurrency !== undefined && definition.reservedConcurrency < 1) {
      problems.push(`function "${name}": reservedConcurrency must be at least 1 (0 would disable it)`);
    }
  }
  if (problems.length > 0) {
    throw new FlotillaConfigError(`invalid Flotilla configuration:\n- ${problems.join('\n- ')}`);
  }
}

/**
 * A mode other than live or shadow, and a shadow stack on the live stack's namespace (its shim's
 * Deployment would replace the live shim) or bound to the live controller's group (which may write).
 */
function modeProblems(props: FlotillaClusterProps): string[] {
  if (props.mode === undefined || props.mode === 'live') return [];
  if (!STACK_MODES.includes(props.mode)) {
    return [`mode is "${String(props.mode)}"; it must be one of ${STACK_MODES.join(', ')}`];
  }
  const live = CLUSTER_SIDE_DEFAULTS.live;
  const problems: string[] = [];
  if (props.namespace === live.namespace) {
    problems.push(
      `a shadow stack's namespace must not be "${live.namespace}", the live stack's: its shim would replace the live shim (leave it unset for "${CLUSTER_SIDE_DEFAULTS.shadow.namespace}")`,
    );
  }
  if (props.controllerGroup === live.controllerGroup) {
    problems.push(
      `a shadow stack's controllerGroup must not be "${live.controllerGroup}": that group may write to the cluster (leave it unset for "${CLUSTER_SIDE_DEFAULTS.shadow.controllerGroup}")`,
    );
  }
  return problems;
}
