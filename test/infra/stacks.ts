import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as sns from 'aws-cdk-lib/aws-sns';
import { FlotillaCluster, type FlotillaClusterProps } from '../../infra/flotilla-cluster.ts';
import type { FunctionDefinition } from '../../infra/functions.ts';

/** Context that skips NodejsFunction bundling: template tests need no esbuild run. */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

export const FIXTURE_ENTRY = 'test/infra/fixtures/handler.ts';

/** Two of the rows still to come (see infra/functions.ts), on a stand-in entry, to test queue wiring. */
export const FUTURE_FUNCTIONS: readonly FunctionDefinition[] = [
  {
    name: 'provisioner',
    entry: FIXTURE_ENTRY,
    description: 'test provisioner',
    triggers: [
      {
        kind: 'queue',
        queue: 'podEvents',
        batchSize: 10,
        maxBatchingWindow: Duration.seconds(1),
        maxConcurrency: 2,
      },
      { kind: 'schedule', schedule: 'pendingPods' },
    ],
    env: ['clusterName', 'stateTable', 'logLevel', 'podEventQueueUrl', 'instanceProfileName'],
    permissions: [
      'resolveNodeClasses',
      'describeInstances',
      'launch',
      'manageInstanceProfiles',
      'stateRead',
      'stateWrite',
      'kubernetes',
    ],
    reservedConcurrency: 2,
  },
  {
    name: 'termination',
    entry: FIXTURE_ENTRY,
    description: 'test termination',
    triggers: [{ kind: 'queue', queue: 'termination', batchSize: 10 }],
    env: ['clusterName', 'terminationQueueUrl'],
    permissions: ['describeInstances', 'terminate', 'sendTermination', 'kubernetes'],
  },
];

export interface TestStackOptions {
  /** Put the Lambdas in a new VPC of the stack. */
  readonly vpc?: boolean;
  /** Send alarms to a new SNS topic of the stack. */
  readonly alarmTopic?: boolean;
  /** Deploy to this account and region: names built from them become literal strings. */
  readonly env?: { readonly account: string; readonly region: string };
}

/** One `FlotillaCluster` (cluster `demo`) in an environment-agnostic stack, with bundling skipped. */
export function makeStack(props: Partial<FlotillaClusterProps> = {}, options: TestStackOptions = {}) {
  const app = new App({ context: NO_BUNDLING });
  const stack = new Stack(app, 'Test', options.env === undefined ? {} : { env: options.env });
  // Vpc declares `vpnGatewayId: string | undefined`, which exactOptionalPropertyTypes refuses as IVpc.
  const vpc = options.vpc
    ? (new ec2.Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 1 }) as unknown as ec2.IVpc)
    : undefined;
  const topic = options.alarmTopic ? new sns.Topic(stack, 'Alarms') : undefined;
  const clusterProps: FlotillaClusterProps = { ...props, clusterName: props.clusterName ?? 'demo' };
  const cluster = new FlotillaCluster(stack, 'Flotilla', {
    ...(vpc === undefined ? {} : { vpc, vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } }),
    ...(topic === undefined ? {} : { alarmTopic: topic }),
    ...clusterProps,
  });
  return { app, stack, cluster, topic, vpc, template: Template.fromStack(stack) };
}

/**
 * `value`, failing the test where the stack did not build it: a live stack builds the queues,
 * node role, instance profile and policies a shadow stack leaves out.
 */
export function present<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the stack did not build this part');
  return value;
}

/** A CloudFormation reference (`Ref`/`Fn::GetAtt`) to a token, as it appears in the template. */
export function ref(stack: Stack, token: string): unknown {
  return stack.resolve(token);
}

export interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
  readonly Principal?: unknown;
}

/** An IAM statement and the logical ID of the managed policy, policy or role that holds it. */
export interface OwnedStatement {
  readonly owner: string;
  readonly statement: Statement;
}

/** Every IAM statement of the template, with its holder: managed policies, inline policies and roles' inline policies. */
export function ownedStatements(template: Template): OwnedStatement[] {
  const out: OwnedStatement[] = [];
  const docs = (
    resources: Record<string, { Properties?: Record<string, unknown> }>,
    pick: (p: Record<string, unknown>) => unknown[],
  ) => {
    for (const [owner, resource] of Object.entries(resources)) {
      for (const doc of pick(resource.Properties ?? {})) {
        for (const statement of (doc as { Statement?: Statement[] } | undefined)?.Statement ?? []) {
          out.push({ owner, statement });
        }
      }
    }
  };
  docs(template.findResources('AWS::IAM::ManagedPolicy'), (p) => [p['PolicyDocument']]);
  docs(template.findResources('AWS::IAM::Policy'), (p) => [p['PolicyDocument']]);
  docs(template.findResources('AWS::IAM::Role'), (p) =>
    ((p['Policies'] as { PolicyDocument: unknown }[] | undefined) ?? []).map(
      (policy) => policy.PolicyDocument,
    ),
  );
  return out;
}

/** Every IAM statement of the template: managed policies, inline policies and roles' inline policies. */
export function allStatements(template: Template): Statement[] {
  return ownedStatements(template).map((owned) => owned.statement);
}

export const actionsOf = (statement: Statement): string[] =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

export const resourcesOf = (statement: Statement): unknown[] =>
  Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
