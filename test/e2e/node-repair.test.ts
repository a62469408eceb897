import type { CoreV1Event, V1NodeCondition } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { Annotation, NodeClaimConditionType, NodePoolConditionType } from '../../shared/core/index.ts';
import type { Cluster } from '../../shared/ports/cluster.ts';
import type { NodeRepairResult } from '../../shared/usecases/node-repair/repair.ts';
import { waitFor } from '../harness/proc.ts';
import { ProvisionerE2E } from './provisioner-fixture.ts';

// Node repair end to end: three nodes Flotilla launched for a Deployment, the test playing their
// kubelets' Ready condition, and the garbage collector's repair pass as that Lambda runs it (the
// controller group on the API server, its own role on AWS: DescribeInstanceStatus is held to its
// policy). Two NotReady nodes of three hold repair back with one NodeRepairBlocked; once one
// recovers, the other's NodeClaim is deleted with the repair's reason and deadline. The pass sees
// only this file's NodePool, as the API server is shared with other test files.

const e2e = new ProvisionerE2E('repair');
const { id, logLines } = e2e;
const MIN = 60_000;

/** The controller adapter, showing only `pool`'s Nodes, NodeClaims and NodePool. */
function scoped(cluster: Cluster, pool: string): Cluster {
  return {
    ...cluster,
    nodeInfos: async (options) => {
      const read = await cluster.nodeInfos(options);
      return { ...read, items: read.items.filter((n) => n.nodePoolName === pool) };
    },
    nodeClaims: async (options) => {
      const read = await cluster.nodeClaims(options);
      return { ...read, items: read.items.filter((c) => c.nodePoolName === pool), unreadable: [] };
    },
    nodePools: async () => {
      const read = await cluster.nodePools();
      return { ...read, items: read.items.filter((p) => p.pool.name === pool) };
    },
  };
}

/** What the kubelet of `node` posts: its Ready condition, changed `agoMs` ago. */
async function kubeletReports(node: string, status: 'True' | 'False', agoMs: number): Promise<void> {
  const { core } = e2e.env;
  const at = new Date(Date.now() - agoMs);
  for (let attempt = 1; ; attempt += 1) {
    const current = await core.readNode({ name: node });
    const others = (current.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
    const ready: V1NodeCondition = {
      type: 'Ready',
      status,
      reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady',
      message: status === 'True' ? 'kubelet is posting ready status' : 'container runtime is down',
      lastHeartbeatTime: new Date(),
      lastTransitionTime: at,
    };
    try {
      await core.replaceNodeStatus({
        name: node,
        body: { ...current, status: { ...current.status, conditions: [...others, ready] } },
      });
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

async function blockedEvents(subject: string): Promise<CoreV1Event[]> {
  const events = await e2e.env.core.listNamespacedEvent({ namespace: 'default' });
  return events.items.filter((e) => e.reason === 'NodeRepairBlocked' && e.involvedObject.name === subject);
}

it('holds repair back while 2 of 3 nodes are NotReady, then replaces the one still NotReady after 30 min', async () => {
  const pool = await e2e.createPool('repair', 'repair', { instanceTypes: ['m5.large'] });
  await e2e.deploy('repair', 'repaired', 3, '1500m');
  await e2e.run(`repair-${id}`);
  await e2e.allRunning('repaired', 3);
  const claims = await waitFor(
    'three NodeClaims initialized',
    async () => {
      const current = await e2e.nodeClaimsOf(pool);
      const initialized = current.filter((c) =>
        c.status.conditions.some((x) => x.type === 'Initialized' && x.status === 'True'),
      );
      return initialized.length === 3 ? initialized : undefined;
    },
    { timeoutMs: 30_000 },
  );
  const [first, second] = claims.map((c) => ({ claim: c.name, node: c.status.nodeName ?? '' }));
  if (first === undefined || second === undefined) throw new Error('expected three NodeClaims');

  const { repair } = e2e.garbageCollector({ cluster: scoped(e2e.env.cluster, pool) });
  if (repair === undefined) throw new Error('the garbage collector runs no repair pass');
  const pass = (): Promise<NodeRepairResult> => repair();

  // Two kubelets report NotReady since 31 minutes: over the pool's threshold (1 of 3).
  await kubeletReports(first.node, 'False', 31 * MIN);
  await kubeletReports(second.node, 'False', 31 * MIN);
  await waitFor(
    'the cluster read shows both nodes NotReady',
    async () => {
      const nodes = (await e2e.env.cluster.nodeInfos()).items.filter((n) => n.nodePoolName === pool);
      return nodes.filter((n) => !n.ready).length === 2 ? true : undefined;
    },
    { timeoutMs: 10_000 },
  );
  expect(await pass()).toEqual({ repaired: [], blocked: [pool], unblocked: [], failed: [] });
  expect((await e2e.nodeClaimsOf(pool)).filter((c) => c.deleting)).toEqual([]);
  const [poolEvent] = await blockedEvents(pool);
  expect(poolEvent).toMatchObject({
    type: 'Warning',
    involvedObject: { kind: 'NodePool', name: pool },
    message: `more than 20% of nodes in nodepool "${pool}" are unhealthy (2 of 3, at most 1 may be)`,
  });
  for (const subject of [first.node, first.claim, second.node, second.claim]) {
    expect(await blockedEvents(subject)).toHaveLength(1);
  }
  const blockedPool = (await e2e.env.cluster.nodePools()).items.find((p) => p.pool.name === pool);
  expect(
    blockedPool?.conditions.find((c) => c.type === NodePoolConditionType.nodeRepairBlocked),
  ).toMatchObject({
    status: 'True',
    reason: 'UnhealthyThresholdExceeded',
  });

  // The next pass finds the pool still blocked: nothing new is recorded.
  expect(await pass()).toEqual({ repaired: [], blocked: [], unblocked: [], failed: [] });
  const again = await blockedEvents(pool);
  expect(again.map((e) => e.count)).toEqual([1]);

  // One kubelet recovers: 1 unhealthy of 3 is within the threshold, and the other is replaced.
  await kubeletReports(second.node, 'True', 0);
  await waitFor(
    'the cluster read shows one node NotReady',
    async () => {
      const nodes = (await e2e.env.cluster.nodeInfos()).items.filter((n) => n.nodePoolName === pool);
      return nodes.filter((n) => !n.ready).length === 1 ? true : undefined;
    },
    { timeoutMs: 10_000 },
  );
  const before = Date.now();
  expect(await pass()).toEqual({ repaired: [first.claim], blocked: [], unblocked: [pool], failed: [] });
  const repaired = await e2e.env.cluster.nodeClaim(first.claim);
  expect(repaired?.deleting).toBe(true);
  expect(
    repaired?.status.conditions.find((c) => c.type === NodeClaimConditionType.disruptionReason),
  ).toMatchObject({
    status: 'True',
    reason: 'Unhealthy',
  });
  // The deadline is now: termination skips PDBs and volume waits, as for Karpenter's repair.
  const deadline = Date.parse(repaired?.annotations[Annotation.terminationTimestamp] ?? '');
  expect(deadline).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
  expect(deadline).toBeLessThanOrEqual(Date.now());
  expect((await e2e.env.cluster.nodeClaim(second.claim))?.deleting).toBe(false);
  const lines = logLines.filter((l) => l['message'] === 'node repair' && l['nodePool'] === pool);
  expect(lines.map((l) => l['action'])).toEqual(['block', 'unblock', 'replace']);
  expect(lines[2]).toMatchObject({
    decision: 'repair',
    node: first.node,
    nodeClaim: first.claim,
    cause: 'Ready=False',
    tolerationSeconds: 1800,
    unhealthyNodes: 1,
    poolNodes: 3,
    threshold: 1,
  });
});
