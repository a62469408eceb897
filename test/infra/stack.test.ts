import { createHash } from 'node:crypto';
import { type CfnElement, Duration, Token } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FlotillaConfigError, podEventQueueName } from '../../infra/flotilla-cluster.ts';
import { catalogFunction, FLOTILLA_FUNCTIONS } from '../../infra/functions.ts';
import { LOG_QUERIES } from '../../infra/log-queries.ts';
import { STATE_TABLE } from '../../shared/apis/state-table.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import {
  actionsOf,
  allStatements,
  FIXTURE_ENTRY,
  FUTURE_FUNCTIONS,
  makeStack,
  present,
  ref,
  type Statement,
} from './stacks.ts';

type Resources = Record<
  string,
  { Properties: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }
>;

/** The Lambdas that read the cluster, and so the cluster summary. */
const SUMMARY_READERS = ['provisioner', 'interruption', 'termination', 'disruption', 'garbage-collector'];

describe('FlotillaCluster with its default Lambdas', () => {
  let built: ReturnType<typeof makeStack>;
  let template: Template;
  beforeAll(() => {
    built = makeStack();
    template = built.template;
  });

  it.each([
    ['aws.ec2', 'EC2 Spot Instance Interruption Warning', undefined],
    ['aws.ec2', 'EC2 Instance Rebalance Recommendation', undefined],
    [
      'aws.ec2',
      'EC2 Instance State-change Notification',
      { state: ['stopping', 'stopped', 'shutting-down', 'terminated'] },
    ],
    ['aws.health', 'AWS Health Event', { service: ['EC2'], eventTypeCategory: ['scheduledChange'] }],
    ['aws.ec2', 'EC2 Capacity Reservation Instance Interruption Warning', undefined],
  ])('routes %s "%s" to the interruption queue with retries and a DLQ', (source, detailType, detail) => {
    const { stack, cluster } = built;
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.exact({
        source: [source],
        'detail-type': [detailType],
        ...(detail === undefined ? {} : { detail }),
      }),
      Targets: [
        Match.objectLike({
          Arn: ref(stack, present(cluster.queues.interruption).queueArn),
          RetryPolicy: { MaximumRetryAttempts: Match.anyValue(), MaximumEventAgeInSeconds: Match.anyValue() },
          DeadLetterConfig: { Arn: ref(stack, cluster.eventsDeadLetterQueue.queueArn) },
        }),
      ],
    });
  });

  it('has exactly five rules with event patterns targeting only the interruption queue, and the clean-up rule on EKS DeleteCluster', () => {
    const patterned = Object.values(template.findResources('AWS::Events::Rule') as Resources).filter(
      (rule) => rule.Properties['EventPattern'] !== undefined,
    );
    const isCleanup = (rule: (typeof patterned)[number]) =>
      JSON.stringify(rule.Properties['EventPattern']).includes('DeleteCluster');
    const [cleanup, ...others] = patterned.filter(isCleanup);
    expect(others).toEqual([]);
    expect(cleanup?.Properties['EventPattern']).toEqual({
      source: ['aws.eks'],
      'detail-type': ['AWS API Call via CloudTrail'],
      detail: {
        eventSource: ['eks.amazonaws.com'],
        eventName: ['DeleteCluster'],
        requestParameters: { name: ['demo'] },
      },
    });
    expect(cleanup?.Properties['Targets']).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [expect.stringMatching(/^FlotillaCleanupFunction/), 'Arn'] },
      }),
    ]);
    const rules = patterned.filter((rule) => !isCleanup(rule));
    expect(rules).toHaveLength(5);
    for (const rule of rules) {
      expect(rule.Properties['Targets']).toEqual([
        expect.objectContaining({
          Arn: ref(built.stack, present(built.cluster.queues.interruption).queueArn),
        }),
      ]);
    }
  });

  it('schedules the pending-pod poll, catalog refresh, garbage collection, disruption and the instance status poll', () => {
    const expressions = Object.values(template.findResources('AWS::Events::Rule') as Resources)
      .map((rule) => rule.Properties['ScheduleExpression'])
      .filter((expression) => expression !== undefined)
      .sort();
    expect(expressions).toEqual([
      'rate(1 hour)',
      'rate(1 minute)',
      'rate(1 minute)',
      'rate(1 minute)',
      'rate(2 minutes)',
    ]);
  });

  it('wires the catalog Lambda to the hourly schedule with retries and a DLQ', () => {
    const { stack, cluster } = built;
    const catalog = cluster.functions['catalog'];
    expect(catalog).toBeDefined();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 hour)',
      Targets: [
        Match.objectLike({
          Arn: ref(stack, catalog?.functionArn ?? ''),
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 2 }),
          DeadLetterConfig: { Arn: ref(stack, cluster.eventsDeadLetterQueue.queueArn) },
        }),
      ],
    });
  });

  it('feeds the interruption Lambda from the interruption queue, with the termination queue and rebalance setting', () => {
    const { stack, cluster } = built;
    const fn = cluster.functions['interruption'];
    expect(fn).toBeDefined();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: ref(stack, present(cluster.queues.interruption).queueArn),
      FunctionName: ref(stack, fn?.functionName ?? ''),
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Timeout: 45,
      Environment: {
        Variables: Match.objectLike({
          [EnvVar.terminationQueueUrl]: ref(stack, present(cluster.queues.termination).queueUrl),
          [EnvVar.rebalanceAction]: 'event',
          // The provisioner is told of each NodeClaim an interruption deletes.
          [EnvVar.podEventQueueUrl]: ref(stack, cluster.queues.podEvents.queueUrl),
        }),
      },
    });
  });

  it('feeds the termination Lambda from the termination queue and the garbage-collection sweep', () => {
    const { stack, cluster } = built;
    const fn = cluster.functions['termination'];
    const collector = cluster.functions['garbage-collector'];
    expect(fn).toBeDefined();
    expect(collector).toBeDefined();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: ref(stack, present(cluster.queues.termination).queueArn),
      FunctionName: ref(stack, fn?.functionName ?? ''),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // One schedule drives both the termination sweep and the garbage collector.
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(2 minutes)',
      Targets: Match.arrayWith([
        Match.objectLike({ Arn: ref(stack, fn?.functionArn ?? '') }),
        Match.objectLike({ Arn: ref(stack, collector?.functionArn ?? '') }),
      ]),
    });
    // The drain's budget fits the function timeout, which fits the queue's visibility timeout.
    template.hasResourceProperties('AWS::Lambda::Function', {
      Timeout: 120,
      Environment: {
        Variables: Match.objectLike({
          [EnvVar.terminationQueueUrl]: ref(stack, present(cluster.queues.termination).queueUrl),
        }),
      },
    });
  });

  it('runs a disruption pass every 30 s: the minute schedule, and the passes it asks for on the disruption queue', () => {
    const { stack, cluster } = built;
    const fn = cluster.functions['disruption'];
    expect(fn).toBeDefined();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: ref(stack, fn?.functionArn ?? '') })],
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: ref(stack, present(cluster.queues.disruptionPasses).queueArn),
      FunctionName: ref(stack, fn?.functionName ?? ''),
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // A pass that failed goes to the dead-letter queue at once; one not run within 5 minutes is dropped.
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: 180,
      MessageRetentionPeriod: 300,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 1 }),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('remove empty, drifted and expired nodes'),
      Environment: {
        Variables: Match.objectLike({
          [EnvVar.disruptionQueueUrl]: ref(stack, present(cluster.queues.disruptionPasses).queueUrl),
          [EnvVar.disruptionIntervalSeconds]: '30',
        }),
      },
    });
  });

  it('schedules disruption at the interval asked for when it is whole minutes, and tells the Lambda', () => {
    const minutes = makeStack({ disruptionInterval: Duration.minutes(2) }).template;
    minutes.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(2 minutes)',
      Description: Match.stringLikeRegexp('evaluate disruption'),
    });
    minutes.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [EnvVar.disruptionIntervalSeconds]: '120' }) },
    });
  });

  it("gives the Lambdas that schedule pods Karpenter's scheduling policies, Strict and Respect by default", () => {
    const variablesOf = (t: Template) =>
      Object.values(t.findResources('AWS::Lambda::Function')).map((r) => {
        const props = r['Properties'] as {
          Description?: string;
          Environment?: { Variables?: Record<string, unknown> };
        };
        return { description: props.Description ?? '', variables: props.Environment?.Variables ?? {} };
      });
    const policies = (t: Template) =>
      variablesOf(t)
        .filter((f) => EnvVar.minValuesPolicy in f.variables || EnvVar.preferencePolicy in f.variables)
        .map((f) => [
          f.description,
          f.variables[EnvVar.minValuesPolicy],
          f.variables[EnvVar.preferencePolicy],
        ])
        .sort();
    expect(policies(template)).toEqual([
      ['Flotilla: launch nodes for pending pods (NodeClaims and EC2 CreateFleet)', 'Strict', 'Respect'],
      ['Flotilla: remove empty, drifted and expired nodes within disruption budgets', 'Strict', 'Respect'],
    ]);
    const relaxed = makeStack({ minValuesPolicy: 'BestEffort', preferencePolicy: 'Ignore' }).template;
    expect(policies(relaxed).map(([, minValues, preference]) => [minValues, preference])).toEqual([
      ['BestEffort', 'Ignore'],
      ['BestEffort', 'Ignore'],
    ]);
  });

  it("gives the cluster's dollar limit to the Lambdas that plan launches, and none by default", () => {
    const limits = (t: Template) =>
      Object.values(t.findResources('AWS::Lambda::Function'))
        .map((r) => {
          const props = r['Properties'] as {
            Description?: string;
            Environment?: { Variables?: Record<string, unknown> };
          };
          return { description: props.Description ?? '', variables: props.Environment?.Variables ?? {} };
        })
        .filter((f) => EnvVar.maxCostPerHour in f.variables)
        .map((f) => [f.description, f.variables[EnvVar.maxCostPerHour]])
        .sort();
    expect(limits(template)).toEqual([]);
    expect(limits(makeStack({ maxCostPerHour: 42.5 }).template)).toEqual([
      ['Flotilla: launch nodes for pending pods (NodeClaims and EC2 CreateFleet)', '42.5'],
      ['Flotilla: remove empty, drifted and expired nodes within disruption budgets', '42.5'],
    ]);
    // Never an exponent, which the Lambdas would refuse at cold start: to the micro-dollar they count in.
    expect(limits(makeStack({ maxCostPerHour: 5e-7 }).template).map(([, v]) => v)).toEqual(['0', '0']);
    expect(limits(makeStack({ maxCostPerHour: 0.1 + 0.2 }).template).map(([, v]) => v)).toEqual([
      '0.3',
      '0.3',
    ]);
  });

  it('tells the disruption Lambda, and it alone, whether spot-to-spot consolidation is on (off by default)', () => {
    const withVariable = (template: typeof built.template) =>
      Object.values(template.findResources('AWS::Lambda::Function')).flatMap((f) => {
        const variables = (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } })
          .Properties.Environment?.Variables;
        const value = variables?.[EnvVar.spotToSpotConsolidation];
        return value === undefined ? [] : [value];
      });
    expect(withVariable(built.template)).toEqual(['false']);
    built.template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('remove empty, drifted and expired nodes'),
      Environment: { Variables: Match.objectLike({ [EnvVar.spotToSpotConsolidation]: 'false' }) },
    });
    const { template: on } = makeStack({ spotToSpotConsolidation: true });
    expect(withVariable(on)).toEqual(['true']);
  });

  it('tells every Lambda that reads the cluster summary the clusterSize its limits come from', () => {
    const variables = (template: typeof built.template) =>
      Object.values(template.findResources('AWS::Lambda::Function')).map(
        (f) =>
          (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties
            .Environment?.Variables ?? {},
      );
    const readers = variables(built.template).filter((v) => v[EnvVar.summaryBucket] !== undefined);
    expect(readers.length).toBeGreaterThan(0);
    for (const v of readers) expect(v[EnvVar.clusterSize]).toBe('500,10000');
    for (const v of variables(built.template).filter((x) => x[EnvVar.summaryBucket] === undefined)) {
      expect(v[EnvVar.clusterSize]).toBeUndefined();
    }
    const { template: large } = makeStack({ clusterSize: { nodes: 5_000, pods: 50_000 } });
    const largeReaders = variables(large).filter((v) => v[EnvVar.summaryBucket] !== undefined);
    expect(largeReaders.map((v) => v[EnvVar.clusterSize])).toEqual(largeReaders.map(() => '5000,50000'));
  });

  it('lets the default rebalance action be set to drain', () => {
    const { template: drained } = makeStack({ rebalanceAction: 'drain' });
    drained.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [EnvVar.rebalanceAction]: 'drain' }) },
    });
  });

  it('builds the catalog Lambda as nodejs22.x on arm64 with source maps, its env, a log group and an on-failure queue', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 300,
      Environment: {
        Variables: Match.exact({
          [EnvVar.clusterName]: 'demo',
          [EnvVar.stateTable]: ref(built.stack, built.cluster.stateTable.tableName),
          [EnvVar.logLevel]: 'info',
          [EnvVar.isolatedVPC]: 'false',
          NODE_OPTIONS: '--enable-source-maps',
        }),
      },
      LoggingConfig: { LogGroup: Match.anyValue() },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
      MaximumRetryAttempts: 1,
    });
    // Only where it helps: the catalog runs once an hour and needs no reservation.
    template.hasResourceProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: Match.absent(),
    });
  });

  it('encrypts every queue and denies every request without TLS', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Resources;
    // 4 work queues, their 4 DLQs, the EventBridge DLQ and the on-failure queues of the
    // schedule-driven catalog, provisioner, interruption, termination, disruption and
    // garbage-collector Lambdas.
    expect(Object.keys(queues)).toHaveLength(15);
    const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy') as Resources);
    for (const [logicalId, queue] of Object.entries(queues)) {
      expect(queue.Properties['SqsManagedSseEnabled']).toBe(true);
      const guarding = policies.filter((policy) => {
        const statements = (policy.Properties['PolicyDocument'] as { Statement: Record<string, unknown>[] })
          .Statement;
        return (
          JSON.stringify(policy.Properties['Queues']) === JSON.stringify([{ Ref: logicalId }]) &&
          statements.some(
            (s) =>
              s['Effect'] === 'Deny' &&
              s['Action'] === 'sqs:*' &&
              JSON.stringify(s['Condition']) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
          )
        );
      });
      expect(guarding, `TLS-only policy of ${logicalId}`).toHaveLength(1);
    }
  });

  it('gives each work queue a dead-letter queue with redrive', () => {
    const { stack, cluster } = built;
    for (const name of ['podEvents', 'interruption', 'termination'] as const) {
      template.hasResourceProperties('AWS::SQS::Queue', {
        // Only the pod-event queue has a fixed name: the shim's Deployment names its URL.
        QueueName: name === 'podEvents' ? podEventQueueName('demo') : Match.absent(),
        RedrivePolicy: {
          deadLetterTargetArn: ref(stack, present(cluster.deadLetterQueues[name]).queueArn),
          maxReceiveCount: Match.anyValue(),
        },
      });
    }
  });

  it('alarms on the depth of every dead-letter queue and on Lambda errors and throttles', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources).map(
      (a) => a.Properties,
    );
    const depthAlarms = alarms.filter((a) => a['MetricName'] === 'ApproximateNumberOfMessagesVisible');
    const dlqs = [...Object.values(built.cluster.deadLetterQueues), built.cluster.eventsDeadLetterQueue].map(
      (queue) => ref(built.stack, queue.queueName),
    );
    for (const dlq of dlqs) {
      expect(
        depthAlarms.some(
          (a) => JSON.stringify(a['Dimensions']) === JSON.stringify([{ Name: 'QueueName', Value: dlq }]),
        ),
      ).toBe(true);
    }
    // The on-failure queues of the schedule-driven Lambdas too: catalog, provisioner, interruption,
    // termination, disruption, garbage collector (the clean-up has no schedule).
    expect(depthAlarms).toHaveLength(dlqs.length + 6);
    for (const alarm of depthAlarms) {
      expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    }
    const errorAlarms = alarms.filter((a) => a['MetricName'] === 'Errors' && a['Namespace'] === 'AWS/Lambda');
    // One per Lambda: catalog, provisioner, interruption, termination, disruption, garbage collector
    // and clean-up.
    expect(errorAlarms).toHaveLength(7);
    const throttleAlarms = alarms.filter(
      (a) => a['MetricName'] === 'Throttles' && a['Namespace'] === 'AWS/Lambda',
    );
    // Every Lambda but the provisioner, whose reserved concurrency throttles it on purpose.
    const provisioner = JSON.stringify([
      {
        Name: 'FunctionName',
        Value: ref(built.stack, built.cluster.functions['provisioner']?.functionName ?? ''),
      },
    ]);
    expect(throttleAlarms.map((a) => JSON.stringify(a['Dimensions'])).sort()).toEqual(
      errorAlarms
        .map((a) => JSON.stringify(a['Dimensions']))
        .filter((d) => d !== provisioner)
        .sort(),
    );
    expect(throttleAlarms).toHaveLength(6);
    // No topic given: no actions.
    for (const alarm of alarms) expect(alarm['AlarmActions']).toBeUndefined();
  });

  it('keeps state in one on-demand table with the adapter key schema, TTL and PITR', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: STATE_TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: STATE_TABLE.sortKey, KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: STATE_TABLE.ttlAttribute, Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: false,
    });
  });

  it('keeps the cluster summary in one encrypted, private, TLS-only bucket named by account, region and cluster', () => {
    const { stack, cluster } = built;
    const hash = createHash('sha256').update('demo').digest('hex').slice(0, 12);
    const buckets = template.findResources('AWS::S3::Bucket') as Resources;
    expect(Object.keys(buckets)).toHaveLength(1);
    const [bucket] = Object.values(buckets);
    expect(bucket?.Properties).toEqual({
      BucketName: {
        'Fn::Join': ['', ['flotilla-', { Ref: 'AWS::AccountId' }, '-', { Ref: 'AWS::Region' }, `-${hash}`]],
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      // What CDK's auto-delete custom resource looks for before it empties a bucket.
      Tags: [{ Key: 'aws-cdk:auto-delete-objects', Value: 'true' }],
    });
    // No versioning: every write replaces a cache the shim rebuilds in seconds.
    expect(bucket?.Properties['VersioningConfiguration']).toBeUndefined();
    // Deleting the stack deletes the bucket, emptied first (the shim's last write included).
    expect(bucket?.DeletionPolicy).toBe('Delete');
    expect(bucket?.UpdateReplacePolicy).toBe('Delete');
    template.hasResourceProperties('Custom::S3AutoDeleteObjects', {
      BucketName: ref(stack, cluster.summaryBucket.bucketName),
    });
    // TLS only, for everyone, on the bucket and its objects.
    const [policy, ...more] = Object.values(template.findResources('AWS::S3::BucketPolicy') as Resources);
    expect(more).toHaveLength(0);
    expect(policy?.Properties['Bucket']).toEqual(ref(stack, cluster.summaryBucket.bucketName));
    const statements =
      (policy?.Properties['PolicyDocument'] as { Statement: Statement[] } | undefined)?.Statement ?? [];
    expect(statements).toContainEqual({
      Effect: 'Deny',
      Principal: { AWS: '*' },
      Action: 's3:*',
      Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      Resource: [
        ref(stack, cluster.summaryBucket.bucketArn),
        ref(stack, cluster.summaryBucket.arnForObjects('*')),
      ],
    });
    // Nothing in the bucket policy allows anyone but CDK's auto-delete provider.
    for (const statement of statements.filter((st) => st.Effect === 'Allow')) {
      expect(JSON.stringify(statement.Principal)).toContain(
        'CustomS3AutoDeleteObjectsCustomResourceProvider',
      );
    }
  });

  it('lets exactly the Lambdas that read the cluster read the summary objects, and tells them the bucket', () => {
    const { stack, cluster } = built;
    const objectArns = ['summary.json.gz', 'summary-changes.json.gz'].map((name) =>
      ref(stack, cluster.summaryBucket.arnForObjects(`clusters/demo/${name}`)),
    );
    const policies = Object.values(template.findResources('AWS::IAM::Policy') as Resources);
    const readersOf = (name: string) => {
      const role = JSON.stringify(ref(stack, cluster.functionRoles[name]?.roleName ?? ''));
      return policies
        .filter((p) => (p.Properties['Roles'] as unknown[]).some((r) => JSON.stringify(r) === role))
        .flatMap((p) => (p.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement)
        .filter((st) => actionsOf(st).some((a) => a.startsWith('s3:')));
    };
    // The catalog and the clean-up read no cluster.
    expect(FLOTILLA_FUNCTIONS.map((f) => f.name).sort()).toEqual(
      [...SUMMARY_READERS, 'catalog', 'cleanup'].sort(),
    );
    for (const name of SUMMARY_READERS) {
      expect(readersOf(name), name).toEqual([
        {
          Sid: 'AllowClusterSummaryRead',
          Effect: 'Allow',
          Action: 's3:GetObject',
          Resource: objectArns,
          Condition: { StringEquals: { 'aws:ResourceAccount': { Ref: 'AWS::AccountId' } } },
        },
      ]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: FLOTILLA_FUNCTIONS.find((f) => f.name === name)?.description,
        Environment: {
          Variables: Match.objectLike({
            [EnvVar.summaryBucket]: ref(stack, cluster.summaryBucket.bucketName),
          }),
        },
      });
    }
    expect(readersOf('catalog')).toEqual([]);
    expect(readersOf('cleanup')).toEqual([]);
    // The five reads and the shim's write are every S3 permission the stack's roles have.
    const s3 = allStatements(template).filter((st) => actionsOf(st).some((a) => a.startsWith('s3:')));
    expect(s3.map((st) => actionsOf(st).join()).sort()).toEqual([
      ...SUMMARY_READERS.map(() => 's3:GetObject'),
      's3:PutObject',
    ]);
  });

  it('creates the node role, its instance profile and an EC2_LINUX access entry', () => {
    const { stack, cluster } = built;
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({ Action: 'sts:AssumeRole', Principal: { Service: 'ec2.amazonaws.com' } }),
        ],
      },
      ManagedPolicyArns: [
        'AmazonEKSWorkerNodePolicy',
        'AmazonEKS_CNI_Policy',
        'AmazonEC2ContainerRegistryPullOnly',
        'AmazonSSMManagedInstanceCore',
      ].map((name) => ({
        'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::aws:policy/${name}`]],
      })),
    });
    template.hasResourceProperties('AWS::IAM::InstanceProfile', {
      Roles: [ref(stack, present(cluster.nodeRole).roleName)],
    });
    template.hasResourceProperties('AWS::EKS::AccessEntry', {
      ClusterName: 'demo',
      PrincipalArn: ref(stack, present(cluster.nodeRole).roleArn),
      Type: 'EC2_LINUX',
    });
  });

  it('lets the shim role, through Pod Identity, only send to the pod-event queue and write the summary object', () => {
    const { stack, cluster } = built;
    const roles = template.findResources('AWS::IAM::Role', {
      Properties: {
        AssumeRolePolicyDocument: {
          Statement: [
            Match.objectLike({
              Action: ['sts:AssumeRole', 'sts:TagSession'],
              Principal: { Service: 'pods.eks.amazonaws.com' },
              // Only the shim's association: its cluster, namespace and ServiceAccount.
              Condition: {
                StringEquals: {
                  'aws:SourceAccount': { Ref: 'AWS::AccountId' },
                  'aws:RequestTag/eks-cluster-name': 'demo',
                  'aws:RequestTag/kubernetes-namespace': 'flotilla',
                  'aws:RequestTag/kubernetes-service-account': 'flotilla-shim',
                },
              },
            }),
          ],
        },
      },
    }) as Resources;
    const [shim, ...others] = Object.values(roles);
    expect(others).toHaveLength(0);
    expect(shim?.Properties['ManagedPolicyArns']).toBeUndefined();
    expect(shim?.Properties['Policies']).toEqual([
      {
        PolicyName: 'SendPodEvents',
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Sid: 'AllowSendPodEvents',
              Effect: 'Allow',
              Action: 'sqs:SendMessage',
              Resource: ref(stack, cluster.queues.podEvents.queueArn),
            },
          ],
        },
      },
      {
        PolicyName: 'PublishClusterSummary',
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Sid: 'AllowPublishClusterSummary',
              Effect: 'Allow',
              Action: 's3:PutObject',
              Resource: ['summary.json.gz', 'summary-changes.json.gz'].map((name) =>
                ref(stack, cluster.summaryBucket.arnForObjects(`clusters/demo/${name}`)),
              ),
              Condition: { StringEquals: { 'aws:ResourceAccount': { Ref: 'AWS::AccountId' } } },
            },
          ],
        },
      },
    ]);
    // Nothing else grants the shim role anything.
    const shimRoleRef = JSON.stringify(ref(stack, cluster.shimRole.roleName));
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy') as Resources)) {
      expect(JSON.stringify(policy.Properties['Roles'])).not.toContain(shimRoleRef);
    }
    template.hasResourceProperties('AWS::EKS::PodIdentityAssociation', {
      ClusterName: 'demo',
      Namespace: 'flotilla',
      ServiceAccount: 'flotilla-shim',
      RoleArn: ref(stack, cluster.shimRole.roleArn),
    });
  });

  it('fills the offering cache when a deployment creates or changes the catalog Lambda', () => {
    const { stack, cluster } = built;
    template.hasResourceProperties('Custom::Trigger', {
      HandlerArn: Match.anyValue(),
      InvocationType: 'Event',
    });
    const [trigger, ...more] = Object.values(template.findResources('Custom::Trigger') as Resources);
    expect(more).toHaveLength(0);
    // The handler is the catalog Lambda's current version: re-run when a deployment changes it.
    const catalog = cluster.functions['catalog'];
    const catalogId =
      catalog === undefined ? '' : stack.getLogicalId(catalog.node.defaultChild as CfnElement);
    expect(JSON.stringify(trigger?.Properties['HandlerArn'])).toContain(
      catalogId.replace(/[0-9A-F]{8}$/, ''),
    );
  });

  it('ships the saved Logs Insights queries over the Lambda log groups', () => {
    const definitions = Object.values(template.findResources('AWS::Logs::QueryDefinition') as Resources).map(
      (d) => d.Properties,
    );
    expect(definitions.map((d) => d['Name']).sort()).toEqual(
      LOG_QUERIES.map((q) => `flotilla/demo/${q.name}`).sort(),
    );
    const logGroups = Object.keys(template.findResources('AWS::Logs::LogGroup'));
    for (const definition of definitions) {
      expect(definition['LogGroupNames']).toEqual(logGroups.map((id) => ({ Ref: id })));
    }
    const byName = new Map(definitions.map((d) => [d['Name'], String(d['QueryString'])]));
    expect(byName.get('flotilla/demo/decisions-by-reason')).toContain('by message, decision, reason');
    expect(byName.get('flotilla/demo/launches-by-nodepool-and-instance-type')).toContain(
      'by nodePool, instanceType, capacityType',
    );
    expect(byName.get('flotilla/demo/unschedulable-pods')).toContain('unschedulable');
    expect(byName.get('flotilla/demo/interruptions-handled')).toContain('by interruption, action');
    expect(byName.get('flotilla/demo/disruptions')).toContain("decision = 'disrupt'");
  });

  it('outputs what a user needs', () => {
    const { stack, cluster } = built;
    const values = Object.values(template.toJSON()['Outputs'] as Record<string, { Value: unknown }>).map(
      (o) => JSON.stringify(o.Value),
    );
    const expected = [
      cluster.queues.podEvents.queueUrl,
      cluster.queues.podEvents.queueArn,
      present(cluster.queues.interruption).queueUrl,
      present(cluster.queues.interruption).queueArn,
      present(cluster.queues.termination).queueUrl,
      present(cluster.queues.termination).queueArn,
      cluster.stateTable.tableName,
      cluster.summaryBucket.bucketName,
      present(cluster.nodeRole).roleName,
      present(cluster.nodeRole).roleArn,
      present(cluster.instanceProfile).instanceProfileName,
      cluster.shimRole.roleArn,
      cluster.functionRoles['catalog']?.roleArn ?? 'missing',
    ];
    for (const token of expected) expect(values).toContain(JSON.stringify(ref(stack, token)));
    // The README tells users these keys.
    expect(Object.keys(template.toJSON()['Outputs'])).toEqual(
      expect.arrayContaining([
        'FlotillaInstanceProfileName',
        'FlotillaCatalogFunctionName',
        'FlotillaStateTableName',
        'FlotillaSummaryBucketName',
        'FlotillaDashboardName',
      ]),
    );
  });
});

describe('FlotillaCluster with queue-driven Lambdas, a VPC and an alarm topic', () => {
  let built: ReturnType<typeof makeStack>;
  beforeAll(() => {
    built = makeStack(
      { functions: [catalogFunction, ...FUTURE_FUNCTIONS], stateTableDeletionProtection: true },
      { vpc: true, alarmTopic: true },
    );
  });

  it('consumes queues with partial batch failures and bounded concurrency', () => {
    const { stack, cluster, template } = built;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: ref(stack, cluster.queues.podEvents.queueArn),
      FunctionName: ref(stack, cluster.functions['provisioner']?.functionName ?? ''),
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: ref(stack, present(cluster.queues.termination).queueArn),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'test provisioner',
      ReservedConcurrentExecutions: 2,
    });
  });

  it('maps Lambda roles that talk to Kubernetes to the controller group, and no others', () => {
    const { stack, cluster, template } = built;
    const entries = Object.values(template.findResources('AWS::EKS::AccessEntry') as Resources).map(
      (e) => e.Properties,
    );
    const standard = entries.filter((e) => e['Type'] === 'STANDARD');
    expect(standard.map((e) => JSON.stringify(e['PrincipalArn'])).sort()).toEqual(
      ['provisioner', 'termination']
        .map((name) => JSON.stringify(ref(stack, cluster.functionRoles[name]?.roleArn ?? '')))
        .sort(),
    );
    for (const entry of standard) expect(entry['KubernetesGroups']).toEqual(['flotilla:controller']);
  });

  it('runs the Lambdas in the VPC', () => {
    const functions = Object.values(
      built.template.findResources('AWS::Lambda::Function') as Resources,
    ).filter(
      (f) =>
        String(f.Properties['Description'] ?? '').startsWith('Flotilla') ||
        String(f.Properties['Description'] ?? '').startsWith('test'),
    );
    expect(functions).toHaveLength(3);
    for (const fn of functions) {
      expect(fn.Properties['VpcConfig']).toMatchObject({
        SubnetIds: expect.any(Array),
        SecurityGroupIds: expect.any(Array),
      });
    }
  });

  it('sends every alarm to the topic on alarm and on recovery', () => {
    const { stack, topic, template } = built;
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm') as Resources);
    // 5 queue DLQs + 2 on-failure queues (catalog, provisioner) + 3 Lambda error alarms, 2 throttle
    // alarms (not the provisioner, with reserved concurrency) + pending pods, launch failures and
    // the runaway guard.
    expect(alarms).toHaveLength(15);
    for (const alarm of alarms) {
      expect(alarm.Properties['AlarmActions']).toEqual([ref(stack, topic?.topicArn ?? '')]);
      expect(alarm.Properties['OKActions']).toEqual([ref(stack, topic?.topicArn ?? '')]);
    }
  });

  it('protects and retains the state table when asked', () => {
    const tables = Object.values(built.template.findResources('AWS::DynamoDB::Table') as Resources);
    expect(tables).toHaveLength(1);
    expect(tables[0]?.Properties['DeletionProtectionEnabled']).toBe(true);
    expect(tables[0]?.DeletionPolicy).toBe('Retain');
  });

  it('sets only the environment a row asks for', () => {
    built.template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'test termination',
      Environment: {
        Variables: Match.exact({
          [EnvVar.clusterName]: 'demo',
          [EnvVar.terminationQueueUrl]: ref(built.stack, present(built.cluster.queues.termination).queueUrl),
          NODE_OPTIONS: '--enable-source-maps',
        }),
      },
    });
  });
});

describe('FlotillaCluster validation', () => {
  const build = (props: Record<string, unknown>) => () => makeStack(props);

  it.each([
    [
      'an invalid cluster name',
      { clusterName: 'has space' },
      /clusterName "has space" is not a valid EKS cluster name/,
    ],
    ['an empty cluster name', { clusterName: '' }, /clusterName "" is not a valid EKS cluster name/],
    ['a token cluster name', { clusterName: Token.asString({ Ref: 'Name' }) }, /must be a literal string/],
    ['subnets without a VPC', { vpcSubnets: {} }, /vpcSubnets and securityGroups need vpc/],
    [
      'a sub-minute schedule',
      { garbageCollectionInterval: Duration.seconds(30) },
      /garbageCollectionInterval is 30 seconds/,
    ],
    [
      'a disruption interval that does not divide a minute',
      { disruptionInterval: Duration.seconds(25) },
      /disruptionInterval: 25 s does not divide a minute/,
    ],
    [
      'a disruption interval under 10 s',
      { disruptionInterval: Duration.seconds(5) },
      /disruptionInterval: 5 s is shorter than 10 s/,
    ],
    [
      'a disruption interval over a minute but not whole minutes',
      { disruptionInterval: Duration.seconds(90) },
      /disruptionInterval: 90 s is over a minute but not whole minutes/,
    ],
    [
      'a minValues policy Karpenter does not have',
      { minValuesPolicy: 'Loose' },
      /minValuesPolicy is "Loose"; it must be one of Strict, BestEffort/,
    ],
    [
      'a negative dollar limit',
      { maxCostPerHour: -1 },
      /maxCostPerHour is -1; it must be a number of US dollars/,
    ],
    [
      'a preference policy Karpenter does not have',
      { preferencePolicy: 'respect' },
      /preferencePolicy is "respect"; it must be one of Respect, Ignore/,
    ],
    ['a system: group', { controllerGroup: 'system:masters' }, /must not start with "system:"/],
    [
      'an invalid namespace',
      { namespace: 'Flotilla' },
      /namespace "Flotilla" is not a valid Kubernetes name/,
    ],
    [
      'a missing handler file',
      { functions: [{ ...catalogFunction, entry: 'lambdas/nope/handler.ts' }] },
      /function "catalog": entry lambdas\/nope\/handler.ts does not exist/,
    ],
    [
      'a timeout longer than the queue visibility',
      {
        functions: [
          {
            ...catalogFunction,
            entry: FIXTURE_ENTRY,
            triggers: [{ kind: 'queue', queue: 'interruption', batchSize: 1 }],
            timeout: Duration.minutes(5),
          },
        ],
      },
      /timeout 5 minutes exceeds the interruption queue's visibility timeout 1 minute/,
    ],
    [
      'a duplicate function',
      { functions: [catalogFunction, catalogFunction] },
      /function "catalog" is defined twice/,
    ],
  ])('refuses %s before building anything', (_what, props, message) => {
    expect(build(props)).toThrow(FlotillaConfigError);
    expect(build(props)).toThrow(message);
  });

  it('lists every problem at once', () => {
    expect(build({ clusterName: '-bad', namespace: 'X' })).toThrow(/clusterName "-bad"[\s\S]*namespace "X"/);
  });
});
