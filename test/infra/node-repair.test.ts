import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { AppUsageError, buildApp } from '../../infra/main.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { actionsOf, makeStack, NO_BUNDLING, ref, type Statement } from './stacks.ts';

// The nodeRepair switch: off by default, carried to the garbage collector's environment, and the
// DescribeInstanceStatus read given to that Lambda alone.

type Resource = { readonly Properties?: Record<string, unknown> };
const propsOf = (r: Resource | undefined): Record<string, unknown> => r?.Properties ?? {};
const statementsOf = (r: Resource | undefined): Statement[] =>
  (propsOf(r)['PolicyDocument'] as { Statement?: Statement[] } | undefined)?.Statement ?? [];

describe('FlotillaCluster nodeRepair', () => {
  let built: ReturnType<typeof makeStack>;
  beforeAll(() => {
    built = makeStack();
  });

  const collectorEnv = (b: ReturnType<typeof makeStack>) => {
    const fn = b.cluster.functions['garbage-collector'];
    expect(fn).toBeDefined();
    const resolved = b.template.findResources('AWS::Lambda::Function');
    const id = b.stack.getLogicalId(fn?.node.defaultChild as never);
    const env = propsOf(resolved[id] as Resource | undefined)['Environment'] as
      | { Variables?: Record<string, unknown> }
      | undefined;
    return env?.Variables ?? {};
  };

  it('is off by default, as Karpenter`s NodeRepair feature gate', () => {
    expect(collectorEnv(built)[EnvVar.nodeRepair]).toBe('false');
  });

  it('is carried to the garbage collector when set', () => {
    expect(collectorEnv(makeStack({ nodeRepair: true }))[EnvVar.nodeRepair]).toBe('true');
  });

  it('gives ec2:DescribeInstanceStatus, in this region only, to the garbage collector and the interruption Lambda alone', () => {
    const { template, stack, cluster } = built;
    const policies = template.findResources('AWS::IAM::ManagedPolicy');
    const withStatus = Object.entries(policies).filter(([, p]) =>
      statementsOf(p as Resource).some((s) => actionsOf(s).includes('ec2:DescribeInstanceStatus')),
    );
    expect(withStatus).toHaveLength(1);
    const [policyId, policy] = withStatus[0] ?? ['', {}];
    expect(statementsOf(policy as Resource)).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: 'ec2:DescribeInstanceStatus',
        Resource: '*',
        Condition: { StringEquals: { 'aws:RequestedRegion': { Ref: 'AWS::Region' } } },
      }),
    ]);
    const roles = template.findResources('AWS::IAM::Role');
    const holders = Object.entries(roles)
      .filter(([, r]) =>
        JSON.stringify(propsOf(r as Resource)['ManagedPolicyArns'] ?? []).includes(`"${policyId}"`),
      )
      .map(([id]) => id);
    // Node repair's impaired instances, and the instance status poll.
    const roleIds = ['garbage-collector', 'interruption'].map((name) => {
      const role = cluster.functions[name]?.role;
      expect(role).toBeDefined();
      return (ref(stack, role?.roleArn ?? '') as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0];
    });
    expect(holders.sort()).toEqual(roleIds.sort());
    template.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      Description: Match.stringLikeRegexp('instance status checks'),
    });
  });

  it('is set with -c nodeRepair=true, and refuses other values', () => {
    const build = (nodeRepair: unknown) =>
      buildApp({
        env: { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'us-east-1' },
        appProps: { context: { ...NO_BUNDLING, clusterName: 'repaired', nodeRepair } },
      });
    const envOf = (stack: ReturnType<typeof build>['stack']) =>
      Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).flatMap((f) => {
        const env = propsOf(f as Resource)['Environment'] as
          | { Variables?: Record<string, unknown> }
          | undefined;
        const value = env?.Variables?.[EnvVar.nodeRepair];
        return value === undefined ? [] : [value];
      });
    expect(envOf(build('true').stack)).toEqual(['true']);
    expect(envOf(build(false).stack)).toEqual(['false']);
    expect(() => build('yes')).toThrow(AppUsageError);
    expect(() => build('yes')).toThrow(/nodeRepair "yes" is neither true nor false/);
  });
});
