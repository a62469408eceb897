import { describe, expect, it } from 'vitest';
import { actionsOf, allStatements, makeStack } from './stacks.ts';

// The clean-up when the cluster goes, as the stack deploys it: a custom resource whose deletion
// runs the clean-up Lambda after every other Lambda (and so every trigger that could launch) is
// gone, told by `onDelete` whether to remove anything (cleanUpOnDestroy), and the rule on EKS
// DeleteCluster; its role reads only its own stack.

type Resource = { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] };

describe('the clean-up when the cluster goes', () => {
  it('deletes every other Lambda before the clean-up resource, which names the cleanup Lambda', () => {
    const { template } = makeStack();
    const resources = template.toJSON()['Resources'] as Record<string, Resource>;
    const [[cleanupId, cleanup] = []] = Object.entries(resources).filter(
      ([, r]) => r.Type === 'Custom::FlotillaClusterCleanup',
    );
    expect(cleanup?.Properties?.['ServiceToken']).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^FlotillaCleanupFunction/), 'Arn'],
    });
    expect(cleanup?.Properties?.['cluster']).toBe('demo');
    expect(cleanup?.Properties?.['onDelete']).toBe('cleanUp');
    const functions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    const flotilla = functions.filter(([, r]) =>
      String(r.Properties?.['Description'] ?? '').startsWith('Flotilla:'),
    );
    expect(flotilla).toHaveLength(7);
    for (const [id, fn] of flotilla) {
      if (id.startsWith('FlotillaCleanupFunction')) {
        expect(fn.DependsOn ?? []).not.toContain(cleanupId);
      } else {
        expect(fn.DependsOn ?? [], id).toContain(cleanupId);
      }
    }
  });

  it('keeps the resource with cleanUpOnDestroy false, told to keep the instances, and still cleans up on EKS DeleteCluster', () => {
    // Removing the resource in an update would delete it: the setting changes what its deletion does.
    const { template } = makeStack({ cleanUpOnDestroy: false });
    template.resourceCountIs('Custom::FlotillaClusterCleanup', 1);
    template.hasResourceProperties('Custom::FlotillaClusterCleanup', { cluster: 'demo', onDelete: 'keep' });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { source: ['aws.eks'], detail: { eventName: ['DeleteCluster'] } },
    });
  });

  it('lets the clean-up Lambda read its own stack, and nothing else of CloudFormation', () => {
    const { template } = makeStack();
    const cloudFormation = allStatements(template).filter((st) =>
      actionsOf(st).some((a) => a.startsWith('cloudformation:')),
    );
    expect(cloudFormation).toEqual([
      {
        Sid: 'AllowOwnStackRead',
        Effect: 'Allow',
        Action: 'cloudformation:DescribeStacks',
        Resource: { Ref: 'AWS::StackId' },
      },
    ]);
  });

  it('runs the clean-up Lambda outside the VPC the others run in', () => {
    const { template } = makeStack({}, { vpc: true });
    const functions = Object.entries(template.toJSON()['Resources'] as Record<string, Resource>).filter(
      ([, r]) =>
        r.Type === 'AWS::Lambda::Function' && String(r.Properties?.['Description']).startsWith('Flotilla:'),
    );
    for (const [id, fn] of functions) {
      expect(fn.Properties?.['VpcConfig'] === undefined, id).toBe(id.startsWith('FlotillaCleanupFunction'));
    }
  });
});
