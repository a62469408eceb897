import { describe, expect, it } from 'vitest';
import {
  type DisruptionBudget,
  Label,
  NodeClaimConditionType,
  NodePoolConditionType,
} from '../../../../shared/core/index.ts';
import {
  type ClusterNodeClaim,
  type ClusterNodePool,
  DEFAULT_NODEPOOL_DISRUPTION,
  type NodeInfo,
  toNodeInfo,
} from '../../../../shared/ports/cluster.ts';
import {
  decideRepair,
  IMPAIRED_INSTANCE_TOLERATION_MS,
  NodeHold,
  RepairHold,
  type RepairInput,
  type RepairStep,
  unhealthyThreshold,
} from '../../../../shared/usecases/node-repair/decide.ts';
import { COMMAND_ANNOTATION, encodeCommand } from '../../../../shared/usecases/state/command-record.ts';
import { clusterNodePool, condition } from '../../../fixtures/builders.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { clusterNode } from '../../../fixtures/nodes.ts';

// Node repair's decision as values: which conditions count and for how long, the 20% rule per
// NodePool, the disruption budgets for Unhealthy, the blocked state reported once, and instances
// EC2 reports impaired.

const NOW = Date.parse('2026-11-27T12:00:00Z');
const MIN = 60_000;
const ago = (ms: number) => NOW - ms;

interface NodeSpec {
  readonly conditions?: readonly { type: string; status: string; sinceMs?: number }[];
  readonly pool?: string;
  readonly deleting?: boolean;
  readonly createdAtMs?: number;
}

/** Node `name` of NodePool `spec.pool` as node repair reads it (no pods), Ready for 2 hours unless `spec.conditions`. */
function node(name: string, spec: NodeSpec = {}): NodeInfo {
  const conditions = spec.conditions ?? [{ type: 'Ready', status: 'True', sinceMs: ago(120 * MIN) }];
  return toNodeInfo(
    clusterNode(name, {
      providerId: `aws:///us-east-1a/i-${name}`,
      nodePoolName: spec.pool ?? 'default',
      labels: { [Label.nodePool]: spec.pool ?? 'default' },
      ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
      conditions: conditions.map((c) => ({
        type: c.type,
        status: c.status,
        ...(c.sinceMs === undefined ? {} : { lastTransitionMs: c.sinceMs }),
      })),
      deleting: spec.deleting ?? false,
      createdAtMs: spec.createdAtMs ?? ago(240 * MIN),
    }),
  );
}

function claimOf(n: NodeInfo, deleting = false): ClusterNodeClaim {
  return readNodeClaim(`claim-${n.name}`, {
    nodePoolName: n.labels[Label.nodePool] ?? 'default',
    deleting,
    status: { ...(n.providerId === undefined ? {} : { providerId: n.providerId }), conditions: [] },
  });
}

/** NodePool `name`, its NodeRepairBlocked condition `blocked` (for `reason`) when given. */
function pool(
  name = 'default',
  blocked?: 'True' | 'False',
  reason: string = RepairHold.unhealthyThreshold,
): ClusterNodePool {
  return clusterNodePool(name, {
    uid: `pool-${name}`,
    conditions:
      blocked === undefined
        ? []
        : [condition(NodePoolConditionType.nodeRepairBlocked, { status: blocked, reason })],
  });
}

const healthy = (name: string, p?: string) => node(name, p === undefined ? {} : { pool: p });
const unhealthy = (name: string, type: string, status: string, forMs: number, p?: string) =>
  node(name, {
    conditions: [{ type, status, sinceMs: ago(forMs) }],
    ...(p === undefined ? {} : { pool: p }),
  });

function decide(nodes: readonly NodeInfo[], extra: Partial<RepairInput> = {}) {
  return decideRepair({ nodes, claims: nodes.map((n) => claimOf(n)), pools: [pool()], nowMs: NOW, ...extra });
}

const repaired = (steps: readonly RepairStep[]) =>
  steps.flatMap((s) => (s.kind === 'repair' ? [s.node.name] : []));

/** Four healthy nodes and one with `condition`, so one unhealthy node is within the 20% rule. */
const poolOfFiveWith = (bad: NodeInfo) => [bad, ...['h1', 'h2', 'h3', 'h4'].map((n) => healthy(n))];

describe('decideRepair: conditions and tolerations', () => {
  it.each([
    ['Ready', 'False', 30],
    ['Ready', 'Unknown', 30],
    ['AcceleratedHardwareReady', 'False', 10],
    ['StorageReady', 'False', 30],
    ['NetworkingReady', 'False', 30],
    ['KernelReady', 'False', 30],
    ['ContainerRuntimeReady', 'False', 30],
  ])('%s=%s is tolerated %i minutes, then repaired', (type, status, minutes) => {
    const before = decide(poolOfFiveWith(unhealthy('bad', type, status, minutes * MIN - 1000)));
    expect(repaired(before.steps)).toEqual([]);
    expect(before.tolerating).toBe(1);
    const after = decide(poolOfFiveWith(unhealthy('bad', type, status, minutes * MIN)));
    expect(repaired(after.steps)).toEqual(['bad']);
    const step = after.steps.find((s) => s.kind === 'repair');
    expect(step).toMatchObject({
      kind: 'repair',
      claim: { name: 'claim-bad' },
      nodePool: 'default',
      cause: { source: 'condition', conditionType: type, status, tolerationMs: minutes * MIN },
      unhealthyForMs: minutes * MIN,
      health: { nodes: 5, unhealthy: 1, threshold: 1 },
    });
  });

  it.each([
    ['Ready', 'True'],
    ['AcceleratedHardwareReady', 'Unknown'],
    ['StorageReady', 'True'],
    ['MemoryPressure', 'True'],
    ['DiskPressure', 'True'],
  ])('%s=%s is no repair policy: never repaired', (type, status) => {
    const decided = decide(poolOfFiveWith(unhealthy('bad', type, status, 600 * MIN)));
    expect(decided.steps).toEqual([]);
  });

  it('takes the cause whose toleration ends first', () => {
    const bad = node('bad', {
      conditions: [
        { type: 'Ready', status: 'False', sinceMs: ago(20 * MIN) },
        { type: 'AcceleratedHardwareReady', status: 'False', sinceMs: ago(11 * MIN) },
      ],
    });
    const step = decide(poolOfFiveWith(bad)).steps[0];
    expect(step).toMatchObject({ kind: 'repair', cause: { conditionType: 'AcceleratedHardwareReady' } });
  });

  it('measures from the transition time as written, from the Node creation without one, and never repairs what cannot be timed', () => {
    const young = node('young', {
      conditions: [{ type: 'Ready', status: 'Unknown', sinceMs: ago(31 * MIN) }],
      createdAtMs: ago(5 * MIN),
    });
    expect(repaired(decide(poolOfFiveWith(young)).steps)).toEqual(['young']);
    const noTime = node('no-time', {
      conditions: [{ type: 'Ready', status: 'False' }],
      createdAtMs: ago(31 * MIN),
    });
    expect(repaired(decide(poolOfFiveWith(noTime)).steps)).toEqual(['no-time']);
    const untimed: NodeInfo = { ...node('untimed', { conditions: [{ type: 'Ready', status: 'False' }] }) };
    const { createdAtMs: _dropped, ...withoutCreation } = untimed;
    const decided = decide(poolOfFiveWith(withoutCreation));
    expect(decided.steps).toEqual([]);
    expect(decided.untimed).toEqual(['untimed']);
  });

  it('leaves nodes without a NodeClaim, and deleting ones, to others', () => {
    const bad = unhealthy('bad', 'Ready', 'False', 31 * MIN);
    const nodes = poolOfFiveWith(bad);
    expect(decideRepair({ nodes, claims: [], pools: [pool()], nowMs: NOW }).steps).toEqual([]);
    const claims = nodes.map((n) => claimOf(n, n.name === 'bad'));
    expect(decideRepair({ nodes, claims, pools: [pool()], nowMs: NOW }).steps).toEqual([]);
    const gone = poolOfFiveWith({ ...bad, deleting: true });
    expect(decide(gone).steps).toEqual([]);
  });
});

describe('decideRepair: the 20% rule', () => {
  it.each([
    [1, 1],
    [3, 1],
    [5, 1],
    [6, 2],
    [10, 2],
    [11, 3],
  ])('a pool of %i nodes may have %i unhealthy (rounded up)', (nodes, threshold) => {
    expect(unhealthyThreshold(nodes)).toBe(threshold);
  });

  it('repairs one unhealthy node of three (33%, within the rounded-up threshold)', () => {
    const nodes = [unhealthy('bad', 'Ready', 'False', 31 * MIN), healthy('h1'), healthy('h2')];
    expect(repaired(decide(nodes).steps)).toEqual(['bad']);
  });

  it('holds two unhealthy of three back, counting unhealthy nodes still tolerated, and reports it once', () => {
    const nodes = [
      unhealthy('bad', 'Ready', 'False', 31 * MIN),
      unhealthy('new', 'Ready', 'Unknown', 1 * MIN),
      healthy('h1'),
    ];
    const first = decide(nodes);
    expect(first.steps).toEqual([
      expect.objectContaining({
        kind: 'block',
        pool: expect.objectContaining({ uid: 'pool-default' }),
        health: { nodePool: 'default', nodes: 3, unhealthy: 2, threshold: 1 },
        held: [expect.objectContaining({ node: expect.objectContaining({ name: 'bad' }) })],
        by: RepairHold.unhealthyThreshold,
      }),
    ]);
    // The next pass sees the pool's condition: still blocked, nothing to report.
    expect(decide(nodes, { pools: [pool('default', 'True')] }).steps).toEqual([]);
  });

  it('resumes once the pool is healthy enough: unblock, then the repair', () => {
    const nodes = [unhealthy('bad', 'Ready', 'False', 31 * MIN), healthy('h1'), healthy('h2')];
    const decided = decide(nodes, { pools: [pool('default', 'True')] });
    expect(decided.steps.map((s) => s.kind)).toEqual(['unblock', 'repair']);
    // An unblocked pool with nothing blocked writes nothing.
    expect(decide([healthy('h1')], { pools: [pool('default', 'False')] }).steps).toEqual([]);
  });

  it('reports no blocked state while no repair is due, even over the threshold', () => {
    const nodes = [unhealthy('a', 'Ready', 'False', 5 * MIN), unhealthy('b', 'Ready', 'False', 5 * MIN)];
    expect(decide(nodes).steps).toEqual([]);
  });

  it('counts each NodePool on its own', () => {
    const nodes = [
      unhealthy('a-bad', 'Ready', 'False', 31 * MIN, 'a'),
      healthy('a1', 'a'),
      healthy('a2', 'a'),
      unhealthy('b-bad', 'Ready', 'False', 31 * MIN, 'b'),
      unhealthy('b-bad2', 'Ready', 'Unknown', 31 * MIN, 'b'),
    ];
    const decided = decide(nodes, { pools: [pool('a'), pool('b')] });
    expect(repaired(decided.steps)).toEqual(['a-bad']);
    expect(decided.steps.filter((s) => s.kind === 'block').map((s) => s.health.nodePool)).toEqual(['b']);
  });

  it('counts Nodes that could not be read as unhealthy, so they never let a repair through', () => {
    const nodes = [unhealthy('bad', 'Ready', 'False', 31 * MIN), healthy('h1'), healthy('h2')];
    const decided = decide(nodes, { unreadableNodes: 1 });
    expect(decided.steps).toEqual([
      expect.objectContaining({
        kind: 'block',
        health: { nodePool: 'default', nodes: 4, unhealthy: 2, threshold: 1 },
      }),
    ]);
  });
});

describe('decideRepair: impaired instances', () => {
  const impaired = (name: string, sinceMs?: number) => ({
    instanceId: `i-${name}`,
    checks: ['instanceStatus'],
    ...(sinceMs === undefined ? {} : { impairedSinceMs: sinceMs }),
  });

  it('repairs a node whose instance EC2 reports impaired past the toleration, Ready or not', () => {
    const nodes = poolOfFiveWith(healthy('bad'));
    const early = decide(nodes, { impaired: [impaired('bad', ago(IMPAIRED_INSTANCE_TOLERATION_MS - 1000))] });
    expect(repaired(early.steps)).toEqual([]);
    const due = decide(nodes, { impaired: [impaired('bad', ago(IMPAIRED_INSTANCE_TOLERATION_MS))] });
    expect(due.steps[0]).toMatchObject({
      kind: 'repair',
      node: { name: 'bad' },
      cause: { source: 'instanceStatus', instanceId: 'i-bad', checks: ['instanceStatus'] },
    });
  });

  it('counts impaired instances in the same 20% rule', () => {
    const nodes = [unhealthy('bad', 'Ready', 'False', 31 * MIN), healthy('h1'), healthy('h2')];
    const decided = decide(nodes, { impaired: [impaired('h1', ago(1 * MIN))] });
    expect(decided.steps.map((s) => s.kind)).toEqual(['block']);
  });

  it('counts an impaired report without a time, but never repairs on it', () => {
    const decided = decide(poolOfFiveWith(healthy('bad')), { impaired: [impaired('bad')] });
    expect(decided.steps).toEqual([]);
    expect(decided.untimed).toEqual(['bad']);
  });

  it('ignores instances of no Node of this cluster', () => {
    const decided = decide(poolOfFiveWith(healthy('bad')), {
      impaired: [impaired('elsewhere', ago(60 * MIN))],
    });
    expect(decided.steps).toEqual([]);
  });
});

describe('decideRepair: disruption budgets for Unhealthy (Karpenter v1.15)', () => {
  /** The node's NodeClaim, initialized (so it counts for its NodePool's budgets). */
  const initialized = (n: NodeInfo, extra: Partial<ClusterNodeClaim> = {}): ClusterNodeClaim => {
    const claim = claimOf(n);
    return {
      ...claim,
      status: { ...claim.status, conditions: [condition(NodeClaimConditionType.initialized)] },
      ...extra,
    };
  };
  const budgeted = (budgets: readonly DisruptionBudget[], blocked?: string): ClusterNodePool => ({
    ...pool('default', blocked === undefined ? undefined : 'True', blocked),
    disruption: { ...DEFAULT_NODEPOOL_DISRUPTION, budgets },
  });
  /** Ten nodes, two of them due for repair (`old` the longer): within the 20% rule. */
  const tenWithTwoDue = () => [
    unhealthy('old', 'Ready', 'False', 50 * MIN),
    unhealthy('new', 'Ready', 'Unknown', 31 * MIN),
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7', 'h8'].map((n) => healthy(n)),
  ];
  const decideBudgeted = (
    budgets: readonly DisruptionBudget[],
    extra: Partial<RepairInput> = {},
    blocked?: string,
  ) => {
    const nodes = extra.nodes ?? tenWithTwoDue();
    return decideRepair({
      nodes,
      claims: nodes.map((n) => initialized(n)),
      pools: [budgeted(budgets, blocked)],
      nowMs: NOW,
      ...extra,
    });
  };
  const held = (steps: readonly RepairStep[]) =>
    steps.flatMap((s) => (s.kind === 'block' ? s.held.map((t) => t.node.name) : []));

  it('repairs as many as the default 10% allows, longest unhealthy first, and holds the rest back once', () => {
    const decided = decideBudgeted([{ nodes: '10%' }]);
    expect(repaired(decided.steps)).toEqual(['old']);
    expect(decided.steps.at(-1)).toMatchObject({
      kind: 'block',
      by: RepairHold.budget,
      held: [expect.objectContaining({ node: expect.objectContaining({ name: 'new' }) })],
      // Nodes that are not Ready are what repair acts on: they use none of the Unhealthy budget.
      budget: { allowed: 1, limitedBy: 0, counts: { nodes: 10, disrupting: 0 } },
    });
    // The next pass: `old` is being deleted and uses the one disruption; already reported.
    const nodes = tenWithTwoDue();
    const claims = nodes.map((n) => initialized(n, n.name === 'old' ? { deleting: true } : {}));
    expect(decideBudgeted([{ nodes: '10%' }], { nodes, claims }, RepairHold.budget).steps).toEqual([]);
    // `old` gone and replaced: the pool resumes and repairs `new`.
    const after = [...tenWithTwoDue().filter((n) => n.name !== 'old'), healthy('h9')];
    const resumed = decideBudgeted([{ nodes: '10%' }], { nodes: after }, RepairHold.budget);
    expect(resumed.steps.map((s) => s.kind)).toEqual(['unblock', 'repair']);
    expect(repaired(resumed.steps)).toEqual(['new']);
  });

  it.each([
    ['no reasons', [{ nodes: '0' }], []],
    ['Unhealthy only', [{ nodes: '0', reasons: ['Unhealthy'] }], []],
    [
      'the three other reasons only',
      [{ nodes: '0', reasons: ['Underutilized', 'Empty', 'Drifted'] }],
      ['old', 'new'],
    ],
    [
      'the smallest of those that apply',
      [{ nodes: '5' }, { nodes: '1', reasons: ['Drifted', 'Unhealthy'] }],
      ['old'],
    ],
    [
      'a scheduled window that is not open',
      [{ nodes: '0', schedule: '0 0 * * *', duration: '1h' }],
      ['old', 'new'],
    ],
  ] as const)('a budget listing %s', (_, budgets, expected) => {
    const decided = decideBudgeted(budgets);
    expect(repaired(decided.steps)).toEqual(expected);
    expect(held(decided.steps)).toEqual(
      ['old', 'new'].filter((n) => !(expected as readonly string[]).includes(n)),
    );
  });

  it('repairs a node that never initialized whatever the budgets: it counts for none', () => {
    const nodes = tenWithTwoDue();
    const claims = nodes.map((n) => (n.name === 'new' ? claimOf(n) : initialized(n)));
    const decided = decideBudgeted([{ nodes: '0' }], { nodes, claims });
    expect(repaired(decided.steps)).toEqual(['new']);
    expect(held(decided.steps)).toEqual(['old']);
  });

  it('counts a NodeClaim in a disruption command, and unreadable Nodes, as being disrupted', () => {
    const nodes = tenWithTwoDue();
    const record = encodeCommand({
      id: 'cmd-1',
      method: 'single-node',
      reason: 'Underutilized',
      candidates: ['claim-h1'],
      replacements: [],
      startedAt: new Date(NOW).toISOString(),
    });
    const claims = nodes.map((n) =>
      initialized(n, n.name === 'h1' ? { annotations: { [COMMAND_ANNOTATION]: record } } : {}),
    );
    expect(held(decideBudgeted([{ nodes: '1' }], { nodes, claims }).steps)).toEqual(['old', 'new']);
    // An unreadable Node: 11 nodes may have 3 unhealthy, but it may be using the one disruption.
    const unreadable = decideBudgeted([{ nodes: '1' }], { unreadableNodes: 1 });
    expect(unreadable.steps).toEqual([
      expect.objectContaining({
        kind: 'block',
        by: RepairHold.budget,
        budget: expect.objectContaining({ allowed: 0 }),
      }),
    ]);
  });

  it.each([
    ['of the pool', [{ nodePool: 'default' }], 0],
    ['of no known pool (every pool counts it)', [{}], 0],
    ['of another pool', [{ nodePool: 'other' }], 1],
    ['made outside every NodePool (no pool counts it)', [{ standalone: true }], 1],
  ] as const)('counts an unreadable NodeClaim %s as being disrupted', (_, unreadableClaims, allowed) => {
    const decided = decideBudgeted([{ nodes: '1' }], { unreadableClaims });
    expect(repaired(decided.steps)).toEqual(allowed === 0 ? [] : ['old']);
    expect(decided.steps.find((s) => s.kind === 'block')).toMatchObject({
      budget: { allowed, counts: { nodes: 10, disrupting: 1 - allowed } },
    });
  });

  it('never repairs a node whose NodePool is not read, whatever the budgets: held, naming why', () => {
    const nodes = tenWithTwoDue();
    const claims = nodes.map((n) => initialized(n));
    const gone = decideRepair({ nodes, claims, pools: [], nowMs: NOW });
    expect(gone.steps).toEqual([
      expect.objectContaining({ kind: 'hold', nodePool: 'default', by: NodeHold.nodePoolNotFound }),
    ]);
    expect(gone.steps[0]?.kind === 'hold' && gone.steps[0].held.map((t) => t.node.name)).toEqual([
      'old',
      'new',
    ]);
    const unread = decideRepair({ nodes, claims, pools: [], unreadablePools: 1, nowMs: NOW });
    expect(unread.steps).toEqual([
      expect.objectContaining({ kind: 'hold', by: NodeHold.nodePoolUnreadable }),
    ]);
  });

  it('holds a node annotated karpenter.sh/do-not-repair "true" on its Node or NodeClaim, using no budget', () => {
    const nodes = tenWithTwoDue().map((n) =>
      n.name === 'old' ? { ...n, annotations: { 'karpenter.sh/do-not-repair': 'true' } } : n,
    );
    const onNode = decideBudgeted([{ nodes: '1' }], { nodes });
    expect(onNode.steps.map((s) => s.kind)).toEqual(['hold', 'repair']);
    expect(onNode.steps[0]).toMatchObject({ by: NodeHold.doNotRepair, held: [{ node: { name: 'old' } }] });
    expect(repaired(onNode.steps)).toEqual(['new']);
    const plain = tenWithTwoDue();
    const claims = plain.map((n) =>
      initialized(n, n.name === 'new' ? { annotations: { 'karpenter.sh/do-not-repair': 'true' } } : {}),
    );
    const onClaim = decideBudgeted([{ nodes: '1' }], { nodes: plain, claims });
    expect(repaired(onClaim.steps)).toEqual(['old']);
    expect(onClaim.steps.find((s) => s.kind === 'hold')).toMatchObject({ held: [{ node: { name: 'new' } }] });
  });

  it('reports the 20% rule over a budget hold: the reason changes, so the state is reported again', () => {
    const nodes = [
      ...tenWithTwoDue().filter((n) => n.name !== 'h1'),
      unhealthy('third', 'Ready', 'False', 40 * MIN),
    ];
    const decided = decideBudgeted([{ nodes: '1' }], { nodes }, RepairHold.budget);
    expect(decided.steps).toEqual([
      expect.objectContaining({ kind: 'block', by: RepairHold.unhealthyThreshold, held: expect.any(Array) }),
    ]);
  });
});

describe('decideRepair: a standalone NodeClaim (in no NodePool)', () => {
  /** A Node with no NodePool label, of a standalone NodeClaim. */
  const standaloneNode = (name: string, forMs?: number, annotations: Record<string, string> = {}) => {
    const n = toNodeInfo(
      clusterNode(name, {
        providerId: `aws:///us-east-1a/i-${name}`,
        ready: forMs === undefined,
        conditions: [
          forMs === undefined
            ? { type: 'Ready', status: 'True', lastTransitionMs: ago(120 * MIN) }
            : { type: 'Ready', status: 'False', lastTransitionMs: ago(forMs) },
        ],
        createdAtMs: ago(240 * MIN),
      }),
    );
    return { ...n, annotations: { ...n.annotations, ...annotations } };
  };
  const standaloneClaim = (n: NodeInfo): ClusterNodeClaim => {
    const { nodePoolName: _, ...claim } = readNodeClaim(`claim-${n.name}`, {
      status: { ...(n.providerId === undefined ? {} : { providerId: n.providerId }), conditions: [] },
    });
    return claim;
  };
  const decideWith = (nodes: readonly NodeInfo[], standalone: readonly NodeInfo[]) =>
    decideRepair({
      nodes: [...nodes, ...standalone],
      claims: [...nodes.map((n) => claimOf(n)), ...standalone.map(standaloneClaim)],
      pools: [pool()],
      nowMs: NOW,
    });

  it("is repaired past its toleration while at most 20% of the cluster's nodes are unhealthy, with no budget", () => {
    const four = ['h1', 'h2', 'h3', 'h4'].map((n) => healthy(n));
    const decided = decideWith(four, [standaloneNode('by-hand', 30 * MIN)]);
    expect(repaired(decided.steps)).toEqual(['by-hand']);
    const step = decided.steps.find((s) => s.kind === 'repair');
    expect(step).not.toHaveProperty('pool');
    expect(step).toMatchObject({ health: { nodes: 5, unhealthy: 1, threshold: 1 } });
    expect(step?.health).not.toHaveProperty('nodePool');
  });

  it("is held back while more than 20% of the cluster's nodes are unhealthy, counting every NodePool's", () => {
    const nodes = [unhealthy('p1', 'Ready', 'False', 5 * MIN), ...['h1', 'h2', 'h3'].map((n) => healthy(n))];
    const decided = decideWith(nodes, [standaloneNode('by-hand', 30 * MIN)]);
    expect(repaired(decided.steps)).toEqual([]);
    expect(decided.steps).toContainEqual(
      expect.objectContaining({
        kind: 'hold',
        by: NodeHold.clusterUnhealthy,
        health: { nodes: 5, unhealthy: 2, threshold: 1 },
        held: [expect.objectContaining({ node: expect.objectContaining({ name: 'by-hand' }) })],
      }),
    );
  });

  it('is held back by karpenter.sh/do-not-repair, and a healthy one is left alone', () => {
    const four = ['h1', 'h2', 'h3', 'h4'].map((n) => healthy(n));
    const decided = decideWith(four, [
      standaloneNode('vetoed', 30 * MIN, { 'karpenter.sh/do-not-repair': 'true' }),
      standaloneNode('fine'),
    ]);
    expect(repaired(decided.steps)).toEqual([]);
    expect(decided.steps).toEqual([expect.objectContaining({ kind: 'hold', by: NodeHold.doNotRepair })]);
  });
});
