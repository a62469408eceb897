import fs from 'node:fs';
import path from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as eks from 'aws-cdk-lib/aws-eks';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as triggers from 'aws-cdk-lib/triggers';
import { Construct, type IConstruct } from 'constructs';
import { STATE_TABLE } from '../shared/apis/state-table.ts';
import { EnvVar, type EnvVarKey } from '../shared/runtime/env.ts';
import type { LogLevel } from '../shared/runtime/logger.ts';
import {
  FLOTILLA_FUNCTIONS,
  type FunctionDefinition,
  type Permission,
  type QueueName,
  type ScheduleName,
} from './functions.ts';
import { INTERRUPTION_RULES } from './interruption-rules.ts';
import { LOG_QUERIES } from './log-queries.ts';
import { type ClusterManifestOptions, CONTROLLER_GROUP, renderClusterManifests } from './manifests.ts';
import {
  catalogReadStatements,
  instanceProfileStatements,
  instanceReadStatements,
  launchTemplateCleanupStatements,
  nodeClassReadStatements,
  nodeLaunchStatements,
  nodeTerminationStatements,
} from './policies.ts';

export { INTERRUPTION_RULES } from './interruption-rules.ts';

/** The repository root: lambda entries and the lock file are resolved against it. */
export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');

export interface FlotillaClusterProps {
  /**
   * Name of the EKS cluster Flotilla scales. It is part of IAM condition keys and tag values, so
   * it must be a literal (not a token) and a valid EKS cluster name.
   */
  readonly clusterName: string;
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
   * VPC for the Lambdas, for clusters whose API endpoint is private. The subnets need a route to
   * the AWS APIs (NAT or VPC endpoints for EC2, SQS, DynamoDB, SSM, EKS, STS, pricing).
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
   * Topic the alarms (dead-letter queue depth, Lambda errors) notify on alarm and on recovery.
   * @default alarms have no actions
   */
  readonly alarmTopic?: sns.ITopic;
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
  /** How often the provisioner polls for pending pods (a backstop to the shim's events). @default 1 minute */
  readonly pendingPodPollInterval?: Duration;
  /** How often the offering cache is refreshed. @default 1 hour */
  readonly catalogRefreshInterval?: Duration;
  /** How often orphaned instances and NodeClaims are collected. @default 2 minutes (Karpenter's) */
  readonly garbageCollectionInterval?: Duration;
  /** How often disruption (emptiness, expiry, drift, consolidation) is evaluated. @default 1 minute */
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
  /** Namespace of the shim. @default 'flotilla' */
  readonly namespace?: string;
  /** ServiceAccount of the shim. @default 'flotilla-shim' */
  readonly shimServiceAccount?: string;
  /** Kubernetes group the Lambda roles are mapped to. @default 'flotilla:controller' */
  readonly controllerGroup?: string;
}

/** Settings of one work queue. The consumer's timeout must fit in the visibility timeout. */
interface QueueSpec {
  readonly description: string;
  readonly visibilityTimeout: Duration;
  readonly retentionPeriod: Duration;
  readonly maxReceiveCount: number;
}

const QUEUES: Record<QueueName, QueueSpec> = {
  podEvents: {
    description: 'pod events from the in-cluster shim',
    visibilityTimeout: Duration.minutes(2),
    // The pending-pod poll covers anything older; stale events only cost a no-op decision.
    retentionPeriod: Duration.hours(1),
    maxReceiveCount: 5,
  },
  interruption: {
    description: 'EC2 interruption and AWS Health events',
    visibilityTimeout: Duration.minutes(1),
    // Karpenter keeps 5 minutes (a spot warning is 2 minutes ahead); 15 leaves room for three
    // receives before the dead-letter queue instead of expiring failures silently.
    retentionPeriod: Duration.minutes(15),
    maxReceiveCount: 3,
  },
  termination: {
    description: 'delayed termination steps (cordon, evict, wait, terminate)',
    visibilityTimeout: Duration.minutes(5),
    retentionPeriod: Duration.days(4),
    maxReceiveCount: 5,
  },
};

const CLUSTER_NAME = /^[0-9A-Za-z][A-Za-z0-9\-_]*$/;
const K8S_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const FUNCTION_NAME = /^[a-z][a-z0-9-]*$/;

/** A configuration problem found before anything is built. */
export class FlotillaConfigError extends Error {
  override readonly name = 'FlotillaConfigError';
}

/**
 * Everything Flotilla needs in AWS for one EKS cluster: the state table, the work queues with
 * their dead-letter queues, the interruption rules and schedules, the node role and instance
 * profile, least-privilege roles for the Lambdas and the shim, alarms, saved log queries and the
 * Lambdas listed in `functions`.
 *
 * @throws FlotillaConfigError when a prop is invalid (checked before any resource is created).
 */
export class FlotillaCluster extends Construct {
  readonly clusterName: string;
  readonly clusterArn: string;
  readonly stateTable: dynamodb.Table;
  readonly queues: Readonly<Record<QueueName, sqs.Queue>>;
  readonly deadLetterQueues: Readonly<Record<QueueName, sqs.Queue>>;
  /** Where EventBridge puts events it could not deliver to a target. */
  readonly eventsDeadLetterQueue: sqs.Queue;
  readonly schedules: Readonly<Record<ScheduleName, events.Rule>>;
  readonly interruptionRules: readonly events.Rule[];
  readonly nodeRole: iam.Role;
  readonly instanceProfile: iam.InstanceProfile;
  readonly shimRole: iam.Role;
  /** One managed policy per EC2/EKS permission bundle, built whether or not a Lambda uses it yet. */
  readonly policies: Readonly<
    Record<
      | 'instanceRead'
      | 'nodeClassRead'
      | 'catalogRead'
      | 'nodeLaunch'
      | 'launchTemplateCleanup'
      | 'nodeTermination'
      | 'instanceProfiles'
      | 'clusterAccess',
      iam.ManagedPolicy
    >
  >;
  readonly functions: Readonly<Record<string, nodejs.NodejsFunction>>;
  readonly functionRoles: Readonly<Record<string, iam.Role>>;
  readonly alarms: cloudwatch.Alarm[] = [];

  private readonly props: FlotillaClusterProps;
  private readonly logGroups: logs.LogGroup[] = [];

  constructor(scope: Construct, id: string, props: FlotillaClusterProps) {
    super(scope, id);
    validateProps(props);
    this.props = props;
    const stack = Stack.of(this);
    const clusterName = props.clusterName;
    this.clusterName = clusterName;
    this.clusterArn = stack.formatArn({ service: 'eks', resource: 'cluster', resourceName: clusterName });

    this.stateTable = new dynamodb.Table(this, 'StateTable', {
      partitionKey: { name: STATE_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: STATE_TABLE.sortKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: STATE_TABLE.ttlAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: props.stateTableDeletionProtection ?? false,
      removalPolicy: props.stateTableDeletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    const queues = {} as Record<QueueName, sqs.Queue>;
    const deadLetterQueues = {} as Record<QueueName, sqs.Queue>;
    for (const [name, spec] of Object.entries(QUEUES) as [QueueName, QueueSpec][]) {
      const id = pascal(name);
      const dlq = this.makeDeadLetterQueue(
        `${id}DeadLetterQueue`,
        `${spec.description} that failed ${spec.maxReceiveCount} times`,
      );
      deadLetterQueues[name] = dlq;
      queues[name] = new sqs.Queue(this, `${id}Queue`, {
        // The shim's Deployment names the pod-event queue, so its name must be known at synth time.
        ...(name === 'podEvents' ? { queueName: podEventQueueName(props.clusterName) } : {}),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: spec.visibilityTimeout,
        retentionPeriod: spec.retentionPeriod,
        deadLetterQueue: { queue: dlq, maxReceiveCount: spec.maxReceiveCount },
      });
    }
    this.queues = queues;
    this.deadLetterQueues = deadLetterQueues;
    this.eventsDeadLetterQueue = this.makeDeadLetterQueue(
      'EventsDeadLetterQueue',
      'events EventBridge could not deliver to a queue or Lambda',
    );

    this.interruptionRules = INTERRUPTION_RULES.map(
      ({ id, pattern }) =>
        new events.Rule(this, `${id}Rule`, {
          description: `Flotilla ${clusterName}: ${pattern.detailType?.join(', ')} → interruption queue`,
          eventPattern: pattern,
          targets: [
            new targets.SqsQueue(queues.interruption, {
              deadLetterQueue: this.eventsDeadLetterQueue,
              retryAttempts: 8,
              maxEventAge: Duration.minutes(5),
            }),
          ],
        }),
    );

    const scheduleSpecs: Record<ScheduleName, { rate: Duration; what: string }> = {
      pendingPods: {
        rate: props.pendingPodPollInterval ?? Duration.minutes(1),
        what: 'poll for pending pods',
      },
      catalogRefresh: {
        rate: props.catalogRefreshInterval ?? Duration.hours(1),
        what: 'refresh the offering cache',
      },
      garbageCollection: {
        rate: props.garbageCollectionInterval ?? Duration.minutes(2),
        what: 'collect orphaned instances and NodeClaims and sweep terminating NodeClaims',
      },
      disruption: { rate: props.disruptionInterval ?? Duration.minutes(1), what: 'evaluate disruption' },
    };
    const schedules = {} as Record<ScheduleName, events.Rule>;
    for (const [name, spec] of Object.entries(scheduleSpecs) as [
      ScheduleName,
      { rate: Duration; what: string },
    ][]) {
      schedules[name] = new events.Rule(this, `${pascal(name)}Schedule`, {
        description: `Flotilla ${clusterName}: ${spec.what} every ${spec.rate.toHumanString()}`,
        schedule: events.Schedule.rate(spec.rate),
      });
    }
    this.schedules = schedules;

    this.nodeRole = new iam.Role(this, 'NodeRole', {
      description: `Nodes Flotilla launches for EKS cluster ${clusterName}`,
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      managedPolicies: [
        'AmazonEKSWorkerNodePolicy',
        'AmazonEKS_CNI_Policy',
        'AmazonEC2ContainerRegistryPullOnly',
        'AmazonSSMManagedInstanceCore',
      ].map((name) => iam.ManagedPolicy.fromAwsManagedPolicyName(name)),
    });
    this.instanceProfile = new iam.InstanceProfile(this, 'InstanceProfile', { role: this.nodeRole });

    this.policies = {
      instanceRead: new iam.ManagedPolicy(this, 'InstanceReadPolicy', {
        description: `Flotilla ${clusterName}: describe instances in this region`,
        statements: instanceReadStatements(),
      }),
      nodeClassRead: new iam.ManagedPolicy(this, 'NodeClassReadPolicy', {
        description: `Flotilla ${clusterName}: subnets, security groups, images and public AMI parameters`,
        statements: nodeClassReadStatements(props.amiParameterPaths),
      }),
      catalogRead: new iam.ManagedPolicy(this, 'CatalogReadPolicy', {
        description: `Flotilla ${clusterName}: instance types, offerings, zones and prices`,
        statements: catalogReadStatements(),
      }),
      nodeLaunch: new iam.ManagedPolicy(this, 'NodeLaunchPolicy', {
        description: `Flotilla ${clusterName}: launch and tag nodes owned by this cluster`,
        statements: nodeLaunchStatements(clusterName, this.nodeRole),
      }),
      launchTemplateCleanup: new iam.ManagedPolicy(this, 'LaunchTemplateCleanupPolicy', {
        description: `Flotilla ${clusterName}: delete launch templates owned by this cluster`,
        statements: launchTemplateCleanupStatements(clusterName),
      }),
      nodeTermination: new iam.ManagedPolicy(this, 'NodeTerminationPolicy', {
        description: `Flotilla ${clusterName}: terminate nodes owned by this cluster`,
        statements: nodeTerminationStatements(clusterName),
      }),
      instanceProfiles: new iam.ManagedPolicy(this, 'InstanceProfilePolicy', {
        description: `Flotilla ${clusterName}: instance profiles for EC2NodeClasses with spec.role`,
        statements: instanceProfileStatements(clusterName),
      }),
      clusterAccess: new iam.ManagedPolicy(this, 'ClusterAccessPolicy', {
        description: `Flotilla ${clusterName}: find the API server endpoint`,
        statements: [
          new iam.PolicyStatement({
            sid: 'AllowAPIServerEndpointDiscovery',
            actions: ['eks:DescribeCluster'],
            resources: [this.clusterArn],
          }),
        ],
      }),
    };

    const namespace = props.namespace ?? 'flotilla';
    const serviceAccount = props.shimServiceAccount ?? 'flotilla-shim';
    this.shimRole = new iam.Role(this, 'ShimRole', {
      description: `Flotilla ${clusterName} shim (${namespace}/${serviceAccount}): send pod events`,
      // EKS Pod Identity tags each session with the pod's cluster, namespace and ServiceAccount:
      // only the shim's own association can assume the role, not any other in the account.
      assumedBy: new iam.ServicePrincipal('pods.eks.amazonaws.com').withSessionTags().withConditions({
        StringEquals: {
          'aws:SourceAccount': stack.account,
          'aws:RequestTag/eks-cluster-name': clusterName,
          'aws:RequestTag/kubernetes-namespace': namespace,
          'aws:RequestTag/kubernetes-service-account': serviceAccount,
        },
      }),
      inlinePolicies: {
        SendPodEvents: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              sid: 'AllowSendPodEvents',
              actions: ['sqs:SendMessage'],
              resources: [queues.podEvents.queueArn],
            }),
          ],
        }),
      },
    });
    if (props.shimPodIdentity ?? true) {
      new eks.CfnPodIdentityAssociation(this, 'ShimPodIdentity', {
        clusterName,
        namespace,
        serviceAccount,
        roleArn: this.shimRole.roleArn,
      });
    }
    if (props.accessEntries ?? true) {
      new eks.CfnAccessEntry(this, 'NodeAccessEntry', {
        clusterName,
        principalArn: this.nodeRole.roleArn,
        type: 'EC2_LINUX',
      });
    }

    for (const [name, dlq] of Object.entries(deadLetterQueues))
      this.alarmOnDepth(dlq, `${pascal(name)}DeadLetterAlarm`);
    this.alarmOnDepth(this.eventsDeadLetterQueue, 'EventsDeadLetterAlarm');

    const functions: Record<string, nodejs.NodejsFunction> = {};
    const functionRoles: Record<string, iam.Role> = {};
    for (const definition of props.functions ?? FLOTILLA_FUNCTIONS) {
      const { fn, role } = this.addFunction(definition);
      functions[definition.name] = fn;
      functionRoles[definition.name] = role;
    }
    this.functions = functions;
    this.functionRoles = functionRoles;

    for (const query of LOG_QUERIES) {
      new logs.CfnQueryDefinition(this, `${pascal(query.name)}Query`, {
        name: `flotilla/${clusterName}/${query.name}`,
        queryString: query.queryString,
        ...(this.logGroups.length === 0
          ? {}
          : { logGroupNames: this.logGroups.map((group) => group.logGroupName) }),
      });
    }

    this.addOutputs();
    this.addNagSuppressions();
  }

  /** The cluster side (namespace, CRDs, RBAC, shim ServiceAccount) as one YAML stream for `kubectl apply -f -`. */
  renderManifests(options: Pick<ClusterManifestOptions, 'crdsDir'> = {}): string {
    const stack = Stack.of(this);
    const concrete = !Token.isUnresolved(stack.account) && !Token.isUnresolved(stack.region);
    const suffix = stack.region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
    return renderClusterManifests({
      namespace: this.props.namespace ?? 'flotilla',
      shimServiceAccount: this.props.shimServiceAccount ?? 'flotilla-shim',
      controllerGroup: this.props.controllerGroup ?? CONTROLLER_GROUP,
      ...(concrete
        ? {
            shim: {
              clusterName: this.props.clusterName,
              region: stack.region,
              queueUrl: `https://sqs.${stack.region}.${suffix}/${stack.account}/${podEventQueueName(this.props.clusterName)}`,
            },
          }
        : {}),
      ...options,
    });
  }

  private makeDeadLetterQueue(id: string, what: string): sqs.Queue {
    const queue = new sqs.Queue(this, id, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      queue,
      ['AwsSolutions-SQS3'],
      `A dead-letter queue (${what}) has no dead-letter queue of its own.`,
    );
    return queue;
  }

  private alarmOnDepth(queue: sqs.Queue, id: string): void {
    const alarm = queue
      .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' })
      .createAlarm(this, id, {
        alarmDescription: `Flotilla ${this.clusterName}: messages in a dead-letter queue; inspect and redrive them`,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.addAlarmActions(alarm);
  }

  private addAlarmActions(alarm: cloudwatch.Alarm): void {
    this.alarms.push(alarm);
    if (this.props.alarmTopic === undefined) return;
    const action = new cloudwatchActions.SnsAction(this.props.alarmTopic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }

  private envValues(): Record<EnvVarKey, string> {
    return {
      clusterName: this.clusterName,
      stateTable: this.stateTable.tableName,
      podEventQueueUrl: this.queues.podEvents.queueUrl,
      interruptionQueueUrl: this.queues.interruption.queueUrl,
      terminationQueueUrl: this.queues.termination.queueUrl,
      nodeRoleName: this.nodeRole.roleName,
      instanceProfileName: this.instanceProfile.instanceProfileName,
      logLevel: this.props.logLevel ?? 'info',
      rebalanceAction: this.props.rebalanceAction ?? 'event',
    };
  }

  private addFunction(definition: FunctionDefinition): { fn: nodejs.NodejsFunction; role: iam.Role } {
    const id = pascal(definition.name);
    const root = this.props.projectRoot ?? PROJECT_ROOT;
    const timeout = definition.timeout ?? Duration.seconds(60);

    const logGroup = new logs.LogGroup(this, `${id}LogGroup`, {
      retention: this.props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    this.logGroups.push(logGroup);

    const role = new iam.Role(this, `${id}Role`, {
      description: `Flotilla ${this.clusterName} ${definition.name} Lambda`,
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    // Our own log group only, instead of AWSLambdaBasicExecutionRole's logs:* on every group.
    logGroup.grantWrite(role);
    this.grantPermissions(role, definition.permissions);

    const schedules = definition.triggers.flatMap((t) => (t.kind === 'schedule' ? [t] : []));
    const failures =
      schedules.length === 0
        ? undefined
        : this.makeDeadLetterQueue(
            `${id}FailureQueue`,
            `${definition.name} invocations that failed after retries`,
          );

    const values = this.envValues();
    const environment = {
      ...Object.fromEntries(definition.env.map((key) => [EnvVar[key], values[key]])),
      // Stack traces point into the TypeScript sources (the bundle ships its source map).
      NODE_OPTIONS: '--enable-source-maps',
    };
    const fn = new nodejs.NodejsFunction(this, `${id}Function`, {
      description: definition.description,
      entry: path.join(root, definition.entry),
      handler: 'handler',
      projectRoot: root,
      depsLockFilePath: path.join(root, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: definition.memorySize ?? 512,
      timeout,
      role,
      logGroup,
      environment,
      ...(definition.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: definition.reservedConcurrency }),
      ...(failures === undefined
        ? {}
        : {
            onFailure: new destinations.SqsDestination(failures),
            retryAttempts: 1,
            maxEventAge: Duration.minutes(10),
          }),
      ...(this.props.vpc === undefined
        ? {}
        : {
            vpc: this.props.vpc,
            ...(this.props.vpcSubnets === undefined ? {} : { vpcSubnets: this.props.vpcSubnets }),
            ...(this.props.securityGroups === undefined ? {} : { securityGroups: this.props.securityGroups }),
          }),
      bundling: {
        // Local esbuild (a devDependency) only: these machines and most CI runners have no Docker.
        forceDockerBundling: false,
        format: nodejs.OutputFormat.ESM,
        target: 'node22',
        platform: 'node',
        sourceMap: true,
        minify: true,
        mainFields: ['module', 'main'],
        // Bundle the SDK too, so the Lambdas run the versions the tests ran.
        externalModules: [],
        // CommonJS dependencies call require(); ESM bundles need it defined.
        banner:
          "import { createRequire as __flotillaCreateRequire } from 'node:module';const require = __flotillaCreateRequire(import.meta.url);",
      },
    });

    for (const trigger of definition.triggers) {
      if (trigger.kind === 'schedule') {
        this.schedules[trigger.schedule].addTarget(
          new targets.LambdaFunction(fn, {
            deadLetterQueue: this.eventsDeadLetterQueue,
            retryAttempts: 2,
            maxEventAge: Duration.minutes(5),
          }),
        );
      } else {
        fn.addEventSource(
          new SqsEventSource(this.queues[trigger.queue], {
            batchSize: trigger.batchSize,
            reportBatchItemFailures: true,
            ...(trigger.maxBatchingWindow === undefined
              ? {}
              : { maxBatchingWindow: trigger.maxBatchingWindow }),
            ...(trigger.maxConcurrency === undefined ? {} : { maxConcurrency: trigger.maxConcurrency }),
          }),
        );
      }
    }

    if (definition.invokeOnDeploy) {
      new triggers.Trigger(this, `${id}OnDeploy`, {
        handler: fn,
        invocationType: triggers.InvocationType.EVENT,
        executeOnHandlerChange: true,
        executeAfter: [this.stateTable],
      });
    }

    this.addAlarmActions(
      fn
        .metricErrors({ period: Duration.minutes(5), statistic: 'Sum' })
        .createAlarm(this, `${id}ErrorsAlarm`, {
          alarmDescription: `Flotilla ${this.clusterName}: the ${definition.name} Lambda failed; see its log group`,
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
    if (failures !== undefined) this.alarmOnDepth(failures, `${id}FailureAlarm`);

    this.output(`${id}FunctionName`, fn.functionName, `${definition.name} Lambda`);
    this.output(`${id}RoleArn`, role.roleArn, `Role of the ${definition.name} Lambda`);

    this.suppressFunctionFindings(fn, role);
    return { fn, role };
  }

  private grantPermissions(role: iam.Role, permissions: readonly Permission[]): void {
    for (const permission of new Set(permissions)) {
      switch (permission) {
        case 'describeInstances':
          role.addManagedPolicy(this.policies.instanceRead);
          break;
        case 'resolveNodeClasses':
          role.addManagedPolicy(this.policies.nodeClassRead);
          break;
        case 'describeCatalog':
          role.addManagedPolicy(this.policies.catalogRead);
          break;
        case 'launch':
          role.addManagedPolicy(this.policies.nodeLaunch);
          break;
        case 'cleanLaunchTemplates':
          role.addManagedPolicy(this.policies.launchTemplateCleanup);
          break;
        case 'manageInstanceProfiles':
          role.addManagedPolicy(this.policies.instanceProfiles);
          break;
        case 'terminate':
          role.addManagedPolicy(this.policies.nodeTermination);
          break;
        case 'stateRead':
          // Only what the adapters call (CDK's grantReadData adds Scan, streams and more).
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowStateTableReads',
              actions: ['dynamodb:GetItem', 'dynamodb:Query'],
              resources: [this.stateTable.tableArn],
            }),
          );
          break;
        case 'stateWrite':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowStateTableWrites',
              actions: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
              resources: [this.stateTable.tableArn],
            }),
          );
          break;
        case 'sendTermination':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowTerminationRequests',
              actions: ['sqs:SendMessage'],
              resources: [this.queues.termination.queueArn],
            }),
          );
          break;
        case 'sendPodEvents':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowProvisionerFollowUps',
              actions: ['sqs:SendMessage'],
              resources: [this.queues.podEvents.queueArn],
            }),
          );
          break;
        case 'kubernetes':
          role.addManagedPolicy(this.policies.clusterAccess);
          if (this.props.accessEntries ?? true) {
            new eks.CfnAccessEntry(this, `${role.node.id}AccessEntry`, {
              clusterName: this.clusterName,
              principalArn: role.roleArn,
              type: 'STANDARD',
              kubernetesGroups: [this.props.controllerGroup ?? CONTROLLER_GROUP],
            });
          }
          break;
        default:
          assertNever(permission);
      }
    }
  }

  private addOutputs(): void {
    const outputs: [string, string, string][] = [
      [
        'StateTableName',
        this.stateTable.tableName,
        'DynamoDB state table (offerings, back-offs, leases, idempotency)',
      ],
      ['PodEventQueueUrl', this.queues.podEvents.queueUrl, 'Queue the shim sends pod events to'],
      ['PodEventQueueArn', this.queues.podEvents.queueArn, 'Queue the shim sends pod events to'],
      ['InterruptionQueueUrl', this.queues.interruption.queueUrl, 'Queue of EC2 interruption events'],
      ['InterruptionQueueArn', this.queues.interruption.queueArn, 'Queue of EC2 interruption events'],
      ['TerminationQueueUrl', this.queues.termination.queueUrl, 'Queue of termination steps'],
      ['TerminationQueueArn', this.queues.termination.queueArn, 'Queue of termination steps'],
      ['NodeRoleName', this.nodeRole.roleName, 'IAM role of the nodes'],
      ['NodeRoleArn', this.nodeRole.roleArn, 'IAM role of the nodes'],
      [
        'InstanceProfileName',
        this.instanceProfile.instanceProfileName,
        'Instance profile of the node role: set it as spec.instanceProfile of your EC2NodeClasses',
      ],
      ['ShimRoleArn', this.shimRole.roleArn, 'Pod Identity role of the shim'],
    ];
    for (const [id, value, description] of outputs) this.output(id, value, description);
  }

  /** A stack output keyed `<construct id><id>` (e.g. `FlotillaStateTableName`), without a hash suffix. */
  private output(id: string, value: string, description: string): void {
    new CfnOutput(this, id, { value, description }).overrideLogicalId(`${this.node.id}${id}`);
  }

  private suppressFunctionFindings(fn: nodejs.NodejsFunction, role: iam.Role): void {
    acknowledge(
      fn,
      ['AwsSolutions-L1'],
      'Pinned to nodejs22.x on purpose: the tests run on Node 22 (the node@22 devDependency), so the Lambdas run the major that was tested.',
    );
    if (this.props.vpc !== undefined) {
      acknowledge(
        role,
        [
          'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        ],
        'In a VPC, Lambda needs AWSLambdaVPCAccessExecutionRole to create and delete its network interfaces; CDK attaches it.',
      );
    }
  }

  private addNagSuppressions(): void {
    acknowledge(
      this.nodeRole,
      [
        'AmazonEKSWorkerNodePolicy',
        'AmazonEKS_CNI_Policy',
        'AmazonEC2ContainerRegistryPullOnly',
        'AmazonSSMManagedInstanceCore',
      ].map((name) => `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${name}]`),
      'EKS nodes need exactly these AWS managed policies (kubelet, VPC CNI, image pulls, SSM agent), as in the EKS and Karpenter node role.',
    );
    for (const policy of [
      this.policies.instanceRead,
      this.policies.nodeClassRead,
      this.policies.catalogRead,
      this.policies.nodeLaunch,
      this.policies.launchTemplateCleanup,
    ]) {
      acknowledge(
        policy,
        ['AwsSolutions-IAM5[Resource::*]'],
        'EC2 Describe* and pricing:GetProducts support no resource-level permissions, so their resource must be *; the Describe calls are limited to this region by aws:RequestedRegion.',
      );
    }
    for (const path of (this.props.amiParameterPaths ?? []).filter((p) => p.endsWith('*'))) {
      acknowledge(
        this.policies.nodeClassRead,
        [
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/${path.replace(/^\//, '')}]`,
        ],
        'AMI id parameters under a path the stack was given (amiParameterPaths); which ones depends on the EC2NodeClasses at run time.',
      );
    }
    acknowledge(
      this.policies.nodeClassRead,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/aws/service/*]'],
      'Only the public AWS parameters under /aws/service/ (EKS-optimized AMI aliases) can be read; which ones depends on the EC2NodeClass at run time.',
    );
    acknowledge(
      this.policies.nodeLaunch,
      [
        ['', 'image'],
        ['', 'snapshot'],
        ['*', 'security-group'],
        ['*', 'subnet'],
        ['*', 'capacity-reservation'],
        ['*', 'placement-group'],
      ].map(
        ([account, type]) =>
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:${account}:${type}/*]`,
      ),
      'The images, snapshots, subnets, security groups, capacity reservations and placement groups a launch uses are chosen by the EC2NodeClass at run time (subnets of a shared VPC belong to another account); the launch itself is only allowed with this cluster’s ownership tags on what it creates.',
    );
    acknowledge(
      this.policies.nodeLaunch,
      ['fleet', 'instance', 'volume', 'network-interface', 'launch-template', 'spot-instances-request'].map(
        (type) =>
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:${type}/*]`,
      ),
      'Instances, volumes, fleets, network interfaces, spot requests and launch templates do not exist before the call that creates them, so their ARNs are wildcards; every statement on them requires this cluster’s ownership tags (aws:RequestTag at creation, aws:ResourceTag afterwards), and tagging afterwards is limited to the last-use tag of launch templates.',
    );
    acknowledge(
      this.policies.launchTemplateCleanup,
      [
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:launch-template/*]',
      ],
      'Which launch templates Flotilla created is known only at run time; DeleteLaunchTemplate is allowed only on templates tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
    acknowledge(
      this.policies.instanceProfiles,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile/*]'],
      'Instance profiles are created per EC2NodeClass at run time, so their ARNs are wildcards; creating, tagging, changing and deleting them requires this cluster’s ownership, region and ec2nodeclass tags. GetInstanceProfile is read-only.',
    );
    acknowledge(
      this.policies.nodeTermination,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*]'],
      'Which instances Flotilla launched is known only at run time; TerminateInstances is allowed only on instances tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
  }
}

function validateProps(props: FlotillaClusterProps): void {
  const problems: string[] = [];
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
  const intervals = [
    ['pendingPodPollInterval', props.pendingPodPollInterval],
    ['catalogRefreshInterval', props.catalogRefreshInterval],
    ['garbageCollectionInterval', props.garbageCollectionInterval],
    ['disruptionInterval', props.disruptionInterval],
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
  const root = props.projectRoot ?? PROJECT_ROOT;
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
    const timeout = definition.timeout ?? Duration.seconds(60);
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

/** Acknowledges cdk-nag findings (`RuleId` or `RuleId[finding]`) on `scope` and its children, with the reason. */
function acknowledge(scope: IConstruct, ids: readonly string[], reason: string): void {
  for (const id of ids) Validations.of(scope).acknowledge({ id, reason });
}

/** `pod-events` → `PodEvents`, `podEvents` → `PodEvents`. */
function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

function assertNever(value: never): never {
  throw new Error(`unexpected value ${String(value)}`);
}

/** The pod-event queue's name, fixed so the shim's manifest can name its URL: `flotilla-<cluster>-pod-events`. */
export function podEventQueueName(clusterName: string): string {
  return `flotilla-${clusterName}-pod-events`.slice(0, 80);
}
