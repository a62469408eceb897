import { Match, type Template } from 'aws-cdk-lib/assertions';
import type * as events from 'aws-cdk-lib/aws-events';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type FlotillaClusterProps, FlotillaConfigError } from '../../infra/flotilla-cluster.ts';
import { shadowStackNameFor, stackNameFor } from '../../infra/flotilla-stack.ts';
import { AppUsageError, buildApp } from '../../infra/main.ts';
import { CONTROLLER_GROUP, SHADOW_CONTROLLER_GROUP } from '../../infra/manifests.ts';
import { SHADOW_FUNCTIONS } from '../../infra/stack-mode.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { METRIC_NAMESPACE } from '../../shared/runtime/metrics.ts';
import { actionsOf, makeStack, NO_BUNDLING, ownedStatements, present, ref, resourcesOf } from './stacks.ts';

// A shadow stack (FlotillaClusterProps.mode) beside a live one of the same cluster: names of its
// own, the deciding Lambdas only, and nothing that may write to EC2, IAM, SQS or the cluster.

const ENV = { account: '123456789012', region: 'eu-west-1' };

type Resource = { Type: string; Properties?: Record<string, unknown> };
const resourcesIn = (template: Template) =>
  Object.values(template.toJSON()['Resources'] as Record<string, Resource>);

/**
 * Top-level properties ending in `Name` that name something other than the resource itself: the
 * EKS cluster it belongs to, a CloudWatch metric, and an inline policy (its name is its role's).
 */
const NOT_PHYSICAL_NAMES = new Set([
  'AWS::EKS::AccessEntry.ClusterName',
  'AWS::EKS::PodIdentityAssociation.ClusterName',
  'AWS::CloudWatch::Alarm.MetricName',
  'AWS::IAM::Policy.PolicyName',
]);

/** Every physical name the template sets as a literal string, with the `<Type>.<property>` that sets it. */
function physicalNames(template: Template): Map<string, string> {
  const names = new Map<string, string>();
  for (const { Type, Properties = {} } of resourcesIn(template)) {
    for (const [property, value] of Object.entries(Properties)) {
      const where = `${Type}.${property}`;
      if (property.endsWith('Name') && typeof value === 'string' && !NOT_PHYSICAL_NAMES.has(where)) {
        names.set(value, where);
      }
    }
  }
  return names;
}

type K8sObject = {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { verbs: string[] }[];
  subjects?: { kind: string; name: string }[];
  spec?: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } };
};
const k8sObjects = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);

/** The variables of the template's Flotilla Lambdas (CDK's own custom-resource Lambdas have none). */
const flotillaVariables = (template: Template) =>
  resourcesIn(template)
    .filter((r) => r.Type === 'AWS::Lambda::Function')
    .map(
      (r) =>
        (r.Properties?.['Environment'] as { Variables?: Record<string, unknown> } | undefined)?.Variables,
    )
    .filter((v): v is Record<string, unknown> => v?.[EnvVar.clusterName] !== undefined);

describe('a shadow stack beside a live one of the same cluster', () => {
  let live: ReturnType<typeof makeStack>;
  let shadow: ReturnType<typeof makeStack>;
  beforeAll(() => {
    live = makeStack({}, { env: ENV });
    shadow = makeStack({ mode: 'shadow' }, { env: ENV });
  });

  it('shares no physical name with it', () => {
    const liveNames = physicalNames(live.template);
    const shadowNames = physicalNames(shadow.template);
    // The check sees the names the stacks set.
    expect(new Set(liveNames.values())).toEqual(
      new Set([
        'AWS::S3::Bucket.BucketName',
        'AWS::SQS::Queue.QueueName',
        'AWS::CloudWatch::Dashboard.DashboardName',
        'AWS::Logs::QueryDefinition.Name',
        'AWS::Events::EventBus.Name',
        'AWS::Scheduler::ScheduleGroup.Name',
      ]),
    );
    expect(shadowNames.size).toBeGreaterThanOrEqual(4);
    expect([...shadowNames.keys()].filter((name) => liveNames.has(name))).toEqual([]);
    expect(shadowStackNameFor('prod_eu')).toBe('FlotillaShadow-prod-eu');
    expect(shadowStackNameFor('prod_eu')).not.toBe(stackNameFor('prod_eu'));
  });

  it('shares no Kubernetes object with it, and its shim feeds its own queue and bucket', () => {
    const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const liveObjects = k8sObjects(live.cluster.renderManifests());
    const shadowObjects = k8sObjects(shadow.cluster.renderManifests());
    const liveKeys = new Set(liveObjects.map(key));
    expect(shadowObjects.some((o) => o.kind === 'Deployment')).toBe(true);
    expect(shadowObjects.map(key).filter((k) => liveKeys.has(k))).toEqual([]);
    const env = Object.fromEntries(
      (shadowObjects.find((o) => o.kind === 'Deployment')?.spec?.template.spec.containers[0]?.env ?? []).map(
        (e) => [e.name, e.value],
      ),
    );
    const names = physicalNames(shadow.template);
    expect(names.get(env[EnvVar.summaryBucket] ?? '')).toBe('AWS::S3::Bucket.BucketName');
    expect(names.get(env[EnvVar.podEventQueueUrl]?.split('/').pop() ?? '')).toBe('AWS::SQS::Queue.QueueName');
    // EKS Pod Identity gives the shadow's ServiceAccount, not the live one, the shadow shim's role.
    shadow.template.hasResourceProperties('AWS::EKS::PodIdentityAssociation', {
      Namespace: 'flotilla-shadow',
      ServiceAccount: 'flotilla-shadow-shim',
    });
  });

  it('renders cluster manifests without CRDs, that only read and bind nothing to the live group', () => {
    const objects = k8sObjects(shadow.cluster.renderManifests());
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    const roles = objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
    expect(roles.map((o) => o.metadata.name).sort()).toEqual([
      'flotilla-shadow-controller',
      'flotilla-shadow-shim',
    ]);
    for (const role of roles) {
      expect(role.rules?.length).toBeGreaterThan(0);
      for (const rule of role.rules ?? []) {
        expect(['get', 'list', 'watch']).toEqual(expect.arrayContaining(rule.verbs));
      }
    }
    const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
    expect(bindings).toHaveLength(2);
    const subjects = bindings.flatMap((b) => b.subjects ?? []);
    expect(subjects.map((s) => s.name)).not.toContain(CONTROLLER_GROUP);
    expect(subjects).toContainEqual(
      expect.objectContaining({ kind: 'Group', name: SHADOW_CONTROLLER_GROUP }),
    );
  });
});

describe("a shadow stack's IAM", () => {
  let built: ReturnType<typeof makeStack>;
  let owned: ReturnType<typeof ownedStatements>;
  beforeAll(() => {
    built = makeStack({ mode: 'shadow' });
    owned = ownedStatements(built.template).filter((o) => o.statement.Effect === 'Allow');
  });
  const actions = () => owned.flatMap((o) => actionsOf(o.statement));

  it('allows no EC2 action but Describe and Get, and no wildcard action', () => {
    expect(actions().filter((a) => a.startsWith('ec2:')).length).toBeGreaterThan(0);
    for (const action of actions()) {
      expect(action).not.toContain('*');
      if (action.toLowerCase().startsWith('ec2:')) expect(action).toMatch(/^ec2:(Describe|Get)[A-Za-z]+$/);
    }
  });

  it('allows no iam: action, and attaches no AWS managed policy but Lambda’s basic execution role', () => {
    expect(actions().filter((a) => a.toLowerCase().startsWith('iam:'))).toEqual([]);
    const managed = resourcesIn(built.template)
      .filter((r) => r.Type === 'AWS::IAM::Role')
      .flatMap((r) => (r.Properties?.['ManagedPolicyArns'] as unknown[] | undefined) ?? [])
      .map((arn) => JSON.stringify(arn))
      .filter((arn) => arn.includes(':iam::aws:policy/'));
    for (const arn of managed)
      expect(arn).toMatch(/:iam::aws:policy\/service-role\/AWSLambdaBasicExecutionRole"/);
  });

  it('lets only the shim send to a queue, and only to its own pod-event queue', () => {
    const { stack, cluster } = built;
    const senders = owned.filter((o) => actionsOf(o.statement).some((a) => /^sqs:(send|\*)/i.test(a)));
    expect(senders.map((o) => o.owner)).toEqual([
      stack.getLogicalId(cluster.shimRole.node.defaultChild as never),
    ]);
    expect(senders.flatMap((o) => resourcesOf(o.statement))).toEqual([
      ref(stack, cluster.queues.podEvents.queueArn),
    ]);
  });

  it('writes to DynamoDB only in its own state table', () => {
    const { stack, cluster } = built;
    const dynamo = owned.filter((o) => actionsOf(o.statement).some((a) => a.startsWith('dynamodb:')));
    const writes = dynamo.filter((o) =>
      actionsOf(o.statement).some(
        (a) => !/^dynamodb:(BatchGet|Get|Query|Scan|Describe|ConditionCheck)/.test(a),
      ),
    );
    expect(writes.length).toBeGreaterThan(0);
    for (const { statement } of writes) {
      expect(resourcesOf(statement)).toEqual([ref(stack, cluster.stateTable.tableArn)]);
    }
  });

  it('maps the Lambdas that read the cluster to the shadow group, and no node role to EC2_LINUX', () => {
    const entries = resourcesIn(built.template).filter((r) => r.Type === 'AWS::EKS::AccessEntry');
    expect(entries.map((e) => e.Properties?.['KubernetesGroups'])).toEqual([
      [SHADOW_CONTROLLER_GROUP],
      [SHADOW_CONTROLLER_GROUP],
    ]);
    expect(entries.map((e) => e.Properties?.['Type'])).toEqual(['STANDARD', 'STANDARD']);
  });
});

describe('what a shadow stack deploys', () => {
  let built: ReturnType<typeof makeStack>;
  beforeAll(() => {
    built = makeStack({ mode: 'shadow' });
  });

  it('deploys the catalog, provisioner and disruption Lambdas and its daily comparison only, each told it is a shadow', () => {
    expect(Object.keys(built.cluster.functions).sort()).toEqual(
      ['catalog', 'disruption', 'provisioner', 'shadow-report'].sort(),
    );
    expect(Object.keys(built.cluster.functions).sort()).toEqual([...SHADOW_FUNCTIONS].sort());
    const variables = flotillaVariables(built.template);
    expect(variables).toHaveLength(4);
    for (const v of variables) {
      expect(v[EnvVar.mode]).toBe('shadow');
      for (const absent of [
        EnvVar.podEventQueueUrl,
        EnvVar.interruptionQueueUrl,
        EnvVar.terminationQueueUrl,
        EnvVar.disruptionQueueUrl,
        EnvVar.nodeRoleName,
        EnvVar.instanceProfileName,
      ]) {
        expect(v).not.toHaveProperty(absent);
      }
    }
    // A live stack's Lambdas run without it, which means live; and a live stack compares nothing.
    const liveStack = makeStack();
    for (const v of flotillaVariables(liveStack.template)) expect(v).not.toHaveProperty(EnvVar.mode);
    expect(Object.keys(liveStack.cluster.functions)).not.toContain('shadow-report');
    expect(Object.keys(liveStack.cluster.schedules)).not.toContain('shadowReport');
  });

  it('compares each day the lines of its provisioner and disruption Lambdas, read from their log groups only', () => {
    const { stack, cluster, template } = built;
    const groupOf = (name: string) =>
      present(cluster.functions[name]).logGroup.node.defaultChild as unknown as { logicalId: string };
    const sources = ['provisioner', 'disruption'].map((name) => stack.resolve(groupOf(name).logicalId));
    const reportFunction = stack.getLogicalId(
      present(cluster.functions['shadow-report']).node.defaultChild as never,
    );
    expect(template.toJSON()['Resources'][reportFunction].Properties['Environment']).toEqual({
      Variables: {
        [EnvVar.clusterName]: 'demo',
        [EnvVar.logLevel]: 'info',
        [EnvVar.mode]: 'shadow',
        NODE_OPTIONS: '--enable-source-maps',
        [EnvVar.shadowLogGroups]: {
          'Fn::Join': ['', [{ Ref: sources[0] }, ',', { Ref: sources[1] }]],
        },
      },
    });
    // No other Lambda reads the groups.
    expect(flotillaVariables(template).filter((v) => v[EnvVar.shadowLogGroups] !== undefined)).toHaveLength(
      1,
    );
    // Its role: FilterLogEvents on those two groups, and writing its own log group; nothing else.
    const reportRole = stack.getLogicalId(
      present(cluster.functionRoles['shadow-report']).node.defaultChild as never,
    );
    const policies = template.findResources('AWS::IAM::Policy', {
      Properties: { Roles: [{ Ref: reportRole }] },
    });
    expect(Object.keys(policies)).toHaveLength(1);
    expect(template.toJSON()['Resources'][reportRole].Properties['ManagedPolicyArns']).toBeUndefined();
    const statements = ownedStatements(template)
      .filter((o) => o.owner in policies)
      .map((o) => o.statement);
    const reads = statements.filter((st) => actionsOf(st).includes('logs:FilterLogEvents'));
    expect(reads.map(actionsOf)).toEqual([['logs:FilterLogEvents']]);
    expect(reads.flatMap(resourcesOf)).toEqual(sources.map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] })));
    for (const st of statements.filter((x) => !reads.includes(x))) {
      for (const action of actionsOf(st)) expect(action).toMatch(/^logs:(CreateLogStream|PutLogEvents)$/);
    }
    // Just after midnight UTC, every day.
    const rule = present(cluster.schedules.shadowReport).node.defaultChild as events.CfnRule;
    expect(rule.scheduleExpression).toBe('cron(20 0 * * ? *)');
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(20 0 * * ? *)',
      Targets: [
        Match.objectLike({ Arn: ref(stack, present(cluster.functions['shadow-report']).functionArn) }),
      ],
    });
  });

  it('runs them on the pending-pod, catalog, disruption and daily schedules, and on nothing else but pod events', () => {
    const { stack, cluster, template } = built;
    const fn = (name: string) => present(cluster.functions[name]);
    const rules = resourcesIn(template).filter((r) => r.Type === 'AWS::Events::Rule');
    // Schedules only: no interruption rule.
    expect(rules.map((r) => r.Properties?.['EventPattern'])).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(Object.keys(cluster.schedules).sort()).toEqual([
      'catalogRefresh',
      'disruption',
      'pendingPods',
      'shadowReport',
    ]);
    for (const [schedule, target] of [
      ['pendingPods', 'provisioner'],
      ['catalogRefresh', 'catalog'],
      ['disruption', 'disruption'],
    ] as const) {
      const rule = present(cluster.schedules[schedule]).node.defaultChild as events.CfnRule;
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: rule.scheduleExpression,
        Targets: [Match.objectLike({ Arn: ref(stack, fn(target).functionArn) })],
      });
    }
    const mappings = resourcesIn(template).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
    expect(mappings.map((m) => [m.Properties?.['EventSourceArn'], m.Properties?.['FunctionName']])).toEqual([
      [ref(stack, cluster.queues.podEvents.queueArn), ref(stack, fn('provisioner').functionName)],
    ]);
  });

  it('has the pod-event queue and its dead-letter queue, and no failure queue a Lambda could send to', () => {
    const { cluster, template } = built;
    expect(Object.keys(cluster.queues)).toEqual(['podEvents']);
    expect(Object.keys(cluster.deadLetterQueues)).toEqual(['podEvents']);
    // The pod-event queue, its dead-letter queue and EventBridge's.
    expect(resourcesIn(template).filter((r) => r.Type === 'AWS::SQS::Queue')).toHaveLength(3);
    expect(resourcesIn(template).filter((r) => r.Type === 'AWS::Lambda::EventInvokeConfig')).toEqual([]);
  });

  it('has no node role, instance profile or node access entry, and outputs none', () => {
    const { cluster, template } = built;
    expect(cluster.nodeRole).toBeUndefined();
    expect(cluster.instanceProfile).toBeUndefined();
    expect(resourcesIn(template).filter((r) => r.Type === 'AWS::IAM::InstanceProfile')).toEqual([]);
    expect(JSON.stringify(template.findResources('AWS::IAM::Role'))).not.toContain('ec2.amazonaws.com');
    const outputs = Object.keys(template.toJSON()['Outputs'] as Record<string, unknown>);
    expect(outputs).toContain('FlotillaPodEventQueueUrl');
    for (const absent of [
      'NodeRoleName',
      'InstanceProfileName',
      'TerminationQueueUrl',
      'InterruptionQueueUrl',
    ]) {
      expect(outputs).not.toContain(`Flotilla${absent}`);
    }
  });

  it("pages on its own health only, not on the cluster's pods and launches", () => {
    const alarms = resourcesIn(built.template).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(alarms.length).toBeGreaterThan(0);
    expect(alarms.map((a) => a.Properties?.['Namespace'])).not.toContain(METRIC_NAMESPACE);
  });

  it("charts Flotilla's metrics of the shadow series (<cluster>/shadow), never the live ones", () => {
    const [dashboard] = resourcesIn(built.template).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(dashboard?.Properties?.['DashboardBody']);
    expect(body).toContain(METRIC_NAMESPACE);
    const clusters = [...body.matchAll(/\\"cluster\\",\\"([^\\]+)\\"/g)].map((m) => m[1]);
    expect(clusters.length).toBeGreaterThan(0);
    expect(new Set(clusters).size).toBe(1);
    expect(clusters[0]).toMatch(/\/shadow$/);
    // Its first row: the live cost it observes and what Flotilla's proposal would save.
    expect(body.indexOf('Shadow: the live cluster')).toBeGreaterThan(-1);
    expect(body.indexOf('Shadow: the live cluster')).toBeLessThan(
      body.indexOf('Capacity and cost per NodePool'),
    );
    expect(body).toContain('voluntary_disruption_savings');
  });

  it('refuses a mode other than live or shadow, and a shadow on the live namespace or group', () => {
    expect(() => makeStack({ mode: 'bogus' } as unknown as Partial<FlotillaClusterProps>)).toThrow(
      FlotillaConfigError,
    );
    expect(() => makeStack({ mode: 'bogus' } as unknown as Partial<FlotillaClusterProps>)).toThrow(
      /mode is "bogus"; it must be one of live, shadow/,
    );
    expect(() => makeStack({ mode: 'shadow', namespace: 'flotilla' })).toThrow(
      /namespace must not be "flotilla"/,
    );
    expect(() => makeStack({ mode: 'shadow', controllerGroup: CONTROLLER_GROUP })).toThrow(
      /controllerGroup must not be "flotilla:controller"/,
    );
  });
});

describe('-c mode', () => {
  const build = (context: Record<string, unknown>) =>
    buildApp({
      env: { CDK_DEFAULT_ACCOUNT: ENV.account, CDK_DEFAULT_REGION: ENV.region },
      appProps: { context: { ...NO_BUNDLING, clusterName: 'prod_eu', ...context } },
    });

  it('builds FlotillaShadow-<cluster> with mode=shadow, and Flotilla-<cluster> with mode=live', () => {
    const shadow = build({ mode: 'shadow' });
    expect(shadow.app.node.children.map((c) => c.node.id)).toEqual(['FlotillaShadow-prod-eu']);
    expect(shadow.stack.flotilla.mode).toBe('shadow');
    const live = build({ mode: 'live' });
    expect(live.app.node.children.map((c) => c.node.id)).toEqual(['Flotilla-prod-eu']);
    expect(live.stack.flotilla.mode).toBe('live');
  });

  it('refuses any other mode', () => {
    expect(() => build({ mode: 'bogus' })).toThrow(AppUsageError);
    expect(() => build({ mode: 'bogus' })).toThrow(/mode "bogus" is neither live nor shadow/);
  });
});
