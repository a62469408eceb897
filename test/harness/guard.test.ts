import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ControllerOwnedWriteError, kube } from './index.ts';
import { controllerOwnedWrite } from './kube/guard.ts';

// The guard on the user's kubeconfig: test set-up may do what a user, a kubelet or
// kube-controller-manager does, never write what a Flotilla controller owns. A fixture that tries
// fails here, before anything reaches the API server.

describe('writes test set-up may not make', () => {
  it.each([
    ['PATCH', '/apis/karpenter.sh/v1/nodepools/default/status', { status: {} }],
    ['PUT', '/apis/karpenter.sh/v1/nodeclaims/default-abc/status', { status: {} }],
    ['PATCH', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default/status', { status: {} }],
    [
      'POST',
      '/apis/karpenter.sh/v1/nodeclaims',
      { metadata: { name: 'x', labels: { 'karpenter.sh/nodepool': 'default' } } },
    ],
    [
      'POST',
      '/apis/karpenter.sh/v1/nodeclaims',
      { metadata: { name: 'x', finalizers: ['karpenter.sh/termination'] } },
    ],
    ['POST', '/apis/karpenter.sh/v1/nodeclaims', { metadata: { name: 'x' }, status: { providerID: 'p' } }],
    [
      'POST',
      '/apis/karpenter.sh/v1/nodeclaims',
      { metadata: { name: 'x', annotations: { 'flotilla.io/launch': 'H4sI' } } },
    ],
    ['PATCH', '/apis/karpenter.sh/v1/nodeclaims/default-abc', { metadata: { labels: { a: 'b' } } }],
    ['PATCH', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default', { metadata: { finalizers: null } }],
    ['PATCH', '/api/v1/nodes/ip-10-0-0-1', { metadata: { finalizers: [] } }],
    ['PATCH', '/api/v1/nodes/ip-10-0-0-1', [{ op: 'remove', path: '/metadata/finalizers/0' }]],
    [
      'PATCH',
      '/apis/karpenter.sh/v1/nodepools/default',
      { metadata: { annotations: { 'flotilla.io/launch-backoff': null } } },
    ],
  ])('refuses %s %s', (method, path, body) => {
    expect(controllerOwnedWrite(method, path, JSON.stringify(body))).toEqual(expect.any(String));
  });

  it.each([
    ['POST', '/apis/karpenter.sh/v1/nodepools', { metadata: { name: 'default' } }],
    ['PATCH', '/apis/karpenter.sh/v1/nodepools/default', { spec: { limits: { cpu: '10' } } }],
    ['PATCH', '/apis/karpenter.sh/v1/nodepools/default', { metadata: { annotations: { team: 'web' } } }],
    ['POST', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses', { metadata: { name: 'default' } }],
    ['DELETE', '/apis/karpenter.sh/v1/nodeclaims/default-abc', {}],
    // A standalone NodeClaim (outside every NodePool) is a user's to create.
    ['POST', '/apis/karpenter.sh/v1/nodeclaims', { metadata: { name: 'x', labels: { team: 'a' } } }],
    ['POST', '/api/v1/nodes', { metadata: { name: 'ip-10-0-0-1', finalizers: [] } }],
    ['PATCH', '/api/v1/nodes/ip-10-0-0-1/status', { status: { conditions: [] } }],
    ['PATCH', '/api/v1/nodes/ip-10-0-0-1', { spec: { taints: [] } }],
    ['GET', '/apis/karpenter.sh/v1/nodeclaims', {}],
  ])('lets through %s %s', (method, path, body) => {
    expect(controllerOwnedWrite(method, path, JSON.stringify(body))).toBeUndefined();
  });

  it('throws from the user kubeconfig before the request is sent, and lets the controller through', async () => {
    const cube = await kube();
    const asUser = cube.userKubeConfig.makeApiClient(CustomObjectsApi);
    const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const error = await asUser
      .patchClusterCustomObjectStatus(
        {
          group: 'karpenter.sh',
          version: 'v1',
          plural: 'nodepools',
          name: 'guard-test',
          body: { status: { conditions: [] } },
        },
        mergePatch,
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControllerOwnedWriteError);
    expect((error as Error).message).toContain('/apis/karpenter.sh/v1/nodepools/guard-test/status');
    // Reads and a kubelet's writes go through as before.
    const nodes = await cube.userKubeConfig.makeApiClient(CoreV1Api).listNode();
    expect(Array.isArray(nodes.items)).toBe(true);
  });
});
