import { describe, expect, it } from 'vitest';
import { NodeClaimConditionType } from '../../../../shared/core/index.ts';
import type { ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { budgetCounts } from '../../../../shared/usecases/state/budget-counts.ts';
import { condition } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';

// What a NodePool's nodes use of its disruption budgets, per reason: the same counting for the
// disruption methods and node repair, but for NotReady nodes, which only `Unhealthy` leaves out.

const claim = (name: string, extra: Partial<ClusterNodeClaim> = {}, initialized = true) =>
  readNodeClaim(name, {
    status: {
      nodeName: `node-${name}`,
      conditions: initialized ? [condition(NodeClaimConditionType.initialized)] : [],
    },
    ...extra,
  });

const claims = [
  claim('ready'),
  claim('not-ready'),
  claim('deleting', { deleting: true }),
  claim('node-deleting'),
  claim('in-command'),
  claim('uninitialized', {}, false),
  claim('no-node'),
];
const nodes = [
  clusterNode('node-ready', { ready: true }),
  clusterNode('node-not-ready', { ready: false }),
  clusterNode('node-deleting', { ready: true }),
  clusterNode('node-node-deleting', { ready: true, deleting: true }),
  clusterNode('node-in-command', { ready: true }),
  clusterNode('node-uninitialized', { ready: false }),
];

describe('budgetCounts', () => {
  it.each([
    ['Empty', 4],
    ['Drifted', 4],
    ['Underutilized', 4],
    ['Unhealthy', 3],
  ] as const)('for %s: five initialized nodes with their Node, %i being disrupted', (reason, disrupting) => {
    const counts = budgetCounts(claims, nodes, new Set(['in-command']), reason);
    expect(counts.get('default')).toEqual({ nodes: 5, disrupting });
  });
});
