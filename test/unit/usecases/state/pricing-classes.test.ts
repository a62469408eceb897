import { describe, expect, it } from 'vitest';
import { bundledCatalog, makeMemoryCloud } from '../../../../shared/adapters/memory/index.ts';
import { solve } from '../../../../shared/core/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { buildSchedulingInput, type ClusterState } from '../../../../shared/usecases/state/cluster-state.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode, launchedNodeLabels } from '../../../fixtures/nodes.ts';
import { pod } from '../../core/builders.ts';
import { readyNodeClass } from '../../memory/fixtures.ts';
import { nodePool } from '../provisioning/builders.ts';

// Under the cluster's dollar limit, the nodes of a NodePool that may not launch now (paused by the
// runaway guard here) are still priced from its own EC2NodeClass's instance types: they count
// against the limit at their price, and never leave the limit unknown to every other pool.

const AT = new Date('2026-11-21T10:00:00Z');
const cloud = makeMemoryCloud({
  clock: makeManualClock(AT),
  clusterName: 'pricing',
  catalog: bundledCatalog('us-east-1', ['us-east-1a']),
});

function state(): ClusterState {
  const labels = launchedNodeLabels('gpu-1', { pool: 'gpu', instanceType: 'm5.large', initialized: true });
  const providerId = 'aws:///us-east-1a/i-0000000000000001';
  return {
    pendingPods: [pod({ cpu: '1' })],
    nodes: [clusterNode('gpu-1', { providerId, labels, nodePoolName: 'gpu', capacity: { cpu: 2000 } })],
    nodeClaims: [
      readNodeClaim('gpu-claim', {
        nodePoolName: 'gpu',
        labels,
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'gpu' },
        status: { providerId, conditions: [] },
      }),
    ],
    nodePools: [
      nodePool('default'),
      nodePool(
        'gpu',
        { nodeClassName: 'gpu' },
        {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'gpu' },
        },
      ),
    ],
    nodeClasses: [readyNodeClass(AT), { ...readyNodeClass(AT), name: 'gpu' }],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
}

const paused = new Map([['gpu', 'the runaway guard pauses its launches']]);

describe("a paused NodePool's nodes under the cluster's dollar limit", () => {
  it('are priced from its own class, so the other pools launch as the limit allows', async () => {
    const input = await buildSchedulingInput(state(), cloud, {
      nowMs: AT.getTime(),
      pausedNodePools: paused,
      solveOptions: { maxCostPerHour: 100 },
    });
    expect([...input.instanceTypes.keys()].sort()).toEqual(['default', 'gpu']);
    const result = solve(input.solve);
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(1);
  });

  it('are not read for when no dollar limit applies', async () => {
    const input = await buildSchedulingInput(state(), cloud, {
      nowMs: AT.getTime(),
      pausedNodePools: paused,
    });
    expect([...input.instanceTypes.keys()]).toEqual(['default']);
  });
});
