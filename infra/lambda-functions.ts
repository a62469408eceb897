import path from 'node:path';
import { type CustomResource, Duration } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as triggers from 'aws-cdk-lib/triggers';
import type { Construct, IConstruct } from 'constructs';
import { EnvVar, type EnvVarKey } from '../shared/runtime/env.ts';
import type { ClusterAlarms } from './alarms.ts';
import { onClusterDeleted, onStackDeleted } from './cleanup-triggers.ts';
import { type ClusterSize, lambdaMemoryMb } from './cluster-size.ts';
import { acknowledge, addOutput, pascal } from './construct-kit.ts';
import type { ControllerPolicies } from './controller-policies.ts';
import type { FunctionDefinition, ScheduleName } from './functions.ts';
import { makeDeadLetterQueue, type QueueSet } from './queues.ts';
import { SHADOW_LINE_SOURCES } from './stack-mode.ts';

/**
 * A Lambda's memory: from its row's memory model for the cluster's size, with 30% headroom, never
 * below the row's `memorySize`; the row's `memorySize` (default 512) when it has no model.
 */
export function functionMemoryMb(definition: FunctionDefinition, size: ClusterSize): number {
  const floor = definition.memorySize ?? 512;
  return definition.memoryModel === undefined ? floor : lambdaMemoryMb(definition.memoryModel, size, floor);
}

/** The default timeout of a Lambda whose row sets none. */
export const DEFAULT_FUNCTION_TIMEOUT = Duration.seconds(60);

/** Where the Lambdas run when the cluster's API endpoint is private. */
export interface FunctionNetwork {
  readonly vpc: ec2.IVpc;
  /** @default the private subnets of `vpc` */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** @default a new security group with all egress allowed */
  readonly securityGroups?: ec2.ISecurityGroup[];
}

export interface ClusterFunctionsProps {
  readonly clusterName: string;
  /** The Lambdas, one row each (infra/functions.ts). */
  readonly definitions: readonly FunctionDefinition[];
  /** Folder that `entry` and `package-lock.json` are relative to. */
  readonly projectRoot: string;
  readonly logRetention: logs.RetentionDays;
  /** @default outside any VPC */
  readonly network?: FunctionNetwork;
  /** The value of every environment variable a row may ask for (a row asking for another is refused). */
  readonly env: { readonly [K in EnvVarKey]?: string };
  /** The queues rows may be triggered by (a row triggered by another is refused). */
  readonly queues: QueueSet<sqs.IQueue>;
  /** The schedules rows may be triggered by (a row triggered by another is refused). */
  readonly schedules: { readonly [K in ScheduleName]?: events.Rule };
  /** Where EventBridge puts schedule invocations it could not deliver. */
  readonly eventsDeadLetterQueue: sqs.IQueue;
  /**
   * Give each schedule-driven Lambda an on-failure queue (which its role may send to). A shadow
   * stack's Lambdas send to no queue: the next tick runs again, and the errors alarm tells.
   * @default true
   */
  readonly failureQueues?: boolean;
  /** What a Lambda invoked on deploy waits for (the state table). */
  readonly invokeAfter: readonly IConstruct[];
  readonly policies: ControllerPolicies;
  readonly alarms: ClusterAlarms;
  /** The size of the cluster: rows with a memory model get memory for it. */
  readonly clusterSize: ClusterSize;
  /**
   * Whether deleting the stack runs the clean-up Lambda (a `stackDeleted` trigger).
   * @default true
   */
  readonly cleanUpOnDestroy?: boolean;
}

/**
 * The Lambdas of `definitions`, each derived from its row: a log group, a role with the row's
 * permission bundles and its own log group only, a failure queue for scheduled ones, the bundled
 * function, its triggers, an invocation on deploy if asked, alarms, outputs and cdk-nag reasons.
 * Built into `scope` (see construct-kit.ts): `<Name>LogGroup`, `<Name>Role`, `<Name>FailureQueue`,
 * `<Name>Function`, `<Name>OnDeploy`, `<Name>ErrorsAlarm`, `<Name>ThrottlesAlarm` (without reserved
 * concurrency),
 * `<Name>FailureAlarm`, outputs
 * `<Name>FunctionName` and `<Name>RoleArn`.
 */
export class ClusterFunctions {
  readonly functions: Readonly<Record<string, nodejs.NodejsFunction>>;
  readonly roles: Readonly<Record<string, iam.Role>>;
  /** The log groups of the Lambdas, in row order. */
  readonly logGroups: readonly logs.LogGroup[];
  /** The on-failure queue of each schedule-driven Lambda, by Lambda name. */
  readonly failureQueues: Readonly<Record<string, sqs.IQueue>>;
  /** The custom resource whose deletion runs the clean-up, when the stack has one. */
  private cleanupResource: CustomResource | undefined;

  constructor(
    private readonly scope: Construct,
    private readonly props: ClusterFunctionsProps,
  ) {
    const functions: Record<string, nodejs.NodejsFunction> = {};
    const roles: Record<string, iam.Role> = {};
    const logGroups: logs.LogGroup[] = [];
    const groupsByName = new Map<string, logs.LogGroup>();
    const failureQueues: Record<string, sqs.IQueue> = {};
    for (const definition of props.definitions) {
      const { fn, role, logGroup, failures } = this.add(definition);
      functions[definition.name] = fn;
      roles[definition.name] = role;
      logGroups.push(logGroup);
      groupsByName.set(definition.name, logGroup);
      if (failures !== undefined) failureQueues[definition.name] = failures;
    }
    // The clean-up runs once every other Lambda, with its triggers, is gone: nothing launches after it.
    const cleanup = this.cleanupResource;
    if (cleanup !== undefined) {
      for (const [name, fn] of Object.entries(functions)) {
        const definition = props.definitions.find((d) => d.name === name);
        if (definition?.triggers.some((t) => t.kind === 'stackDeleted') !== true)
          fn.node.addDependency(cleanup);
      }
    }
    this.functions = functions;
    this.roles = roles;
    this.logGroups = logGroups;
    this.failureQueues = failureQueues;
    this.grantShadowLines(groupsByName);
  }

  /**
   * `readShadowLines`: FilterLogEvents on the log groups of the stack's deciding Lambdas
   * (SHADOW_LINE_SOURCES), whose names the Lambda gets in `shadowLogGroups`.
   */
  private grantShadowLines(groupsByName: ReadonlyMap<string, logs.LogGroup>): void {
    for (const definition of this.props.definitions) {
      if (!definition.permissions.includes('readShadowLines')) continue;
      const sources = SHADOW_LINE_SOURCES.map((name) =>
        required(groupsByName.get(name), definition, `log group of the ${name} Lambda`),
      );
      const role = required(this.roles[definition.name], definition, 'role');
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'AllowShadowLineReads',
          actions: ['logs:FilterLogEvents'],
          resources: sources.map((group) => group.logGroupArn),
        }),
      );
      this.functions[definition.name]?.addEnvironment(
        EnvVar.shadowLogGroups,
        sources.map((group) => group.logGroupName).join(','),
      );
    }
  }

  private add(definition: FunctionDefinition): {
    fn: nodejs.NodejsFunction;
    role: iam.Role;
    logGroup: logs.LogGroup;
    failures: sqs.Queue | undefined;
  } {
    const { scope, props } = this;
    const id = pascal(definition.name);
    const root = props.projectRoot;
    const timeout = definition.timeout ?? DEFAULT_FUNCTION_TIMEOUT;

    const logGroup = new logs.LogGroup(scope, `${id}LogGroup`, { retention: props.logRetention });

    const role = new iam.Role(scope, `${id}Role`, {
      description: `Flotilla ${props.clusterName} ${definition.name} Lambda`,
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    // Our own log group only, instead of AWSLambdaBasicExecutionRole's logs:* on every group.
    logGroup.grantWrite(role);
    // readShadowLines needs the stack's log groups: grantShadowLines gives it once all are built.
    props.policies.grant(
      role,
      definition.permissions.filter((permission) => permission !== 'readShadowLines'),
    );

    const schedules = definition.triggers.flatMap((t) => (t.kind === 'schedule' ? [t] : []));
    const failures =
      schedules.length === 0 || props.failureQueues === false
        ? undefined
        : makeDeadLetterQueue(
            scope,
            `${id}FailureQueue`,
            `${definition.name} invocations that failed after retries`,
          );

    const environment = {
      ...Object.fromEntries(
        definition.env
          .filter((key) => !(OPTIONAL_ENV.has(key) && props.env[key] === undefined))
          .map((key) => [EnvVar[key], required(props.env[key], definition, `variable ${key}`)]),
      ),
      // Stack traces point into the TypeScript sources (the bundle ships its source map).
      NODE_OPTIONS: '--enable-source-maps',
    };
    const network = definition.outsideVpc === true ? undefined : props.network;
    const fn = new nodejs.NodejsFunction(scope, `${id}Function`, {
      description: definition.description,
      entry: path.join(root, definition.entry),
      handler: 'handler',
      projectRoot: root,
      depsLockFilePath: path.join(root, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: functionMemoryMb(definition, props.clusterSize),
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
      ...(network === undefined
        ? {}
        : {
            vpc: network.vpc,
            ...(network.vpcSubnets === undefined ? {} : { vpcSubnets: network.vpcSubnets }),
            ...(network.securityGroups === undefined ? {} : { securityGroups: network.securityGroups }),
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
        required(props.schedules[trigger.schedule], definition, `${trigger.schedule} schedule`).addTarget(
          new targets.LambdaFunction(fn, {
            deadLetterQueue: props.eventsDeadLetterQueue,
            retryAttempts: 2,
            maxEventAge: Duration.minutes(5),
          }),
        );
      } else if (trigger.kind === 'stackDeleted') {
        this.cleanupResource = onStackDeleted(
          scope,
          id,
          fn,
          props.clusterName,
          this.props.cleanUpOnDestroy !== false,
        );
      } else if (trigger.kind === 'clusterDeleted') {
        onClusterDeleted(scope, id, fn, props.clusterName, props.eventsDeadLetterQueue);
      } else {
        fn.addEventSource(
          new SqsEventSource(required(props.queues[trigger.queue], definition, `${trigger.queue} queue`), {
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
      new triggers.Trigger(scope, `${id}OnDeploy`, {
        handler: fn,
        invocationType: triggers.InvocationType.EVENT,
        executeOnHandlerChange: true,
        executeAfter: [...props.invokeAfter],
      });
    }

    props.alarms.onErrors(fn, `${id}ErrorsAlarm`, definition.name);
    // A Lambda with reserved concurrency is throttled by its own cap, on purpose (and the account
    // cannot take that concurrency from it); one without is throttled only when the account ran out.
    if (definition.reservedConcurrency === undefined) {
      props.alarms.onThrottles(fn, `${id}ThrottlesAlarm`, definition.name);
    }
    if (failures !== undefined) props.alarms.onQueueDepth(failures, `${id}FailureAlarm`);

    addOutput(scope, `${id}FunctionName`, fn.functionName, `${definition.name} Lambda`);
    addOutput(scope, `${id}RoleArn`, role.roleArn, `Role of the ${definition.name} Lambda`);

    acknowledge(
      fn,
      ['AwsSolutions-L1'],
      'Pinned to nodejs22.x on purpose: the tests run on Node 22 (the node@22 devDependency), so the Lambdas run the major that was tested.',
    );
    if (network !== undefined) {
      acknowledge(
        role,
        [
          'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        ],
        'In a VPC, Lambda needs AWSLambdaVPCAccessExecutionRole to create and delete its network interfaces; CDK attaches it.',
      );
    }
    return { fn, role, logGroup, failures };
  }
}

/** Variables a stack sets only when its props do: unset, the Lambda runs without them. */
const OPTIONAL_ENV: ReadonlySet<string> = new Set(['maxCostPerHour']);

/** `value`, which `definition` needs; a stack without it (a shadow stack's missing parts) refuses the row. */
function required<T>(value: T | undefined, definition: FunctionDefinition, what: string): T {
  if (value === undefined) {
    throw new Error(`function "${definition.name}" needs the ${what}, which this stack does not have`);
  }
  return value;
}
