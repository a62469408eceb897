import { describe, expect, it } from 'vitest';
import { DYNAMIC_RESOURCES_UNSUPPORTED, type Pod } from '../../../../shared/core/index.ts';
import type { ClusterNode } from '../../../../shared/ports/cluster.ts';
import { evaluateConsolidation } from '../../../../shared/usecases/disruption/consolidation.ts';
import { drift } from '../../../../shared/usecases/disruption/drift.ts';
import type { DisruptionCandidate } from '../../../../shared/usecases/disruption/method.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { pod } from '../provisioning/builders.ts';
import {
  candidate,
  clusterNode,
  condition,
  nodeClaim,
  READY_CONDITIONS,
  simulatedCluster,
  T0,
} from './builders.ts';

// Disruption's simulation treats a pod with Dynamic Resource Allocation requirements as Karpenter
// v1.14 with IGNORE_DRA_REQUESTS=true does: it would not schedule anywhere, so the node it runs on
// is neither consolidated nor replaced for drift while it is there.

describe('a node running a pod with Dynamic Resource Allocation requirements', () => {
  // A node with 4 CPUs, half of them used, beside the candidate whose 1.5-CPU pod would move there.
  const keep: ClusterNode = clusterNode('node-keep', { pods: [pod('busy', 2000)] });

  function setUp(moving: Pod) {
    const c: DisruptionCandidate = {
      ...candidate('c', {
        pods: [moving],
        conditions: [...READY_CONDITIONS, condition('Consolidatable'), condition('Drifted')],
      }),
      pricePerHour: 0.096,
    };
    const simulate = simulatedCluster({
      nodes: [keep, c.node],
      nodeClaims: [nodeClaim('keep'), c.nodeClaim],
    });
    return { c, simulate };
  }
  const context = { instanceTypes: () => SMALL_TYPES, poolTotals: new Map(), nowMs: T0 };

  it('without such a pod, the node is consolidated and replaced for drift (its pod fits the other node)', () => {
    const { c, simulate } = setUp(pod('moving', 1500));
    expect(simulate([c]).unschedulable).toEqual([]);
    expect(evaluateConsolidation(singleNodeConsolidation, [c], simulate, context)).toMatchObject({
      kind: 'command',
    });
    expect(drift.computeCommands([c], new Map([['default', 1]]), simulate)).toHaveLength(1);
  });

  it('with one, its pod would not schedule: neither consolidation nor drift takes the node', () => {
    const { c, simulate } = setUp(pod('moving', 1500, { dynamicResources: true }));
    expect(simulate([c]).unschedulable).toEqual([
      expect.objectContaining({
        pod: expect.objectContaining({ name: 'moving' }),
        message: DYNAMIC_RESOURCES_UNSUPPORTED,
      }),
    ]);
    expect(evaluateConsolidation(singleNodeConsolidation, [c], simulate, context)).toEqual({
      kind: 'invalid',
      why: '1 pods would have no place',
    });
    expect(drift.computeCommands([c], new Map([['default', 1]]), simulate)).toEqual([]);
  });
});
