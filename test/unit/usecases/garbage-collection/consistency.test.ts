// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import type { ClusterNodeClaim, Condition, NodeInfo } from '../../../../shared/ports/cluster.ts';
import {
  CONSISTENCY_SCAN_SECONDS,
  decideConsistency,
  nodeShapeIssues,
} from '../../../../shared/usecases/garbage-collection/consistency.ts';
import { collectGarbage } from '../../../../shared/usecases/garbage-collection/garbage-collection.ts';
import { memoryWorld } from '../../../fixtures/memory-world.ts';
import { newNodeClaim, readNodeClaim } from '../../../fixtures/node-claims.ts';

// Karpenter's NodeClaim consistency check on the garbage collector's pass: a registered and
// initialized NodeClaim whose Node came up with under 90% of a resource it expected gets a
// FailedConsistencyCheck Warning per issue (once per 10-minute scan period) and
// ConsistentStateFound=False; one without issues gets ConsistentStateFound=True. Nothing else
// happens to it: it is neither deleted nor disrupted.

const CLUSTER = 'consistency-test';
const T0 = Date.parse('2026-11-21T10:00:00Z');
const GiB = 1024 ** 3;
const READY = [
  { type: 'Launched', status: 'True', reason: 'Launched', message: '' },
  { type: 'Registered', status: 'True', reason: 'Registered', message: '' },
] as const;
const INITIALIZED = { type: 'Initialized', status: 'True', reason: 'Initialized', message: '' } as const;

function world() {
  const {
    clock,
    memory: cluster,
    cloud,
    instance,
    logged,
    logger,
    metrics,
  } = memoryWorld(CLUSTER, new Date(T0));
  /**
   * A launched NodeClaim asking for 2 CPUs and 4 GiB, expecting 2 CPUs and 8 GiB (its status
   * capacity), and its Node (the kubelet's) reporting `nodeCapacity`.
   */
  async function launched(
    name: string,
    nodeCapacity: Record<string, string>,
    o: { readonly initialized?: boolean } = {},
  ) {
    const its = instance(name);
    await cluster.createNodeClaim(newNodeClaim(name, { requests: { cpu: 2000, memory: 4 * GiB, pods: 1 } }));
    await cluster.patchNodeClaimStatus(name, {
      providerId: its.providerId,
      nodeName: name,
      capacity: { cpu: 2000, memory: 8 * GiB, pods: 29 },
      conditions: [...READY, ...(o.initialized === false ? [] : [INITIALIZED])],
    });
    cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      spec: { providerID: its.providerId },
      status: { capacity: nodeCapacity },
    });
    cluster.setNodeReady(name, true);
  }
  /** A pass; with `leftMs`, its deadline that far after the clock's time as it starts. */
  const pass = (leftMs?: number) => {
    const by = clock.now().getTime() + (leftMs ?? 0);
    const deadline =
      leftMs === undefined ? {} : { deadline: { deadlineMs: () => by, nowMs: () => clock.now().getTime() } };
    return collectGarbage({ cluster, cloud, logger, metrics, ...deadline }, clock.now());
  };
  const condition = async (name: string) =>
    (await cluster.nodeClaim(name))?.status.conditions.find((c) => c.type === 'ConsistentStateFound');
  const warnings = () =>
    cluster
      .events()
      .filter((e) => e.event.reason === 'FailedConsistencyCheck')
      .map((e) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.event.message, e.count]);
  return { clock, cluster, launched, pass, condition, warnings, logged };
}

describe('the NodeClaim consistency check (garbage collector pass)', () => {
  it('reports a Node with under 90% of the memory its NodeClaim expected, and only reports', async () => {
    const w = world();
    await w.launched('short', { cpu: '2', memory: '7Gi', pods: '29' });
    const result = await w.pass();
    expect(result).toEqual({
      terminated: [],
      deletedNodeClaims: [],
      inconsistentNodeClaims: ['short'],
      failed: [],
    });
    expect(w.warnings()).toEqual([
      [
        'NodeClaim',
        'short',
        'Warning',
        'expected 8Gi of resource memory, but found 7Gi (87.5% of expected)',
        1,
      ],
    ]);
    expect(await w.condition('short')).toMatchObject({
      status: 'False',
      reason: 'ConsistencyCheckFailed',
      message: 'Consistency Check Failed',
    });
    expect(w.logged('nodeclaim consistency checked')).toEqual([
      expect.objectContaining({
        decision: 'consistency',
        reason: 'ConsistencyCheckFailed',
        nodeClaim: 'short',
        nodePool: 'default',
        node: 'short',
        issues: ['expected 8Gi of resource memory, but found 7Gi (87.5% of expected)'],
      }),
    ]);
    // Nothing is done to the NodeClaim or its Node.
    const claim = await w.cluster.nodeClaim('short');
    expect(claim?.deleting).toBe(false);
    expect((await w.cluster.node('short'))?.taints ?? []).toEqual([]);
  });

  it('records the Event again once per scan period while the Node stays short, and writes the condition once', async () => {
    const w = world();
    await w.launched('short', { cpu: '2', memory: '4Gi', pods: '29' });
    await w.pass();
    w.clock.advance(2 * 60_000);
    await w.pass();
    expect(w.warnings().map((e) => e[4])).toEqual([1]);
    w.clock.advance(CONSISTENCY_SCAN_SECONDS * 1000);
    await w.pass();
    expect(w.warnings().map((e) => e[4])).toEqual([2]);
    // The condition turned False once: one decision line.
    expect(w.logged('nodeclaim consistency checked')).toHaveLength(1);
  });

  it('marks a NodeClaim whose Node has what it expected ConsistentStateFound=True, and back from False', async () => {
    const w = world();
    await w.launched('fine', { cpu: '2', memory: '7800Mi', pods: '29' });
    expect(await w.pass()).toEqual({ terminated: [], deletedNodeClaims: [], failed: [] });
    expect(await w.condition('fine')).toMatchObject({ status: 'True', reason: 'ConsistentStateFound' });
    expect(w.warnings()).toEqual([]);
    // A routine True is no decision line.
    expect(w.logged('nodeclaim consistency checked')).toEqual([]);

    await w.launched('recovers', { cpu: '1', memory: '8Gi', pods: '29' });
    await w.pass();
    expect(await w.condition('recovers')).toMatchObject({ status: 'False' });
    // The Node comes back with what was expected (its object made again by the kubelet).
    const providerID = (await w.cluster.node('recovers'))?.providerId;
    await w.cluster.deleteNode('recovers');
    w.cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'recovers' },
      spec: { providerID },
      status: { capacity: { cpu: '2', memory: '8Gi', pods: '29' } },
    });
    w.clock.advance(2 * 60_000);
    expect((await w.pass()).inconsistentNodeClaims).toBeUndefined();
    expect(await w.condition('recovers')).toMatchObject({ status: 'True', reason: 'ConsistentStateFound' });
    expect(w.logged('nodeclaim consistency checked').map((l) => [l['nodeClaim'], l['reason']])).toEqual([
      ['recovers', 'ConsistencyCheckFailed'],
      ['recovers', 'ConsistentStateFound'],
    ]);
  });

  it('leaves a NodeClaim that has not initialized, is being deleted, or has no single Node without issues', async () => {
    const w = world();
    await w.launched('young', { cpu: '1', memory: '1Gi', pods: '29' }, { initialized: false });
    await w.pass();
    expect(w.warnings()).toEqual([]);
    // Karpenter's check finds nothing wrong with it, so the condition is True.
    expect(await w.condition('young')).toMatchObject({ status: 'True' });
  });
});

describe('decideConsistency', () => {
  const claim = (
    o: Partial<ClusterNodeClaim> = {},
    conditions: readonly Omit<Condition, 'lastTransitionTime'>[] = [...READY, INITIALIZED],
  ): ClusterNodeClaim =>
    readNodeClaim('c', {
      requests: { cpu: 2000, memory: 4 * GiB, 'nvidia.com/gpu': 1 },
      status: {
        providerId: 'aws:///us-east-1a/i-1',
        nodeName: 'n',
        capacity: { cpu: 2000, memory: 8 * GiB, 'nvidia.com/gpu': 1, pods: 29 },
        conditions: conditions.map((c) => ({ ...c, lastTransitionTime: '2026-11-21T10:00:00Z' })),
      },
      ...o,
    });
  const node = (
    capacity: Record<string, number>,
    name = 'n',
    providerId = 'aws:///us-east-1a/i-1',
  ): NodeInfo => ({
    name,
    uid: `uid-${name}`,
    providerId,
    labels: {},
    annotations: {},
    finalizers: [],
    ready: true,
    deleting: false,
    allocatable: capacity,
    capacity,
    initialized: true,
  });

  it.each<[string, Record<string, number>, string[]]>([
    ['everything there', { cpu: 2000, memory: 8 * GiB, 'nvidia.com/gpu': 1 }, []],
    ['90% exactly is enough', { cpu: 1800, memory: 8 * GiB, 'nvidia.com/gpu': 1 }, []],
    [
      'a missing GPU and short cpu, in name order',
      { cpu: 1500, memory: 8 * GiB },
      [
        'expected 2 of resource cpu, but found 1500m (75.0% of expected)',
        'expected 1 of resource nvidia.com/gpu, but found 0 (0.0% of expected)',
      ],
    ],
    // pods is expected but not asked for: not checked, as Karpenter checks only what was asked.
    ['a resource not requested', { cpu: 2000, memory: 8 * GiB, 'nvidia.com/gpu': 1, pods: 1 }, []],
  ])('%s', (_name, capacity, issues) => {
    expect(nodeShapeIssues(claim(), node(capacity))).toEqual(issues);
  });

  it('finds no issues on a NodeClaim being deleted or not initialized', () => {
    const short = node({ cpu: 1 });
    expect(nodeShapeIssues(claim({ deleting: true }), short)).toEqual([]);
    expect(nodeShapeIssues(claim({}, [...READY]), short)).toEqual([]);
  });

  it('leaves alone a NodeClaim with no Node, or with two Nodes of its providerID', () => {
    const short = node({ cpu: 1 });
    expect(decideConsistency([claim()], [])).toEqual([]);
    expect(decideConsistency([claim()], [short, node({ cpu: 1 }, 'n2')])).toEqual([]);
    expect(decideConsistency([claim()], [short])).toEqual([
      expect.objectContaining({
        issues: expect.arrayContaining([expect.stringContaining('resource cpu')]),
        update: {
          type: 'ConsistentStateFound',
          status: 'False',
          reason: 'ConsistencyCheckFailed',
          message: 'Consistency Check Failed',
        },
      }),
    ]);
  });

  it('writes nothing when the condition already says what the check finds', () => {
    const consistent = {
      type: 'ConsistentStateFound',
      status: 'True',
      reason: 'ConsistentStateFound',
      message: '',
    } as const;
    const full = node({ cpu: 2000, memory: 8 * GiB, 'nvidia.com/gpu': 1 });
    expect(decideConsistency([claim({}, [...READY, INITIALIZED, consistent])], [full])).toEqual([]);
  });

  it("starts no write with less than 30 s left before the pass's deadline, and leaves the rest to the next pass", async () => {
    const w = world();
    for (const name of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) {
      await w.launched(name, { cpu: '2', memory: '8Gi', pods: '29' });
    }
    const consistent = async () => {
      const found = await Promise.all(['c1', 'c2', 'c3', 'c4', 'c5', 'c6'].map((n) => w.condition(n)));
      return found.filter((c) => c?.status === 'True').length;
    };
    expect((await w.pass(29_000)).failed).toEqual([]);
    expect(await consistent()).toBe(0);
    expect(w.logged('consistency check left for the next pass')).toMatchObject([{ nodeClaims: 6, of: 6 }]);
    // Each write takes 5 s: the four writers start one each, after which 25 s are left.
    const patch = w.cluster.patchNodeClaimStatus.bind(w.cluster);
    w.cluster.patchNodeClaimStatus = async (...args) => {
      w.clock.advance(5_000);
      return patch(...args);
    };
    await w.pass(45_000);
    expect(await consistent()).toBe(4);
    expect(w.logged('consistency check left for the next pass').at(-1)).toMatchObject({
      nodeClaims: 2,
      of: 6,
    });
    await w.pass(45_000);
    expect(await consistent()).toBe(6);
  });
});
