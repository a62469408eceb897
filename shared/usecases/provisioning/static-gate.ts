import { isStaticNodePool } from '../../core/index.ts';
import type { Lease } from '../../ports/lease.ts';
import { type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import { reconcileStaticNodePools, type StaticPassResult } from './static-pools.ts';
import type { ProvisionOptions, ProvisionPorts } from './types.ts';

// Static NodePools and Karpenter's StaticCapacity feature gate. With it off, Karpenter runs neither of
// its static controllers: a NodePool with `spec.replicas` gets no nodes launched for its replicas
// and no surplus removed, and as always pods never launch nodes in it. Karpenter says nothing of it
// on the NodePool (no condition, no Event); Flotilla says it in a decision line per run for each
// such pool whose NodeClaims are not at its replicas.

/** Why a static pool is left as it is. */
export const STATIC_CAPACITY_OFF =
  'the StaticCapacity feature gate is off: spec.replicas is not kept (no launch, no scale-down), as in Karpenter with the gate off';

/**
 * One `staticCapacity` decision (`disabled`) per static NodePool, not being deleted, whose
 * NodeClaims (not being deleted, as the listing has them) are not `replicas`. Changes nothing.
 * @throws ClusterApiError when the NodePools or NodeClaims cannot be listed.
 */
export async function reportStaticCapacityOff(
  ports: Pick<ProvisionPorts, 'cluster'>,
  out: DecisionOutput,
  lease: Lease,
): Promise<void> {
  const pools = (await ports.cluster.nodePools()).items.filter(
    (p) => isStaticNodePool(p.pool) && !p.deleting,
  );
  if (pools.length === 0) return;
  const claims = (await ports.cluster.nodeClaims()).items.filter((c) => !c.deleting);
  for (const { pool } of pools) {
    const replicas = pool.replicas ?? 0;
    const current = claims.filter((c) => c.nodePoolName === pool.name).length;
    if (current === replicas) continue;
    writeDecision(out, {
      kind: 'staticCapacity',
      reason: STATIC_CAPACITY_OFF,
      action: 'disabled',
      nodePool: pool.name,
      replicas,
      current,
      count: 0,
      leaseToken: lease.token,
    });
  }
}

/**
 * The static NodePools' pass of a provisioning run (static-pools.ts) with the StaticCapacity gate
 * on; with it off, a `disabled` line for each static pool off its replicas, and nothing changed.
 */
export async function staticPass(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  out: DecisionOutput,
): Promise<StaticPassResult> {
  if (options.staticCapacity !== true) {
    await reportStaticCapacityOff(ports, out, lease);
    return { claims: [], deleted: [], leaseLost: false };
  }
  return reconcileStaticNodePools(ports, out, lease, options.holder, {
    nodeOverlay: options.nodeOverlay === true,
    runawayGuard: options.runawayGuard !== false,
    ...(options.nodeClassRefreshSeconds === undefined
      ? {}
      : { nodeClassRefreshSeconds: options.nodeClassRefreshSeconds }),
  });
}
