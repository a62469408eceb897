import { describe, expect, it } from 'vitest';
import {
  driveTermination,
  driveTerminationRequests,
  driveTerminationSweep,
} from '../../../../shared/usecases/termination/driver.ts';
import { makeTerminationWorld } from './world.ts';

// The termination drive loop on the in-memory cluster and cloud with a virtual clock: the passes
// are the real terminateNodeClaim, the waits are the ones the passes ask for.

describe('driveTermination', () => {
  it('passes over a NodeClaim until it is gone within the budget, waiting as the passes ask', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 2 });
    const result = await driveTermination(w.deps, 'a', true);
    expect(result).toEqual({ kind: 'done', nodeClaim: 'a' });
    expect(await w.cluster.nodeClaim('a')).toBeUndefined();
    // Evicted, drained once their 2 s grace period ran out (1 s waits), then the instance (a 5 s wait).
    expect(w.elapsedMs()).toBe(7_000);
    expect(w.passes).toEqual(['a', 'a', 'a', 'a']);
    expect(w.queue.size()).toBe(0);
    expect(w.logged('termination continues later')).toEqual([]);
    // Its last line names where it ran, for nodeclaims_terminated_total.
    expect(w.logged('deleted nodeclaim')).toEqual([
      expect.objectContaining({
        decision: 'finalizeNodeClaim',
        nodeClaim: 'a',
        nodePool: 'default',
        capacityType: 'on-demand',
        zone: 'us-east-1a',
      }),
    ]);
  });

  it('times the termination for Karpenter’s duration metrics, and counts the drained node', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 2 });
    await driveTermination(w.deps, 'a', true);
    // Deleted at the start; the instance asked to terminate after the drain, 5 s before the end.
    expect(w.logged('deleted nodeclaim')).toEqual([
      expect.objectContaining({ terminationSeconds: 7, instanceTerminationSeconds: 5 }),
    ]);
    // The Node, made and deleted at the start, drained.
    expect(w.logged('node finalized')).toEqual([
      expect.objectContaining({ terminationSeconds: 7, lifetimeSeconds: 7, drained: true }),
    ]);
    const points = (name: string) =>
      w.metrics.points.filter((p) => p.name === name).map((p) => [p.dimensions, p.values]);
    const pool = { cluster: 'drive-test', nodepool: 'default' };
    expect(points('karpenter_nodeclaims_termination_duration_seconds')).toEqual([[pool, [7]]]);
    expect(points('karpenter_nodeclaims_instance_termination_duration_seconds')).toEqual([[pool, [5]]]);
    expect(points('karpenter_nodes_termination_duration_seconds')).toEqual([[pool, [7]]]);
    expect(points('karpenter_nodes_lifetime_duration_seconds')).toEqual([[pool, [7]]]);
    expect(points('karpenter_nodes_drained_total')).toEqual([[pool, [1]]]);
    // Its pods evicted: two 200s, drained for the NodeClaim that has no DisruptionReason.
    expect(points('karpenter_pods_eviction_requests_total')).toEqual([
      [{ cluster: 'drive-test', code: '200' }, [2]],
    ]);
    expect(points('karpenter_pods_drained_total')).toEqual([
      [{ cluster: 'drive-test', reason: 'Forceful Termination' }, [2]],
    ]);
  });

  it('fails closed on a pod it cannot read: the node is not terminated under it', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 1 });
    // A pod on the node whose spec Flotilla cannot read (tolerations must be a list).
    w.cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'odd', namespace: 'default' },
      spec: { containers: [{ name: 'app', image: 'app' }], tolerations: 'all' },
    });
    w.cluster.bindPod('default', 'odd', 'node-a');
    w.cluster.setPodPhase('default', 'odd', 'Running');
    const result = await driveTermination(w.deps, 'a', true);
    expect(result).toMatchObject({ kind: 'continue', waitingOn: 'drain' });
    expect((result as { detail: string }).detail).toMatch(/1 pods on node node-a cannot be read/);
    expect(await w.cluster.nodeClaim('a')).toBeDefined();
    expect((await w.cloud.list()).length).toBe(1);
  });

  it('hands the rest to a delayed request when the next wait would pass the budget', async () => {
    const w = makeTerminationWorld(4_000);
    await w.terminatingClaim('a', { pods: 1, blockedByBudget: true });
    const result = await driveTermination(w.deps, 'a', true);
    expect(result).toMatchObject({ kind: 'continue', waitingOn: 'drain', afterSeconds: 1 });
    expect(w.elapsedMs()).toBe(4_000);
    expect(w.passes).toHaveLength(5);
    expect(w.queue.size()).toBe(1);
    w.clock.advance(1_000);
    expect(w.queue.receive()).toEqual([{ nodeClaim: 'a' }]);
    expect(w.logged('termination continues later')).toEqual([
      expect.objectContaining({
        nodeClaim: 'a',
        decision: 'continue',
        waitingOn: 'drain',
        reason: 'draining 1 pods',
        afterSeconds: 1,
        queued: true,
      }),
    ]);
  });

  it('leaves the rest to the next sweep without handing on', async () => {
    const w = makeTerminationWorld(2_000);
    await w.terminatingClaim('a', { pods: 1, blockedByBudget: true });
    await driveTermination(w.deps, 'a', false);
    expect(w.queue.size()).toBe(0);
    expect(w.logged('termination continues later')).toEqual([
      expect.objectContaining({ nodeClaim: 'a', queued: false }),
    ]);
  });

  it('returns at once for a NodeClaim that is gone', async () => {
    const w = makeTerminationWorld();
    expect(await driveTermination(w.deps, 'missing', true)).toEqual({
      kind: 'skipped',
      nodeClaim: 'missing',
      why: 'nodeClaim is gone',
    });
    expect(w.elapsedMs()).toBe(0);
  });
});

describe('driveTerminationRequests', () => {
  it('drives each NodeClaim once however many requests name it, and fails only the requests of one that throws', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a');
    await w.terminatingClaim('b', { foreignInstance: true });
    const outcome = await driveTerminationRequests(w.deps, [
      { id: 'm1', message: { nodeClaim: 'a' } },
      { id: 'm2', message: { nodeClaim: 'b' } },
      { id: 'm3', message: { nodeClaim: 'a' } },
      { id: 'm4', message: { nodeClaim: 'b' } },
    ]);
    expect(outcome).toEqual({ failed: ['m2', 'm4'] });
    expect(await w.cluster.nodeClaim('a')).toBeUndefined();
    expect(w.passes.filter((p) => p === 'a')).toHaveLength(2);
    expect(w.logged('termination failed')).toEqual([
      expect.objectContaining({ level: 'error', nodeClaim: 'b' }),
    ]);
    // Refused: the instance Flotilla did not launch still runs, and the NodeClaim waits for it.
    expect(w.cloud.history().map((i) => i.state)).toEqual(['terminated', 'running']);
    expect((await w.cluster.nodeClaim('b'))?.deleting).toBe(true);
  });
});

describe('driveTerminationRequests for deletions the shim reported', () => {
  it('starts a deleted Node on its NodeClaim and drains it in the same invocation', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 1, deleted: 'node' });
    const outcome = await driveTerminationRequests(w.deps, [{ id: 'm1', message: { node: 'node-a' } }]);
    expect(outcome).toEqual({ failed: [] });
    expect(w.logged('deleting nodeclaim')).toEqual([
      expect.objectContaining({ reason: 'node deleted', nodeClaim: 'a', node: 'node-a' }),
    ]);
    // Drained and terminated: the NodeClaim and its instance are gone, not left for the sweep.
    expect(await w.cluster.nodeClaim('a')).toBeUndefined();
    expect(w.cloud.history().map((i) => i.state)).toEqual(['terminated']);
  });

  it('drives a NodeClaim a user deleted, and leaves alone one whose termination is under way', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('user', { pods: 1 });
    await w.terminatingClaim('ours', { pods: 1, blockedByBudget: true });
    // Flotilla's own handover already started on `ours`: its Node is tainted.
    await driveTermination(w.deps, 'ours', false);
    const before = w.passes.length;
    const outcome = await driveTerminationRequests(w.deps, [
      { id: 'm1', message: { nodeClaim: 'user', relayed: true } },
      { id: 'm2', message: { nodeClaim: 'ours', relayed: true } },
    ]);
    expect(outcome).toEqual({ failed: [] });
    expect(w.passes.slice(before).every((p) => p === 'user')).toBe(true);
    expect(await w.cluster.nodeClaim('user')).toBeUndefined();
    expect(w.logged('termination request needs no drive')).toEqual([
      expect.objectContaining({ request: 'nodeClaim "ours"', why: 'its termination is under way' }),
    ]);
  });

  it("leaves a relayed NodeClaim alone when the controller that deleted it marked it, and a Node whose NodeClaim's termination is under way", async () => {
    const w = makeTerminationWorld(30_000);
    // Deleted by a controller of Flotilla's (its DisruptionReason), its Node not tainted yet.
    await w.terminatingClaim('interrupted', { pods: 1, deleted: 'nothing' });
    await w.cluster.patchNodeClaimStatus('interrupted', {
      conditions: [{ type: 'DisruptionReason', status: 'True', reason: 'SpotInterruption', message: 'x' }],
    });
    await w.cluster.deleteNodeClaim('interrupted');
    // Terminating already: its first pass tainted the Node; the Node goes at the end of the drain.
    await w.terminatingClaim('draining', { pods: 1, blockedByBudget: true });
    await driveTermination(w.deps, 'draining', false);
    await w.cluster.deleteNode('node-draining');
    const before = w.passes.length;
    const outcome = await driveTerminationRequests(w.deps, [
      { id: 'm1', message: { nodeClaim: 'interrupted', relayed: true } },
      { id: 'm2', message: { node: 'node-draining' } },
    ]);
    expect(outcome).toEqual({ failed: [] });
    expect(w.passes.length).toBe(before);
    expect(
      w
        .logged('termination request needs no drive')
        .map((l) => [l['request'], l['why']])
        .sort(),
    ).toEqual([
      ['node "node-draining"', 'its NodeClaim is being terminated already'],
      ['nodeClaim "interrupted"', 'its termination is under way'],
    ]);
  });

  it('does nothing for a Node that is not being deleted, whatever the report said', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a', { pods: 1, deleted: 'nothing' });
    const outcome = await driveTerminationRequests(w.deps, [
      { id: 'm1', message: { node: 'node-a' } },
      { id: 'm2', message: { node: 'node-gone' } },
    ]);
    expect(outcome).toEqual({ failed: [] });
    expect(w.passes).toEqual([]);
    expect((await w.cluster.nodeClaim('a'))?.deleting).toBe(false);
    expect(
      w
        .logged('termination request needs no drive')
        .map((l) => [l['request'], l['why']])
        .sort(),
    ).toEqual([
      ['node "node-a"', 'not a deleting Node with the termination finalizer'],
      ['node "node-gone"', 'the Node is gone'],
    ]);
  });
});

describe('driveTerminationSweep', () => {
  it('drives every terminating NodeClaim without starting message chains', async () => {
    const w = makeTerminationWorld(10_000);
    await w.terminatingClaim('a');
    await w.terminatingClaim('b', { pods: 1, blockedByBudget: true });
    const results = await driveTerminationSweep(w.deps);
    expect(results).toEqual(
      expect.arrayContaining([
        { kind: 'done', nodeClaim: 'a' },
        expect.objectContaining({ kind: 'continue', nodeClaim: 'b', waitingOn: 'drain' }),
      ]),
    );
    expect(results).toHaveLength(2);
    expect(w.queue.size()).toBe(0);
  });

  it('throws after every drive settled when one fails, so the schedule retries', async () => {
    const w = makeTerminationWorld(30_000);
    await w.terminatingClaim('a');
    await w.terminatingClaim('b', { foreignInstance: true });
    await expect(driveTerminationSweep(w.deps)).rejects.toMatchObject({ code: 'InstanceNotOwned' });
    expect(await w.cluster.nodeClaim('a')).toBeUndefined();
  });
});
