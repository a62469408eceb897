import { describe, expect, it } from 'vitest';
import { makeStack } from './stacks.ts';

// The clean-up when the cluster goes, as the stack deploys it: a custom resource whose deletion
// runs the clean-up Lambda after every other Lambda (and so every trigger that could launch) is
// gone, unless cleanUpOnDestroy is false; and the Lambda's role, which may terminate and delete
// only what carries the cluster's ownership tags.

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

  it('has no clean-up resource with cleanUpOnDestroy false, and still cleans up on EKS DeleteCluster', () => {
    const { template } = makeStack({ cleanUpOnDestroy: false });
    template.resourceCountIs('Custom::FlotillaClusterCleanup', 0);
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { source: ['aws.eks'], detail: { eventName: ['DeleteCluster'] } },
    });
  });
});
