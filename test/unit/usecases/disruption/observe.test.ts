import { describe, expect, it } from 'vitest';
import { type InstanceType, Label } from '../../../../shared/core/index.ts';
import type { CandidateSet } from '../../../../shared/usecases/disruption/candidates.ts';
import type { DisruptionCandidate } from '../../../../shared/usecases/disruption/index.ts';
import { observeCluster, passFigures } from '../../../../shared/usecases/disruption/observe.ts';
import { type ClusterState, toSchedulingInput } from '../../../../shared/usecases/state/cluster-state.ts';
import { selectNodePools } from '../../../../shared/usecases/state/eligibility.ts';
import { instanceType, nodeClass, pod } from '../provisioning/builders.ts';
import {
  boundPod,
  candidate,
  clusterNode,
  condition,
  nodeClaim,
  pool,
  SECOND,
  schedulingInputOf,
  T0,
} from './builders.ts';

const GiB = 1024 ** 3;

describe('observeCluster: each NodePool as a disruption pass read it', () => {
  const m5 = instanceType('m5.xlarge', 4, 0.2);
  const labels = (capacityType: 'on-demand' | 'spot') => ({
    [Label.instanceType]: 'm5.xlarge',
    [Label.zone]: 'us-east-1a',
    [Label.capacityType]: capacityType,
  });
  const busy = Array.from({ length: 10 }, (_, i) => pod(`web-${i}`, 100));
  const started = [
    boundPod('fresh', { startedAtMs: T0 + 5 * SECOND }, { createdAtMs: T0 - 30 * SECOND }),
    boundPod('old', { startedAtMs: T0 - SECOND }, { createdAtMs: T0 - 60 * SECOND }),
  ];
  const nodes = [clusterNode('node-a', { pods: [...busy, ...started] }), clusterNode('node-b')];
  const claims = [
    nodeClaim('a', { labels: labels('on-demand') }),
    nodeClaim('b', { labels: labels('spot') }),
    // Launched, its Node not there yet.
    nodeClaim('c', { labels: labels('on-demand'), nodeName: null }),
  ];
  const pools = [
    pool(
      'default',
      {},
      {
        pool: {
          name: 'default',
          nodeClassName: 'default',
          requirements: [],
          limits: { cpu: 100_000, nodes: 20 },
        },
      },
    ),
    pool('batch'),
  ];
  const state: ClusterState = {
    pendingPods: [],
    nodes,
    nodeClaims: claims,
    nodePools: pools,
    nodeClasses: [nodeClass],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  const input = toSchedulingInput(
    state,
    selectNodePools(state.nodePools, state.nodeClasses),
    new Map([['default', [m5]]]),
    {
      nowMs: T0,
    },
  );
  const observed = observeCluster({
    nodes,
    claims,
    pools: new Map(pools.map((p) => [p.pool.name, p])),
    input,
    sinceMs: T0,
    untilMs: T0 + 10 * SECOND,
  });

  it('counts its Nodes, their capacity (cpu in cores) and its limits', () => {
    expect(observed.nodePools['default']).toMatchObject({
      nodes: 2,
      cpu: 8,
      memoryBytes: 32 * GiB,
      limits: { cpu: 100, nodes: 20 },
    });
    const none = { cpu: 0, memoryBytes: 0 };
    expect(observed.nodePools['batch']).toEqual({
      nodes: 0,
      cpu: 0,
      memoryBytes: 0,
      pricePerHour: 0,
      idlePricePerHour: 0,
      cpuUtilization: 0,
      memoryUtilization: 0,
      allocatable: none,
      podRequests: none,
      daemonRequests: none,
      systemOverhead: none,
    });
  });

  it('prices its NodeClaims at their offerings and counts the unrequested share as idle', () => {
    const p = observed.nodePools['default'];
    // a on-demand 0.2, b spot 0.2/3, c on-demand 0.2.
    expect(p?.pricePerHour).toBeCloseTo(0.2 + 0.2 / 3 + 0.2, 6);
    // a: 1.2 of 4 cores requested (its cpu share is the larger): 0.7 idle; b empty; c without a Node.
    expect(p?.idlePricePerHour).toBeCloseTo(0.2 * (1 - 1.2 / 4) + 0.2 / 3 + 0.2, 6);
    expect(p?.cpuUtilization).toBe(15);
    expect(p?.memoryUtilization).toBeCloseTo(((10 * 256) / (32 * 1024)) * 100, 2);
  });

  it('measures the startups of pods started in its window, from their creation', () => {
    expect(observed.podStartupSeconds).toEqual([35]);
    expect(observed.since).toBe(new Date(T0).toISOString());
    expect(observed.until).toBe(new Date(T0 + 10 * SECOND).toISOString());
    expect(observeCluster({ nodes, claims, pools: new Map(), input }).podStartupSeconds).toEqual([]);
    // A start after the window's end is the next window's.
    const early = { nodes, claims, pools: new Map(), input, sinceMs: T0 };
    expect(observeCluster({ ...early, untilMs: T0 + 4 * SECOND }).podStartupSeconds).toEqual([]);
    expect(
      observeCluster({ ...early, sinceMs: T0 + 4 * SECOND, untilMs: T0 + 5 * SECOND }).podStartupSeconds,
    ).toEqual([35]);
  });
});

describe('observeCluster: the cost of a NodePool whose EC2NodeClass is not Ready', () => {
  const m5 = instanceType('m5.xlarge', 4, 0.2);
  const offering = (type: string, zone = 'us-east-1a') => ({
    [Label.instanceType]: type,
    [Label.zone]: zone,
    [Label.capacityType]: 'on-demand',
  });
  // `blue` uses its own class, whose AMIs no longer resolve: the pass reads no instance types for
  // it, and prices its nodes from the offerings the `default` class lists (region-wide prices).
  const blueClass = {
    ...nodeClass,
    name: 'blue',
    status: {
      ...(nodeClass.status as NonNullable<typeof nodeClass.status>),
      conditions: [condition('Ready', 'False', T0, 'AMINotFound')],
    },
  };
  const bluePool = pool(
    'blue',
    {},
    {
      pool: { name: 'blue', nodeClassName: 'blue', requirements: [] },
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'blue' },
    },
  );
  const blueClaim = (name: string, labels: Record<string, string>) => ({
    ...nodeClaim(name, { pool: 'blue', labels }),
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'blue' },
  });
  const half = Array.from({ length: 20 }, (_, i) => pod(`batch-${i}`, 100));
  const nodes = [
    clusterNode('node-b1', { pool: 'blue', pods: half }),
    clusterNode('node-b2', { pool: 'blue' }),
    clusterNode('node-b3', { pool: 'blue' }),
    clusterNode('node-d1'),
  ];
  const claims = [
    blueClaim('b1', offering('m5.xlarge')),
    blueClaim('b2', offering('m5.xlarge')),
    // An offering no class the pass read lists: its price is unknown, not 0.
    blueClaim('b3', offering('x9.huge', 'us-east-1b')),
    // Created, not launched yet (no offering labels): it costs nothing.
    blueClaim('b4', {}),
    nodeClaim('d1', { labels: offering('m5.xlarge') }),
  ];
  const pools = [pool('default'), bluePool];
  const state: ClusterState = {
    pendingPods: [],
    nodes,
    nodeClaims: claims,
    nodePools: pools,
    nodeClasses: [nodeClass, blueClass],
    daemonSets: [],
    namespaceLabels: new Map(),
  };
  const selection = selectNodePools(state.nodePools, state.nodeClasses);
  const input = toSchedulingInput(state, selection, new Map([['default', [m5]]]), { nowMs: T0 });
  const observed = observeCluster({
    nodes,
    claims,
    pools: new Map(pools.map((p) => [p.pool.name, p])),
    input,
  });

  it('prices its nodes at their offerings all the same, and counts the unknown offering apart', () => {
    expect(selection.eligible.map((e) => e.pool.pool.name)).toEqual(['default']);
    const blue = observed.nodePools['blue'];
    // b1 and b2 at 0.2 each; b3 left out of the sum and said; b4 not launched.
    expect(blue?.pricePerHour).toBeCloseTo(0.4, 6);
    expect(blue).toMatchObject({
      nodes: 3,
      unpricedNodeClaims: 1,
      unpricedOfferings: ['x9.huge/us-east-1b/on-demand'],
    });
    // b1: 2 of 4 cores requested, half idle; b2 empty, all idle.
    expect(blue?.idlePricePerHour).toBeCloseTo(0.2 * 0.5 + 0.2, 6);
    const all = observed.nodePools['default'];
    expect(all).toMatchObject({ pricePerHour: 0.2, idlePricePerHour: 0.2 });
    expect(all).not.toHaveProperty('unpricedNodeClaims');
  });
});

describe('observeCluster: prices the catalog only assumes', () => {
  const m5 = instanceType('m5.xlarge', 4, 0.2);
  const assumedSpot = {
    ...m5,
    offerings: m5.offerings.map((o) => (o.capacityType === 'spot' ? { ...o, priceAssumed: true } : o)),
  };
  const labels = (capacityType: 'on-demand' | 'spot') => ({
    [Label.instanceType]: 'm5.xlarge',
    [Label.zone]: 'us-east-1a',
    [Label.capacityType]: capacityType,
  });
  const claims = [
    nodeClaim('s', { labels: labels('spot') }),
    nodeClaim('o', { labels: labels('on-demand') }),
  ];
  const pools = [pool('default')];
  const observe = (types: readonly InstanceType[]) =>
    observeCluster({
      nodes: [clusterNode('node-s'), clusterNode('node-o')],
      claims,
      pools: new Map(pools.map((p) => [p.pool.name, p])),
      input: schedulingInputOf(pools, types),
    }).nodePools['default'];

  it('counts the NodeClaims priced at an assumed price, and says nothing when none is', () => {
    const assumed = observe([assumedSpot]);
    expect(assumed?.pricePerHour).toBeCloseTo(0.2 + 0.2 / 3, 6);
    expect(assumed?.assumedPriceNodeClaims).toBe(1);
    const known = observe([m5]);
    expect(known?.pricePerHour).toBeCloseTo(0.2 + 0.2 / 3, 6);
    expect(known).not.toHaveProperty('assumedPriceNodeClaims');
  });
});

describe('passFigures: eligible, blocked and allowed', () => {
  const defaultPool = pool('default', { budgets: [{ nodes: '3' }] });
  const batchPool = pool('batch', { budgets: [{ nodes: '0', reasons: ['Drifted'] }, { nodes: '4' }] });
  const empty = candidate('e1', { nodePool: defaultPool });
  const guarded = candidate('w1', {
    nodePool: defaultPool,
    pods: [boundPod('db')],
    blockers: [{ pod: 'apps/db', kind: 'pdb', why: 'pdb apps/db prevents pod evictions' }],
  });
  const busy = candidate('w2', { nodePool: defaultPool, pods: [boundPod('web')] });
  const set: CandidateSet = {
    candidates: [empty, guarded, busy],
    excluded: [
      {
        nodeClaim: nodeClaim('x'),
        node: clusterNode('node-x'),
        kind: 'doNotDisrupt',
        why: 'node has karpenter.sh/do-not-disrupt',
      },
      {
        nodeClaim: nodeClaim('y'),
        node: clusterNode('node-y'),
        kind: 'nominated',
        why: 'node is nominated for pending pods',
      },
    ],
    counts: new Map([
      ['default', { nodes: 6, disrupting: 1 }],
      ['batch', { nodes: 2, disrupting: 0 }],
    ]),
    poolTotals: new Map(),
    spotFailedAtMs: new Map(),
  };
  const methods = [
    { reason: 'Empty' as const, shouldDisrupt: (c: DisruptionCandidate) => c.reschedulablePods.length === 0 },
    { reason: 'Underutilized' as const, shouldDisrupt: () => true },
  ];
  const figures = passFigures({
    set,
    methods,
    budgetBlocked: new Set(['default/Underutilized']),
    pools: new Map([
      ['default', defaultPool],
      ['batch', batchPool],
    ]),
    claims: [nodeClaim('e1'), nodeClaim('w1'), nodeClaim('new', { conditions: [condition('Launched')] })],
    nowMs: T0,
  });

  it('counts the nodes each reason’s methods would take', () => {
    expect(figures.eligible).toEqual({ Empty: 1, Drifted: 0, Underutilized: 3 });
  });

  it('counts each node left alone once, under its first why', () => {
    expect(figures.blockedBy).toEqual({
      doNotDisruptNode: 1,
      nominated: 1,
      notInitialized: 1,
      pdb: 1,
      budget: 2,
    });
  });

  it('reports what each NodePool’s budgets allow, by reason', () => {
    expect(figures.allowed).toEqual({
      default: { Empty: 2, Drifted: 2, Underutilized: 2 },
      batch: { Empty: 4, Drifted: 0, Underutilized: 4 },
    });
  });

  it('reports the nodes each NodePool has being disrupted, for those with any', () => {
    expect(figures.disrupting).toEqual({ default: 1 });
  });

  it('reports each budget before the nodes being disrupted count against it, as Karpenter’s allowed_disruptions', () => {
    // default's budgets allow 3 of its 6 nodes; 1 is being disrupted, which leaves the 2 above.
    expect(figures.budgetNodes).toEqual({
      default: { Empty: 3, Drifted: 3, Underutilized: 3 },
      batch: { Empty: 4, Drifted: 0, Underutilized: 4 },
    });
  });
});
