import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  ResourceAlreadyExistsException,
} from '@aws-sdk/client-cloudwatch-logs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CreateEventBusCommand, EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  CreateRoleCommand,
  IAMClient,
} from '@aws-sdk/client-iam';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateScheduleGroupCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { podEventQueueName } from '../../../infra/queues.ts';
import { decisionBusNameFor } from '../../../infra/stack-mode.ts';
import { summaryBucketNameFor } from '../../../infra/summary-bucket.ts';
import { wakeUpGroupNameFor } from '../../../infra/wake-ups.ts';
import { STATE_TABLE } from '../../../shared/apis/state-table.ts';
import { summaryObjectKey } from '../../../shared/apis/summary-document.ts';
import { awsClientConfig, type Moto } from '../moto.ts';

// The AWS side of one deployed stack, on moto: what `cdk deploy` creates and Flotilla's Lambdas
// use (state table, summary bucket, queues, node role and instance profile, the wake-ups' Scheduler
// group and role, the EKS cluster they discover). The names are fixed so that the IAM check (iam-check.ts) can resolve the stack's
// policies to them.

export const STACK_ACCOUNT = '123456789012';
export const STACK_REGION = 'us-east-1';
/** The cluster every harness test plays: the stack's policies name it in conditions and ARNs. */
export const STACK_CLUSTER = 'test-cluster';
/** The live stack's name, as a test that needs it in moto's CloudFormation creates it. */
export const HARNESS_STACK_NAME = `Flotilla-${STACK_CLUSTER}`;
/** The stack is deployed with `amiParameterPaths` so that the provisioner may read AMI ids there. */
export const AMI_PARAMETER_PATH = '/team/*';

export const STACK_NAMES = {
  stateTable: 'flotilla-state',
  /** The name the stack gives the summary bucket in the harness's account and region. */
  summaryBucket: summaryBucketNameFor(STACK_ACCOUNT, STACK_REGION, STACK_CLUSTER),
  /** The key of the cluster's summary in it. */
  summaryObject: summaryObjectKey(STACK_CLUSTER),
  queues: {
    podEvents: `flotilla-${STACK_CLUSTER}-pod-events`,
    interruption: `flotilla-${STACK_CLUSTER}-interruption`,
    termination: `flotilla-${STACK_CLUSTER}-termination`,
    disruptionPasses: `flotilla-${STACK_CLUSTER}-disruption-passes`,
  },
  nodeRole: `flotilla-${STACK_CLUSTER}-node`,
  /** The instance profile of the node role (the stack's `InstanceProfileName` output). */
  instanceProfile: 'KarpenterNodeInstanceProfile',
  /** The bus every decision also goes to (the stack's `DecisionBusName` output). */
  decisionBus: decisionBusNameFor(STACK_CLUSTER),
  /** The provisioner's NodePool wake-ups: their Scheduler group, and the role Scheduler sends as. */
  wakeUpGroup: wakeUpGroupNameFor(STACK_CLUSTER),
  wakeUpRole: `flotilla-${STACK_CLUSTER}-wake-up`,
} as const;

export type StackQueue = keyof typeof STACK_NAMES.queues;

/** A shadow stack's own resources (`mode: 'shadow'`) beside the live stack's, on the same moto. */
export const SHADOW_STACK_NAMES = {
  stateTable: 'flotilla-shadow-state',
  summaryBucket: summaryBucketNameFor(STACK_ACCOUNT, STACK_REGION, STACK_CLUSTER, 'shadow'),
  podEvents: podEventQueueName(STACK_CLUSTER, 'shadow'),
  decisionBus: decisionBusNameFor(STACK_CLUSTER, 'shadow'),
  /** The log groups of its deciding Lambdas, which its shadow-report Lambda reads. */
  logGroups: {
    provisioner: `FlotillaShadow-${STACK_CLUSTER}-ProvisionerLogGroup`,
    disruption: `FlotillaShadow-${STACK_CLUSTER}-DisruptionLogGroup`,
  },
} as const;

const arn = {
  table: (name: string) => `arn:aws:dynamodb:${STACK_REGION}:${STACK_ACCOUNT}:table/${name}`,
  queue: (name: string) => `arn:aws:sqs:${STACK_REGION}:${STACK_ACCOUNT}:${name}`,
  role: (name: string) => `arn:aws:iam::${STACK_ACCOUNT}:role/${name}`,
  bucket: (name: string) => `arn:aws:s3:::${name}`,
  eventBus: (name: string) => `arn:aws:events:${STACK_REGION}:${STACK_ACCOUNT}:event-bus/${name}`,
  /** As CloudFormation gives a log group's Arn: with `:*`. */
  logGroup: (name: string) => `arn:aws:logs:${STACK_REGION}:${STACK_ACCOUNT}:log-group:${name}:*`,
};

/** The stack's resources as deployed on moto: their ARNs, and the queue URLs. */
export const STACK_ARNS = {
  stateTable: arn.table(STACK_NAMES.stateTable),
  summaryBucket: arn.bucket(STACK_NAMES.summaryBucket),
  summaryObject: `${arn.bucket(STACK_NAMES.summaryBucket)}/${STACK_NAMES.summaryObject}`,
  queues: {
    podEvents: arn.queue(STACK_NAMES.queues.podEvents),
    interruption: arn.queue(STACK_NAMES.queues.interruption),
    termination: arn.queue(STACK_NAMES.queues.termination),
    disruptionPasses: arn.queue(STACK_NAMES.queues.disruptionPasses),
  },
  nodeRole: arn.role(STACK_NAMES.nodeRole),
  decisionBus: arn.eventBus(STACK_NAMES.decisionBus),
  wakeUpRole: arn.role(STACK_NAMES.wakeUpRole),
} as const;

/** The shadow stack's resources as deployed on moto. */
export const SHADOW_STACK_ARNS = {
  stateTable: arn.table(SHADOW_STACK_NAMES.stateTable),
  summaryBucket: arn.bucket(SHADOW_STACK_NAMES.summaryBucket),
  podEvents: arn.queue(SHADOW_STACK_NAMES.podEvents),
  decisionBus: arn.eventBus(SHADOW_STACK_NAMES.decisionBus),
  logGroups: {
    provisioner: arn.logGroup(SHADOW_STACK_NAMES.logGroups.provisioner),
    disruption: arn.logGroup(SHADOW_STACK_NAMES.logGroups.disruption),
  },
} as const;

export interface DeployedStack {
  readonly queueUrls: Readonly<Record<StackQueue, string>>;
}

export interface DeployOptions {
  /** Also create the EKS cluster the Lambdas discover at cold start. @default false */
  readonly eksCluster?: boolean;
  /** Queue attributes (e.g. a short visibility timeout), per queue. */
  readonly queueAttributes?: Partial<Record<StackQueue, Record<string, string>>>;
}

/**
 * Creates the stack's resources on moto (after a reset), as CloudFormation would, with the test
 * account's own credentials.
 */
export async function deployStack(server: Moto, options: DeployOptions = {}): Promise<DeployedStack> {
  const config = awsClientConfig(server);
  await createStateTable(new DynamoDBClient(config), STACK_NAMES.stateTable);
  // moto serves every service on one endpoint, so S3 is addressed by path, not by bucket host name.
  await new S3Client({ ...config, forcePathStyle: true }).send(
    new CreateBucketCommand({ Bucket: STACK_NAMES.summaryBucket }),
  );
  const sqs = new SQSClient(config);
  const queueUrls = {} as Record<StackQueue, string>;
  for (const [key, name] of Object.entries(STACK_NAMES.queues) as [StackQueue, string][]) {
    const attributes = options.queueAttributes?.[key];
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        ...(attributes === undefined ? {} : { Attributes: attributes }),
      }),
    );
    queueUrls[key] = created.QueueUrl ?? '';
  }
  const iam = new IAMClient(config);
  await iam.send(
    new CreateRoleCommand({
      RoleName: STACK_NAMES.nodeRole,
      AssumeRolePolicyDocument: JSON.stringify({
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' }, Action: 'sts:AssumeRole' },
        ],
      }),
    }),
  );
  await iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: STACK_NAMES.instanceProfile }));
  await iam.send(
    new AddRoleToInstanceProfileCommand({
      InstanceProfileName: STACK_NAMES.instanceProfile,
      RoleName: STACK_NAMES.nodeRole,
    }),
  );
  await new EventBridgeClient(config).send(new CreateEventBusCommand({ Name: STACK_NAMES.decisionBus }));
  await iam.send(
    new CreateRoleCommand({
      RoleName: STACK_NAMES.wakeUpRole,
      AssumeRolePolicyDocument: JSON.stringify({
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Principal: { Service: 'scheduler.amazonaws.com' }, Action: 'sts:AssumeRole' },
        ],
      }),
    }),
  );
  await new SchedulerClient(config).send(new CreateScheduleGroupCommand({ Name: STACK_NAMES.wakeUpGroup }));
  if (options.eksCluster) {
    await new EKSClient(config).send(
      new CreateClusterCommand({
        name: STACK_CLUSTER,
        version: '1.34',
        roleArn: arn.role('eks'),
        resourcesVpcConfig: { subnetIds: ['subnet-1'] },
      }),
    );
  }
  return { queueUrls };
}

/** A state table as the stack defines it (STATE_TABLE's key schema). */
async function createStateTable(dynamodb: DynamoDBClient, name: string): Promise<void> {
  await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: STATE_TABLE.partitionKey, AttributeType: 'S' },
        { AttributeName: STATE_TABLE.sortKey, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: STATE_TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: STATE_TABLE.sortKey, KeyType: 'RANGE' },
      ],
    }),
  );
}

/**
 * Creates what a shadow stack (`-c mode=shadow`) deploys beside the live one and its Lambdas use:
 * its own state table (leases, offering cache) and decision bus. Its bucket and queue are not made: the shadow
 * Lambdas the tests run read the API server directly and get no pod events.
 */
export async function deployShadowStack(server: Moto): Promise<void> {
  await createStateTable(new DynamoDBClient(awsClientConfig(server)), SHADOW_STACK_NAMES.stateTable);
  await new EventBridgeClient(awsClientConfig(server)).send(
    new CreateEventBusCommand({ Name: SHADOW_STACK_NAMES.decisionBus }),
  );
  const logs = new CloudWatchLogsClient(awsClientConfig(server));
  try {
    for (const logGroupName of Object.values(SHADOW_STACK_NAMES.logGroups)) {
      await logs.send(new CreateLogGroupCommand({ logGroupName })).catch((error: unknown) => {
        if (!(error instanceof ResourceAlreadyExistsException)) throw error;
      });
    }
  } finally {
    logs.destroy();
  }
}
