import type { MemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import type { ConditionUpdate } from '../../../../shared/ports/cluster-writes.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

/**
 * A registered NodeClaim `name` of NodePool `default` on its Node `node-<name>` in the in-memory
 * cluster, the Node Ready or not, with the NodeClaim `conditions` (none unless given), as node
 * repair's tests need them.
 */
export async function poolNode(
  memory: MemoryCluster,
  name: string,
  ready: boolean,
  conditions: readonly ConditionUpdate[] = [],
): Promise<void> {
  const providerId = `aws:///us-east-1a/i-0${name}`;
  await memory.createNodeClaim(newNodeClaim(name));
  memory.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: `node-${name}`, labels: { 'karpenter.sh/nodepool': 'default' } },
    spec: { providerID: providerId },
  });
  memory.setNodeReady(`node-${name}`, ready);
  await memory.patchNodeClaimStatus(name, { providerId, nodeName: `node-${name}`, conditions });
}

/** NodePool `default` (uid `pool-uid`) in the in-memory cluster, with disruption `budgets` when given. */
export function defaultPool(memory: MemoryCluster, budgets?: readonly Record<string, unknown>[]): void {
  memory.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'default', uid: 'pool-uid' },
    spec: {
      ...(budgets === undefined ? {} : { disruption: { budgets } }),
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [],
        },
      },
    },
  });
}
