import { describe, expect, it } from 'vitest';
import { DYNAMIC_RESOURCES_UNSUPPORTED, type Pod, solve } from '../../../shared/core/index.ts';
import { daemonSet, node, nodePool, pod, solveInput } from './builders.ts';
import { SMALL_TYPES } from './fixtures.ts';

// Pods with Dynamic Resource Allocation requirements, as Karpenter v1.14 with its default
// IGNORE_DRA_REQUESTS=true: never tried (no NodeClaim, no existing node), reported with one reason,
// and DaemonSets with them add no overhead anywhere.

const withDevices = (p: Pod): Pod => ({ ...p, dynamicResources: true });

describe('pods with Dynamic Resource Allocation requirements', () => {
  it('are unschedulable with their own reason, and the other pods are planned as before', () => {
    const gpu = withDevices(pod({ name: 'trainer', cpu: '1', memory: '1Gi' }));
    const web = pod({ name: 'web', cpu: '1', memory: '1Gi' });
    const result = solve(
      solveInput({
        types: SMALL_TYPES,
        nodePools: [nodePool({ name: 'a' }), nodePool({ name: 'b', weight: 1 })],
        pods: [gpu, web],
      }),
    );
    expect(result.unschedulable).toEqual([
      {
        pod: { uid: gpu.uid, namespace: 'default', name: 'trainer' },
        reasons: [
          { nodePool: 'b', reason: DYNAMIC_RESOURCES_UNSUPPORTED },
          { nodePool: 'a', reason: DYNAMIC_RESOURCES_UNSUPPORTED },
        ],
        message: DYNAMIC_RESOURCES_UNSUPPORTED,
      },
    ]);
    expect(result.nodeClaims.flatMap((c) => c.pods.map((p) => p.name))).toEqual(['web']);
  });

  it('do not go to an existing node with room either', () => {
    const gpu = withDevices(pod({ name: 'trainer', cpu: '100m' }));
    const result = solve(
      solveInput({
        types: SMALL_TYPES,
        nodes: [node({ name: 'roomy', cpu: '8', memory: '32Gi', nodePoolName: 'default' })],
        pods: [gpu],
      }),
    );
    expect(result.placements).toEqual([]);
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable.map((u) => u.message)).toEqual([DYNAMIC_RESOURCES_UNSUPPORTED]);
  });

  it('with no NodePool, still say why', () => {
    const gpu = withDevices(pod({ name: 'trainer', cpu: '100m' }));
    const result = solve(solveInput({ types: SMALL_TYPES, nodePools: [], pods: [gpu] }));
    expect(result.unschedulable[0]?.reasons).toEqual([
      { nodePool: '', reason: DYNAMIC_RESOURCES_UNSUPPORTED },
    ]);
  });

  it('in a DaemonSet, add no overhead to new NodeClaims', () => {
    const ds = daemonSet({ name: 'device-plugin', cpu: '500m', memory: '256Mi' });
    const plain = daemonSet({ name: 'logs', cpu: '100m', memory: '64Mi' });
    const result = solve(
      solveInput({
        types: SMALL_TYPES,
        daemonSets: [{ ...ds, template: withDevices(ds.template) }, plain],
        pods: [pod({ cpu: '1', memory: '1Gi' })],
      }),
    );
    expect(result.nodeClaims[0]?.requests).toEqual({
      cpu: 1100,
      memory: 1024 ** 3 + 64 * 1024 ** 2,
      pods: 2,
    });
  });

  it('in a DaemonSet, reserve no room on existing nodes', () => {
    // 2 CPUs free; a DaemonSet pod not yet running there would take 1.5 of them if it counted.
    const ds = daemonSet({ name: 'device-plugin', cpu: '1500m', memory: '1Mi' });
    const result = solve(
      solveInput({
        types: SMALL_TYPES,
        nodes: [node({ name: 'n', cpu: '2', memory: '8Gi', nodePoolName: 'default' })],
        daemonSets: [{ ...ds, template: withDevices(ds.template) }],
        pods: [pod({ name: 'fits', cpu: '1', memory: '1Gi' })],
      }),
    );
    expect(result.placements).toEqual([
      expect.objectContaining({
        kind: 'existingNode',
        nodeName: 'n',
        pod: expect.objectContaining({ name: 'fits' }),
      }),
    ]);
  });
});
