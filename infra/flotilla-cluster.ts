import path from 'node:path';
import { RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { STATE_TABLE } from '../shared/apis/state-table.ts';
import { DEFAULT_FIT_SCORING } from '../shared/core/resource-fit-score.ts';
import type { EnvVarKey } from '../shared/runtime/env.ts';
import { DEFAULT_MIN_VALUES_POLICY, DEFAULT_PREFERENCE_POLICY } from '../shared/runtime/scheduling-policy.ts';
import { ClusterAlarms, DEFAULT_PENDING_POD_ALARM_AFTER } from './alarms.ts';
import {
  type FlotillaClusterProps,
  featureGatesOf,
  operatorSettingsOf,
  validateProps,
} from './cluster-props.ts';
import { DEFAULT_CLUSTER_SIZE, SHIM_MEMORY_MODEL, shimMemoryFor } from './cluster-size.ts';
import { addOutput, pascal } from './construct-kit.ts';
import { ControllerPolicies, type ControllerPolicyName } from './controller-policies.ts';
import { addDashboard } from './dashboard.ts';
import { FLOTILLA_FUNCTIONS, type ScheduleName } from './functions.ts';
import { addInterruptionRules } from './interruption-rules.ts';
import { ClusterFunctions } from './lambda-functions.ts';
import { LOG_QUERIES } from './log-queries.ts';
import { CLUSTER_SIDE_DEFAULTS, type ClusterManifestOptions, renderClusterManifests } from './manifests.ts';
import { NodeIdentity } from './node-identity.ts';
import { ClusterQueues, podEventQueueName, type QueueSet } from './queues.ts';
import { addSchedules, DEFAULT_DISRUPTION_INTERVAL } from './schedules.ts';
import { ShimIdentity } from './shim-identity.ts';
import { decisionBusNameFor, functionsOf, NAME_PREFIX, type StackMode } from './stack-mode.ts';
import { SummaryBucket, summaryBucketNameFor } from './summary-bucket.ts';
import { WakeUpTargets } from './wake-ups.ts';

// The per-cluster construct. It composes the parts, each in its own file and each built into this
// construct's scope with the ids it always had (construct-kit.ts says why):
// - queues.ts: work queues, dead-letter queues and their alarms (alarms.ts)
// - interruption-rules.ts: the EventBridge rules of the interruption kinds table
// - schedules.ts: the EventBridge schedules
// - node-identity.ts: node role, instance profile and access entry
// - summary-bucket.ts: the bucket the shim publishes the cluster summary to
// - controller-policies.ts: the Lambdas' permission bundles
// - shim-identity.ts: the shim's Pod Identity role
// - lambda-functions.ts: one Lambda per row of functions.ts
// - dashboard.ts: the CloudWatch dashboard of shared/runtime/dashboard.ts; alarms.ts: the alarms
// - cluster-props.ts: the props (documented with their defaults) and their validation
// - stack-mode.ts: what a shadow stack leaves out, and the names that set it apart from a live one

export { DEFAULT_PENDING_POD_ALARM_AFTER } from './alarms.ts';
export { type FlotillaClusterProps, FlotillaConfigError } from './cluster-props.ts';
export { dashboardNameFor } from './dashboard.ts';
export { INTERRUPTION_RULES } from './interruption-rules.ts';
export { podEventQueueName } from './queues.ts';
export { STACK_MODES, type StackMode } from './stack-mode.ts';
export { summaryBucketNameFor, summaryClusterHash } from './summary-bucket.ts';

/** The repository root: lambda entries and the lock file are resolved against it. */
export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');

/**
 * Everything Flotilla needs in AWS for one EKS cluster: the state table, the cluster-summary
 * bucket, the work queues with their dead-letter queues, the interruption rules and schedules, the
 * node role and instance profile, least-privilege roles for the Lambdas and the shim, a dashboard,
 * alarms, saved log queries and the Lambdas listed in `functions`. In shadow mode, the part of it
 * that decides, with read-only rights and names of its own (stack-mode.ts): the interruption rules,
 * the node role and instance profile and the live-only queues, schedules and policies are absent.
 *
 * @throws FlotillaConfigError when a prop is invalid (checked before any resource is created).
 */
export class FlotillaCluster extends Construct {
  readonly clusterName: string;
  /** `live`, or `shadow`: deciding beside the cluster's live autoscaler, acting on nothing. */
  readonly mode: StackMode;
  readonly clusterArn: string;
  readonly stateTable: dynamodb.Table;
  /**
   * The stack's event bus: every decision of the provisioner, disruption, termination, interruption
   * and garbage-collector Lambdas also as an event (source `flotilla`, detail type the decision's
   * kind such as `launch` or `disrupt`, detail its log line). Add rules to route them.
   */
  readonly decisionBus: events.EventBus;
  /** The provisioner's NodePool wake-ups: a live stack's. */
  readonly wakeUps: WakeUpTargets | undefined;
  /** Where the shim publishes the cluster summary (one object, `summaryObjectKey(clusterName)`). */
  readonly summaryBucket: s3.Bucket;
  /** The work queues: the pod-event queue in every stack, the others in a live stack. */
  readonly queues: QueueSet<sqs.Queue>;
  readonly deadLetterQueues: QueueSet<sqs.Queue>;
  /** Where EventBridge puts events it could not deliver to a target. */
  readonly eventsDeadLetterQueue: sqs.Queue;
  /** Every schedule in a live stack; no garbage collection in a shadow stack. */
  readonly schedules: { readonly [K in ScheduleName]?: events.Rule };
  /** None in a shadow stack. */
  readonly interruptionRules: readonly events.Rule[];
  /** The nodes' role and its instance profile; a shadow stack, which launches nothing, has neither. */
  readonly nodeRole: iam.Role | undefined;
  readonly instanceProfile: iam.InstanceProfile | undefined;
  readonly shimRole: iam.Role;
  /**
   * One managed policy per EC2/EKS permission bundle, built whether or not a Lambda uses it yet; in
   * a shadow stack only those of the read bundles.
   */
  readonly policies: { readonly [K in ControllerPolicyName]?: iam.ManagedPolicy };
  readonly functions: Readonly<Record<string, nodejs.NodejsFunction>>;
  readonly functionRoles: Readonly<Record<string, iam.Role>>;
  readonly alarms: cloudwatch.Alarm[];
  /** `Flotilla-<cluster>` (`FlotillaShadow-<cluster>`): capacity and cost, pending pods, launches, disruption, errors, queues, Lambdas. */
  readonly dashboard: cloudwatch.Dashboard;

  private readonly props: FlotillaClusterProps;
  /** The namespace, shim ServiceAccount and controller group, the mode's defaults filled in. */
  private readonly clusterSide: {
    readonly namespace: string;
    readonly shimServiceAccount: string;
    readonly controllerGroup: string;
  };

  constructor(scope: Construct, id: string, props: FlotillaClusterProps) {
    super(scope, id);
    validateProps(props, props.projectRoot ?? PROJECT_ROOT);
    this.props = props;
    const clusterName = props.clusterName;
    const mode = props.mode ?? 'live';
    const live = mode === 'live';
    this.clusterName = clusterName;
    this.mode = mode;
    const sideDefaults = CLUSTER_SIDE_DEFAULTS[mode];
    this.clusterSide = {
      namespace: props.namespace ?? sideDefaults.namespace,
      shimServiceAccount: props.shimServiceAccount ?? sideDefaults.shimServiceAccount,
      controllerGroup: props.controllerGroup ?? sideDefaults.controllerGroup,
    };
    this.clusterArn = Stack.of(this).formatArn({
      service: 'eks',
      resource: 'cluster',
      resourceName: clusterName,
    });
    const alarms = new ClusterAlarms(this, {
      clusterName,
      ...(props.alarmTopic === undefined ? {} : { alarmTopic: props.alarmTopic }),
    });
    this.alarms = alarms.alarms;

    this.stateTable = new dynamodb.Table(this, 'StateTable', {
      partitionKey: { name: STATE_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: STATE_TABLE.sortKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: STATE_TABLE.ttlAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: props.stateTableDeletionProtection ?? false,
      removalPolicy: props.stateTableDeletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    const summary = new SummaryBucket(this, { clusterName, mode });
    this.summaryBucket = summary.bucket;

    // Every decision of the deciding Lambdas also goes here as an event (source `flotilla`, detail
    // type the decision's kind), for rules that route them to a topic, a chat channel or a ticket.
    this.decisionBus = new events.EventBus(this, 'DecisionBus', {
      eventBusName: decisionBusNameFor(clusterName, mode),
      description: `Flotilla ${clusterName}: every decision of its Lambdas as an event`,
    });

    const queues = new ClusterQueues(this, { clusterName, mode, alarms });
    this.queues = queues.queues;
    this.deadLetterQueues = queues.deadLetterQueues;
    this.eventsDeadLetterQueue = queues.eventsDeadLetterQueue;

    // A shadow stack acts on no interruption: the live autoscaler does.
    const interruptionQueue = this.queues.interruption;
    this.interruptionRules =
      interruptionQueue === undefined
        ? []
        : addInterruptionRules(this, {
            clusterName,
            queue: interruptionQueue,
            deadLetterQueue: this.eventsDeadLetterQueue,
          });
    this.schedules = addSchedules(this, { ...props, clusterName, mode });

    const nodes = live
      ? new NodeIdentity(this, {
          clusterName,
          ...(props.accessEntries === undefined ? {} : { accessEntry: props.accessEntries }),
        })
      : undefined;
    this.nodeRole = nodes?.role;
    this.instanceProfile = nodes?.instanceProfile;

    // The provisioner's NodePool wake-ups (a shadow launches nothing worth waking it for).
    this.wakeUps = live ? new WakeUpTargets(this, { clusterName, queue: this.queues.podEvents }) : undefined;

    const policies = new ControllerPolicies(this, {
      clusterName,
      mode,
      clusterArn: this.clusterArn,
      ...(nodes === undefined ? {} : { nodeRole: nodes.role }),
      ...(props.extraNodeRoles === undefined ? {} : { extraNodeRoles: props.extraNodeRoles }),
      stateTableArn: this.stateTable.tableArn,
      summaryObjectArns: summary.objectArns,
      queues: this.queues,
      decisionBusArn: this.decisionBus.eventBusArn,
      ...(this.wakeUps === undefined
        ? {}
        : { wakeUps: { groupName: this.wakeUps.groupName, roleArn: this.wakeUps.role.roleArn } }),
      controllerGroup: this.clusterSide.controllerGroup,
      isolatedVPC: props.isolatedVPC ?? false,
      ...(props.amiParameterPaths === undefined ? {} : { amiParameterPaths: props.amiParameterPaths }),
      ...(props.accessEntries === undefined ? {} : { accessEntries: props.accessEntries }),
    });
    this.policies = policies.policies;

    this.shimRole = new ShimIdentity(this, {
      clusterName,
      namespace: this.clusterSide.namespace,
      serviceAccount: this.clusterSide.shimServiceAccount,
      podEventQueue: this.queues.podEvents,
      summaryObjectArns: summary.objectArns,
      ...(props.shimPodIdentity === undefined ? {} : { podIdentity: props.shimPodIdentity }),
    }).role;

    const functions = new ClusterFunctions(this, {
      clusterName,
      definitions: functionsOf(mode, props.functions ?? FLOTILLA_FUNCTIONS),
      projectRoot: props.projectRoot ?? PROJECT_ROOT,
      logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      ...(props.vpc === undefined
        ? {}
        : {
            network: {
              vpc: props.vpc,
              ...(props.vpcSubnets === undefined ? {} : { vpcSubnets: props.vpcSubnets }),
              ...(props.securityGroups === undefined ? {} : { securityGroups: props.securityGroups }),
            },
          }),
      env: this.envValues(),
      queues: this.queues,
      schedules: this.schedules,
      eventsDeadLetterQueue: this.eventsDeadLetterQueue,
      // A shadow Lambda's role may send to no queue, not even a failure queue of its own.
      failureQueues: live,
      invokeAfter: [this.stateTable],
      policies,
      alarms,
      clusterSize: props.clusterSize ?? DEFAULT_CLUSTER_SIZE,
      ...(props.cleanUpOnDestroy === undefined ? {} : { cleanUpOnDestroy: props.cleanUpOnDestroy }),
    });
    this.functions = functions.functions;
    this.functionRoles = functions.roles;

    // A shadow stack pages on its own health only (its Lambdas' errors and throttles, dead
    // letters): pods waiting and launches failing are the live autoscaler's to page on.
    if (live) {
      alarms.onPendingPods(props.pendingPodAlarmAfter ?? DEFAULT_PENDING_POD_ALARM_AFTER);
      alarms.onLaunchFailures();
      alarms.onLaunchBackoff();
    }
    this.dashboard = addDashboard(this, {
      clusterName,
      mode,
      workQueues: this.queues,
      deadLetterQueues: {
        ...Object.fromEntries(
          Object.entries(this.deadLetterQueues).map(([name, queue]) => [`${name} dead letters`, queue]),
        ),
        'EventBridge dead letters': this.eventsDeadLetterQueue,
        ...Object.fromEntries(
          Object.entries(functions.failureQueues).map(([name, queue]) => [`${name} failures`, queue]),
        ),
      },
      functions: this.functions,
    });

    for (const query of LOG_QUERIES) {
      new logs.CfnQueryDefinition(this, `${pascal(query.name)}Query`, {
        name: `${NAME_PREFIX[mode].kebab}/${clusterName}/${query.name}`,
        queryString: query.queryString,
        ...(functions.logGroups.length === 0
          ? {}
          : { logGroupNames: functions.logGroups.map((group) => group.logGroupName) }),
      });
    }

    this.addOutputs();
  }

  /**
   * The cluster side (namespace, CRDs but in a shadow stack, RBAC, shim ServiceAccount) as one YAML
   * stream for `kubectl apply -f -`.
   */
  renderManifests(options: Pick<ClusterManifestOptions, 'crdsDir'> = {}): string {
    const stack = Stack.of(this);
    const concrete = !Token.isUnresolved(stack.account) && !Token.isUnresolved(stack.region);
    const suffix = stack.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
    const { clusterName, mode } = this;
    return renderClusterManifests({
      mode,
      ...this.clusterSide,
      ...(concrete
        ? {
            shim: {
              clusterName,
              region: stack.region,
              queueUrl: `https://sqs.${stack.region}.${suffix}/${stack.account}/${podEventQueueName(clusterName, mode)}`,
              summaryBucket: summaryBucketNameFor(stack.account, stack.region, clusterName, mode),
              memory: shimMemoryFor(SHIM_MEMORY_MODEL, this.props.clusterSize ?? DEFAULT_CLUSTER_SIZE),
            },
          }
        : {}),
      ...options,
    });
  }

  /**
   * The value of every environment variable a Lambda's row may ask for, but those of the queues and
   * node identity a shadow stack does not have. `mode` goes only to the rows that ask for it: a
   * shadow stack's (stack-mode.ts); a live Lambda runs without it, which means live.
   */
  private envValues(): { readonly [K in EnvVarKey]?: string } {
    const { gates } = featureGatesOf(this.props);
    const settings = operatorSettingsOf(this.props);
    const { interruption, termination, disruptionPasses } = this.queues;
    const { nodeRole, instanceProfile } = this;
    return {
      clusterName: this.clusterName,
      mode: this.mode,
      stateTable: this.stateTable.tableName,
      decisionBus: this.decisionBus.eventBusName,
      summaryBucket: this.summaryBucket.bucketName,
      clusterSize: `${(this.props.clusterSize ?? DEFAULT_CLUSTER_SIZE).nodes},${(this.props.clusterSize ?? DEFAULT_CLUSTER_SIZE).pods}`,
      podEventQueueUrl: this.queues.podEvents.queueUrl,
      ...(this.wakeUps === undefined
        ? {}
        : {
            wakeUpGroup: this.wakeUps.groupName,
            wakeUpRoleArn: this.wakeUps.role.roleArn,
            podEventQueueArn: this.queues.podEvents.queueArn,
          }),
      ...(interruption === undefined ? {} : { interruptionQueueUrl: interruption.queueUrl }),
      ...(termination === undefined ? {} : { terminationQueueUrl: termination.queueUrl }),
      ...(disruptionPasses === undefined ? {} : { disruptionQueueUrl: disruptionPasses.queueUrl }),
      disruptionIntervalSeconds: String(
        (this.props.disruptionInterval ?? DEFAULT_DISRUPTION_INTERVAL).toSeconds(),
      ),
      ...(nodeRole === undefined ? {} : { nodeRoleName: nodeRole.roleName }),
      ...(instanceProfile === undefined ? {} : { instanceProfileName: instanceProfile.instanceProfileName }),
      logLevel: this.props.logLevel ?? 'info',
      rebalanceAction: this.props.rebalanceAction ?? 'event',
      minValuesPolicy: this.props.minValuesPolicy ?? DEFAULT_MIN_VALUES_POLICY,
      preferencePolicy: this.props.preferencePolicy ?? DEFAULT_PREFERENCE_POLICY,
      ...(this.props.maxCostPerHour === undefined
        ? {}
        : { maxCostPerHour: plainDecimal(this.props.maxCostPerHour) }),
      nodeRepair: String(gates.NodeRepair),
      spotToSpotConsolidation: String(gates.SpotToSpotConsolidation),
      repackConsolidation: String(this.props.repackConsolidation === true),
      kubeSchedulerScoring: this.props.kubeSchedulerScoring ?? DEFAULT_FIT_SCORING,
      runawayGuard: String(this.props.runawayGuard !== false),
      reservedCapacity: String(gates.ReservedCapacity),
      nodeOverlay: String(gates.NodeOverlay),
      staticCapacity: String(gates.StaticCapacity),
      batchIdleMs: String(settings.batchIdleMs),
      batchMaxMs: String(settings.batchMaxMs),
      vmMemoryOverheadPercent: String(settings.vmMemoryOverheadPercent),
      reservedENIs: String(settings.reservedENIs),
      isolatedVPC: String(settings.isolatedVPC),
      amiRefreshSeconds: String(settings.amiRefreshMs / 1000),
    };
  }

  private addOutputs(): void {
    const { interruption, termination } = this.queues;
    const { nodeRole, instanceProfile } = this;
    // What a shadow stack does not have, it does not output.
    const outputs: [string, string | undefined, string][] = [
      [
        'StateTableName',
        this.stateTable.tableName,
        'DynamoDB state table (offerings, back-offs, leases, idempotency)',
      ],
      [
        'SummaryBucketName',
        this.summaryBucket.bucketName,
        'S3 bucket the shim publishes the cluster summary to',
      ],
      ['PodEventQueueUrl', this.queues.podEvents.queueUrl, 'Queue the shim sends pod events to'],
      ['PodEventQueueArn', this.queues.podEvents.queueArn, 'Queue the shim sends pod events to'],
      ['InterruptionQueueUrl', interruption?.queueUrl, 'Queue of EC2 interruption events'],
      ['InterruptionQueueArn', interruption?.queueArn, 'Queue of EC2 interruption events'],
      ['TerminationQueueUrl', termination?.queueUrl, 'Queue of termination steps'],
      ['TerminationQueueArn', termination?.queueArn, 'Queue of termination steps'],
      ['NodeRoleName', nodeRole?.roleName, 'IAM role of the nodes'],
      ['NodeRoleArn', nodeRole?.roleArn, 'IAM role of the nodes'],
      [
        'InstanceProfileName',
        instanceProfile?.instanceProfileName,
        'Instance profile of the node role: set it as spec.instanceProfile of your EC2NodeClasses',
      ],
      ['ShimRoleArn', this.shimRole.roleArn, 'Pod Identity role of the shim'],
      ['DashboardName', this.dashboard.dashboardName, 'CloudWatch dashboard of this cluster'],
      ['DecisionBusName', this.decisionBus.eventBusName, 'Event bus of every decision (source flotilla)'],
      ['DecisionBusArn', this.decisionBus.eventBusArn, 'Event bus of every decision (source flotilla)'],
    ];
    for (const [id, value, description] of outputs) {
      if (value !== undefined) addOutput(this, id, value, description);
    }
  }
}

/** A dollar amount as the Lambdas read it: digits and a point, never an exponent (`5e-7`). */
function plainDecimal(usd: number): string {
  return Number.isInteger(usd) ? String(usd) : usd.toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
}
