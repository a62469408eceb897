import type { Pod, Taint } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import { condition } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';

// Builders for the runaway guard's tests: NodeClaims of pool `general` and their Nodes.

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const MIN = 60_000;
export const ROGUE: Taint = { key: 'chaos.example.com/rogue', effect: 'NoExecute' };

/**
 * A NodeClaim of pool `general` with these conditions True, each since `at[type]` (default: its
 * creation).
 */
export function claim(
  name: string,
  createdAtMs: number,
  conditions: string[],
  extra: Partial<ClusterNodeClaim> = {},
  at: Readonly<Record<string, number>> = {},
): ClusterNodeClaim {
  return readNodeClaim(name, {
    uid: `uid-${name}`,
    nodePoolName: 'general',
    createdAtMs,
    status: {
      providerId: `aws:///us-east-1a/i-${name}`,
      nodeName: `node-${name}`,
      conditions: conditions.map((type) =>
        condition(type, {
          lastTransitionTime: Number.isNaN(at[type]) ? '' : new Date(at[type] ?? createdAtMs).toISOString(),
        }),
      ),
    },
    ...extra,
  });
}

/** Node `node-<name>` of NodeClaim `name` (pool `general`), initialized, with `taints` and `pods`. */
export function node(
  name: string,
  taints: Taint[],
  pods: Pod[] = [],
  extra: Partial<ClusterNode> = {},
): ClusterNode {
  return clusterNode(`node-${name}`, {
    uid: `uid-node-${name}`,
    nodePoolName: 'general',
    providerId: `aws:///us-east-1a/i-${name}`,
    taints,
    allocatable: { cpu: 2000 },
    pods,
    ...extra,
  });
}
