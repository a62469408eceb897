import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { catalogFunction, provisionerFunction } from '../../infra/functions.ts';
import { wakeUpGroupNameFor } from '../../infra/wake-ups.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import {
  actionsOf,
  allStatements,
  FUTURE_FUNCTIONS,
  makeStack,
  ownedStatements,
  present,
  ref,
  resourcesOf,
  type Statement,
} from './stacks.ts';

const OWNED = 'aws:ResourceTag/kubernetes.io/cluster/demo';
const allows = (statements: Statement[], action: string) =>
  statements.filter((s) => s.Effect === 'Allow' && actionsOf(s).includes(action));

describe('IAM of a cluster with every kind of Lambda', () => {
  let built: ReturnType<typeof makeStack>;
  let template: Template;
  let statements: Statement[];
  beforeAll(() => {
    built = makeStack({ functions: [catalogFunction, ...FUTURE_FUNCTIONS] });
    template = built.template;
    statements = allStatements(template);
  });

  it('never allows TerminateInstances without the ownership tags of this cluster', () => {
    const terminate = allows(statements, 'ec2:TerminateInstances');
    expect(terminate).toHaveLength(1);
    for (const statement of terminate) {
      expect(statement.Condition).toEqual({
        StringEquals: { [OWNED]: 'owned' },
        StringLike: { 'aws:ResourceTag/karpenter.sh/nodepool': '*' },
      });
      expect(JSON.stringify(statement.Resource)).toMatch(/:instance\/\*"\]\]\}$/);
    }
  });

  it('never uses wildcard actions', () => {
    for (const statement of statements.filter((s) => s.Effect === 'Allow')) {
      for (const action of actionsOf(statement)) expect(action).not.toMatch(/\*/);
    }
  });

  it('passes only the node role, only to EC2', () => {
    const passRole = allows(statements, 'iam:PassRole');
    expect(passRole).toHaveLength(1);
    for (const statement of passRole) {
      expect(resourcesOf(statement)).toEqual([ref(built.stack, present(built.cluster.nodeRole).roleArn)]);
      expect(statement.Condition).toEqual({
        StringEquals: { 'iam:PassedToService': ['ec2.amazonaws.com', 'ec2.amazonaws.com.cn'] },
      });
    }
  });

  it('passes the extra node roles it is given (a cluster taken over from Karpenter), by name or ARN, only to EC2', () => {
    const karpenters = 'arn:aws:iam::123456789012:role/eks/KarpenterNodeRole-demo';
    const own = allStatements(makeStack({ extraNodeRoles: ['KarpenterNodeRole-demo', karpenters] }).template);
    // The node roles, to EC2 (the wake-up role goes to EventBridge Scheduler alone, apart).
    const passRole = allows(own, 'iam:PassRole').filter((s) => s.Sid !== 'AllowWakeUpRolePass');
    expect(passRole).toHaveLength(1);
    const resources = JSON.stringify(resourcesOf(passRole[0] as Statement));
    expect(resources).toContain(':role/KarpenterNodeRole-demo');
    expect(resources).toContain(JSON.stringify(karpenters));
    expect(passRole[0]?.Condition).toEqual({
      StringEquals: { 'iam:PassedToService': ['ec2.amazonaws.com', 'ec2.amazonaws.com.cn'] },
    });
    expect(() => makeStack({ extraNodeRoles: ['not a role/*'] })).toThrow(
      /extraNodeRoles entry "not a role\/\*"/,
    );
  });

  it('reads SSM parameters only under /aws/service/ unless given more', () => {
    const ssm = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('ssm:')));
    expect(ssm).toHaveLength(1);
    expect(actionsOf(ssm[0] as Statement)).toEqual(['ssm:GetParameter']);
    expect(JSON.stringify(ssm[0]?.Resource)).toBe(
      JSON.stringify({
        'Fn::Join': [
          '',
          ['arn:', { Ref: 'AWS::Partition' }, ':ssm:', { Ref: 'AWS::Region' }, '::parameter/aws/service/*'],
        ],
      }),
    );
  });

  it("reads the account's own AMI parameters only under the paths the stack is given", () => {
    const own = allStatements(makeStack({ amiParameterPaths: ['/team/golden/*'] }).template).filter(
      (s) => s.Sid === 'AllowAmiParameterReadActions',
    );
    expect(own).toHaveLength(1);
    expect(actionsOf(own[0] as Statement)).toEqual(['ssm:GetParameter']);
    expect(JSON.stringify(own[0]?.Resource)).toContain(':parameter/team/golden/*');
    expect(statements.some((s) => s.Sid === 'AllowAmiParameterReadActions')).toBe(false);
    expect(() => makeStack({ amiParameterPaths: ['/aws/service/*'] })).toThrow(/outside \/aws\//);
  });

  it('launches only with the cluster, eks-cluster-name and nodepool request tags', () => {
    for (const action of ['ec2:RunInstances', 'ec2:CreateFleet', 'ec2:CreateLaunchTemplate']) {
      const statementsForAction = allows(statements, action);
      expect(statementsForAction.length).toBeGreaterThan(0);
      for (const statement of statementsForAction) {
        const resources = JSON.stringify(statement.Resource);
        // Resources that already exist and are picked by the EC2NodeClass are not taggable by the call.
        if (/image|snapshot|security-group|subnet|capacity-reservation|placement-group/.test(resources)) {
          expect(action).not.toBe('ec2:CreateLaunchTemplate');
          expect(resources).not.toMatch(/instance\/|volume\/|fleet\//);
          continue;
        }
        if (statement.Sid === 'AllowScopedEC2LaunchTemplateAccessActions') {
          expect(statement.Condition?.['StringEquals']).toEqual({ [OWNED]: 'owned' });
          continue;
        }
        expect(statement.Condition).toEqual({
          StringEquals: {
            'aws:RequestTag/kubernetes.io/cluster/demo': 'owned',
            'aws:RequestTag/eks:eks-cluster-name': 'demo',
          },
          StringLike: { 'aws:RequestTag/karpenter.sh/nodepool': '*' },
        });
      }
    }
  });

  it('tags only at creation with the ownership tags, the last-use tag of owned launch templates, or the Name of owned instances', () => {
    const createTags = allows(statements, 'ec2:CreateTags');
    expect(createTags.length).toBe(3);
    for (const statement of createTags) {
      const condition = statement.Condition ?? {};
      const atCreation = condition['StringEquals']?.['ec2:CreateAction'];
      if (atCreation !== undefined) {
        expect(atCreation).toEqual(['RunInstances', 'CreateFleet', 'CreateLaunchTemplate']);
        expect(condition['StringEquals']?.['aws:RequestTag/kubernetes.io/cluster/demo']).toBe('owned');
        expect(condition['StringEquals']?.['aws:RequestTag/eks:eks-cluster-name']).toBe('demo');
        expect(condition['StringLike']?.['aws:RequestTag/karpenter.sh/nodepool']).toBe('*');
      } else {
        expect(condition['StringEquals']?.[OWNED]).toBe('owned');
        expect(condition['StringLike']?.['aws:ResourceTag/karpenter.sh/nodepool']).toBe('*');
        expect(condition['Null']).toEqual({ 'aws:TagKeys': 'false' });
        // Launch templates: the last-use tag alone; instances: their node's name alone.
        const keys = condition['ForAllValues:StringEquals']?.['aws:TagKeys'];
        expect(keys).toHaveLength(1);
        const key = Array.isArray(keys) ? keys[0] : undefined;
        expect(statement.Resource).toEqual(
          expect.objectContaining({
            'Fn::Join': ['', expect.arrayContaining([key === 'Name' ? ':instance/*' : ':launch-template/*'])],
          }),
        );
        expect(['flotilla.io/last-used', 'Name']).toContain(key);
      }
    }
  });

  it('deletes only launch templates owned by this cluster', () => {
    const deletes = allows(statements, 'ec2:DeleteLaunchTemplate');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.Condition).toEqual({
      StringEquals: { [OWNED]: 'owned' },
      StringLike: { 'aws:ResourceTag/karpenter.sh/nodepool': '*' },
    });
  });

  it('creates, changes and deletes only instance profiles tagged for this cluster, region and an EC2NodeClass', () => {
    const region = { Ref: 'AWS::Region' };
    const create = allows(statements, 'iam:CreateInstanceProfile');
    expect(create).toHaveLength(1);
    expect(create[0]?.Condition).toEqual({
      StringEquals: {
        'aws:RequestTag/kubernetes.io/cluster/demo': 'owned',
        'aws:RequestTag/eks:eks-cluster-name': 'demo',
        'aws:RequestTag/topology.kubernetes.io/region': region,
      },
      StringLike: { 'aws:RequestTag/karpenter.k8s.aws/ec2nodeclass': '*' },
    });
    for (const action of [
      'iam:AddRoleToInstanceProfile',
      'iam:RemoveRoleFromInstanceProfile',
      'iam:DeleteInstanceProfile',
    ]) {
      const found = allows(statements, action);
      expect(found, action).toHaveLength(1);
      expect(found[0]?.Condition).toEqual({
        StringEquals: { [OWNED]: 'owned', 'aws:ResourceTag/topology.kubernetes.io/region': region },
        StringLike: { 'aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass': '*' },
      });
    }
    const tag = allows(statements, 'iam:TagInstanceProfile');
    expect(tag).toHaveLength(1);
    expect(tag[0]?.Condition?.['StringEquals']).toMatchObject({
      [OWNED]: 'owned',
      'aws:RequestTag/kubernetes.io/cluster/demo': 'owned',
    });
  });

  it('limits Describe calls to the stack region, and reads prices and the cluster', () => {
    const describe = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('ec2:Describe')));
    expect(describe.map((s) => s.Sid).sort()).toEqual([
      'AllowCapacityReservationReadActions',
      'AllowCatalogReadActions',
      'AllowInstanceReadActions',
      'AllowInstanceStatusReadActions',
      'AllowLaunchReadActions',
      'AllowLaunchTemplateReadActions',
      'AllowNodeClassReadActions',
    ]);
    for (const statement of describe) {
      expect(statement.Condition).toEqual({
        StringEquals: { 'aws:RequestedRegion': { Ref: 'AWS::Region' } },
      });
    }
    expect(allows(statements, 'pricing:GetProducts')).toHaveLength(1);
    const describeCluster = allows(statements, 'eks:DescribeCluster');
    expect(describeCluster).toHaveLength(1);
    expect(describeCluster[0]?.Resource).toEqual(ref(built.stack, built.cluster.clusterArn));
  });

  it('has no unconditioned Allow on resource * other than read-only actions', () => {
    for (const statement of statements.filter((s) => s.Effect === 'Allow' && resourcesOf(s).includes('*'))) {
      for (const action of actionsOf(statement))
        expect(action).toMatch(/^(ec2:Describe|pricing:GetProducts$)/);
    }
  });

  it('gives each Lambda only the bundles its row lists', () => {
    const { stack, cluster } = built;
    const policyRef = (name: keyof typeof cluster.policies) =>
      ref(stack, present(cluster.policies[name]).managedPolicyArn);
    const roles = template.toJSON()['Resources'] as Record<string, { Properties: Record<string, unknown> }>;
    const managedOf = (name: string) => {
      const logicalId = (
        ref(stack, cluster.functionRoles[name]?.roleArn ?? '') as { 'Fn::GetAtt': [string] }
      )['Fn::GetAtt'][0];
      return roles[logicalId]?.Properties['ManagedPolicyArns'];
    };
    expect(managedOf('catalog')).toEqual([policyRef('catalogRead'), policyRef('launchTemplateCleanup')]);
    expect(managedOf('provisioner')).toEqual([
      policyRef('nodeClassRead'),
      policyRef('instanceRead'),
      policyRef('nodeLaunch'),
      policyRef('instanceProfiles'),
      policyRef('clusterAccess'),
    ]);
    expect(managedOf('termination')).toEqual([
      policyRef('instanceRead'),
      policyRef('nodeTermination'),
      policyRef('clusterAccess'),
    ]);
  });

  it('lets the provisioner send its delayed follow-ups to the pod-event queue, and tells it the URL', () => {
    const { stack, cluster, template: defaults } = makeStack();
    const queueArn = JSON.stringify(ref(stack, cluster.queues.podEvents.queueArn));
    const provisionerRole = ref(stack, cluster.functionRoles['provisioner']?.roleName ?? '');
    const resources = defaults.toJSON()['Resources'] as Record<
      string,
      { Type: string; Properties: { PolicyDocument?: { Statement: Statement[] }; Roles?: unknown[] } }
    >;
    const provisionerStatements = Object.values(resources)
      .filter(
        (r) =>
          r.Type === 'AWS::IAM::Policy' &&
          (r.Properties.Roles ?? []).some((role) => JSON.stringify(role) === JSON.stringify(provisionerRole)),
      )
      .flatMap((r) => r.Properties.PolicyDocument?.Statement ?? []);
    expect(
      provisionerStatements.filter(
        (st) => actionsOf(st).includes('sqs:SendMessage') && JSON.stringify(st.Resource) === queueArn,
      ),
    ).toHaveLength(1);
    defaults.hasResourceProperties('AWS::Lambda::Function', {
      Description: provisionerFunction.description,
      Environment: {
        Variables: Match.objectLike({
          [EnvVar.podEventQueueUrl]: ref(stack, cluster.queues.podEvents.queueUrl),
        }),
      },
    });
  });

  it('lets only the disruption Lambda send passes to the disruption queue', () => {
    const { stack, cluster, template: defaults } = makeStack();
    const queueArn = JSON.stringify(ref(stack, present(cluster.queues.disruptionPasses).queueArn));
    const resources = defaults.toJSON()['Resources'] as Record<
      string,
      { Type: string; Properties: { PolicyDocument?: { Statement: Statement[] }; Roles?: unknown[] } }
    >;
    const senders = Object.entries(cluster.functionRoles).filter(([, role]) => {
      const roleRef = JSON.stringify(ref(stack, role?.roleName ?? ''));
      return Object.values(resources)
        .filter(
          (r) =>
            r.Type === 'AWS::IAM::Policy' &&
            (r.Properties.Roles ?? []).some((x) => JSON.stringify(x) === roleRef),
        )
        .flatMap((r) => r.Properties.PolicyDocument?.Statement ?? [])
        .some((st) => actionsOf(st).includes('sqs:SendMessage') && JSON.stringify(st.Resource) === queueArn);
    });
    expect(senders.map(([name]) => name)).toEqual(['disruption']);
  });

  it('builds every EC2 policy even with no Lambda using it', () => {
    const bare = makeStack({ functions: [] });
    const bareStatements = allStatements(bare.template);
    for (const action of [
      'ec2:CreateFleet',
      'ec2:TerminateInstances',
      'ec2:DeleteLaunchTemplate',
      'eks:DescribeCluster',
    ]) {
      expect(allows(bareStatements, action).length, action).toBeGreaterThan(0);
    }
    // No Flotilla Lambda (CDK's provider that empties the summary bucket is the one function left).
    const functions = Object.values(bare.template.findResources('AWS::Lambda::Function')) as {
      Properties: { Description?: unknown };
    }[];
    expect(functions.filter((f) => String(f.Properties.Description).startsWith('Flotilla'))).toEqual([]);
    bare.template.resourceCountIs('Custom::S3AutoDeleteObjects', 1);
  });
});

describe('IAM of the NodePool wake-ups (EventBridge Scheduler)', () => {
  const built = makeStack();
  const statements = ownedStatements(built.template);
  const wakeUps = present(built.cluster.wakeUps);
  const bySid = (sid: string) => statements.filter((s) => s.statement.Sid === sid);

  it('lets the provisioner alone change schedules, only in the stack’s group, and pass the wake-up role only to Scheduler', () => {
    const change = statements.filter((s) =>
      actionsOf(s.statement).some((a) =>
        ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'].includes(a),
      ),
    );
    expect(change).toHaveLength(1);
    expect(change[0]?.owner).toMatch(/^FlotillaProvisioner/);
    expect(JSON.stringify(change[0]?.statement.Resource)).toContain(`:schedule/${wakeUps.groupName}/*`);
    const [pass] = bySid('AllowWakeUpRolePass');
    expect(pass?.owner).toBe(change[0]?.owner);
    expect(resourcesOf(pass?.statement as Statement)).toEqual([ref(built.stack, wakeUps.role.roleArn)]);
    expect(pass?.statement.Condition).toEqual({
      StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
    });
  });

  it('lets Scheduler, in this account only, send to the pod-event queue and nothing else', () => {
    const role = built.template.findResources('AWS::IAM::Role', {
      Properties: { Description: Match.stringLikeRegexp('wake-ups') },
    });
    const [resource] = Object.values(role) as {
      Properties: { AssumeRolePolicyDocument: { Statement: Statement[] } };
    }[];
    const trust = resource?.Properties.AssumeRolePolicyDocument.Statement ?? [];
    expect(trust).toHaveLength(1);
    expect(trust[0]?.Principal).toEqual({ Service: 'scheduler.amazonaws.com' });
    expect(trust[0]?.Condition?.['StringEquals']).toEqual({ 'aws:SourceAccount': { Ref: 'AWS::AccountId' } });
    // Only for the schedules of the stack's own group.
    expect(JSON.stringify(trust[0]?.Condition?.['ArnLike']?.['aws:SourceArn'])).toContain(
      `:schedule/${wakeUps.groupName}/*`,
    );
    const [send] = bySid('AllowWakeUps');
    expect(actionsOf(send?.statement as Statement)).toEqual(['sqs:SendMessage']);
    expect(resourcesOf(send?.statement as Statement)).toEqual([
      ref(built.stack, present(built.cluster.queues.podEvents).queueArn),
    ]);
  });

  it('tells the provisioner its group, the role and the queue, and names a group Scheduler accepts', () => {
    const fn = built.template.findResources('AWS::Lambda::Function', {
      Properties: { Description: Match.stringLikeRegexp('launch nodes for pending pods') },
    });
    const env = (
      Object.values(fn)[0] as { Properties: { Environment: { Variables: Record<string, unknown> } } }
    ).Properties.Environment.Variables;
    expect(env[EnvVar.wakeUpGroup]).toBe('flotilla-demo');
    expect(env[EnvVar.wakeUpRoleArn]).toEqual(ref(built.stack, wakeUps.role.roleArn));
    expect(env[EnvVar.podEventQueueArn]).toEqual(
      ref(built.stack, present(built.cluster.queues.podEvents).queueArn),
    );
    const long = wakeUpGroupNameFor('c'.repeat(100));
    expect(long).toMatch(/^flotilla-c+-[0-9a-f]{12}$/);
    expect(long.length).toBeLessThanOrEqual(64);
  });
});
