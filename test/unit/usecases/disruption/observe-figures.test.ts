import { describe, expect, it } from 'vitest';
import { observeCluster } from '../../../../shared/usecases/disruption/observe.ts';
import {
  nodeTotals,
  observeConditions,
  observeTerminations,
  steadyConditionStatus,
} from '../../../../shared/usecases/disruption/observe-figures.ts';
import { nodeClass, pod } from '../provisioning/builders.ts';
import {
  boundPod,
  clusterNode,
  condition,
  daemonPod,
  nodeClaim,
  pool,
  READY_CONDITIONS,
  SECOND,
  T0,
} from './builders.ts';

// The figures Karpenter keeps per node or per object, as a pass sums and tallies them: a
// NodePool's Nodes' allocatable, requests and overhead; conditions by type, status and reason;
// the longest terminations under way.

const GiB = 1024 ** 3;
const MINUTE = 60 * SECOND;

describe('nodeTotals: a NodePool’s Nodes summed as Karpenter’s per-node gauges', () => {
  const daemon = { ...daemonPod('agent'), containers: [{ name: 'a', requests: { cpu: 200, memory: GiB } }] };
  const nodes = [
    {
      ...clusterNode('n1', { pods: [pod('web', 1500), daemon] }),
      capacity: { cpu: 4000, memory: 16 * GiB + GiB, pods: 110 },
      createdAtMs: T0 - 10 * MINUTE,
    },
    { ...clusterNode('n2', { pods: [daemon] }), createdAtMs: T0 - 2 * MINUTE },
  ];

  it('sums allocatable, pod and DaemonSet requests and overhead, cpu in cores', () => {
    expect(nodeTotals(nodes, T0)).toEqual({
      allocatable: { cpu: 8, memoryBytes: 32 * GiB },
      // web 1.5 cores and 256 MiB, the agent 0.2 cores and 1 GiB on each node.
      podRequests: { cpu: 1.9, memoryBytes: 256 * 1024 ** 2 + 2 * GiB },
      daemonRequests: { cpu: 0.4, memoryBytes: 2 * GiB },
      // Capacity less allocatable: n1's 1 GiB; n2 reports no capacity of its own.
      systemOverhead: { cpu: 0, memoryBytes: GiB },
      oldestNodeSeconds: 600,
    });
  });

  it('has no age without a time to count to', () => {
    expect(nodeTotals(nodes, undefined)).not.toHaveProperty('oldestNodeSeconds');
    expect(nodeTotals([], T0)).toEqual({
      allocatable: { cpu: 0, memoryBytes: 0 },
      podRequests: { cpu: 0, memoryBytes: 0 },
      daemonRequests: { cpu: 0, memoryBytes: 0 },
      systemOverhead: { cpu: 0, memoryBytes: 0 },
    });
  });
});

describe('observeConditions: each kind’s conditions by type, status and reason', () => {
  const claims = [
    nodeClaim('a', { conditions: [...READY_CONDITIONS, condition('Consolidatable', 'True', T0 - MINUTE)] }),
    nodeClaim('b', {
      conditions: [...READY_CONDITIONS, condition('Consolidatable', 'True', T0 - 5 * MINUTE)],
    }),
    nodeClaim('c', {
      conditions: [condition('Launched', 'False', T0 - 30 * SECOND, 'LaunchFailed')],
    }),
  ];
  const nodes = [
    {
      ...clusterNode('n1'),
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionMs: T0 - MINUTE },
        { type: 'DiskPressure', status: 'True', lastTransitionMs: T0 - 20 * SECOND },
      ],
    },
  ];
  const observed = observeConditions({
    claims,
    nodes,
    pools: [
      pool('default', {}, { conditions: [condition('Ready', 'False', T0 - MINUTE, 'NodeClassNotReady')] }),
    ],
    nodeClasses: [nodeClass],
    nowMs: T0,
    sinceMs: T0 - 2 * MINUTE,
    untilMs: T0,
  });

  it('counts the objects in each state, the longest in it, and the transitions in the window', () => {
    expect(observed.nodeClaim).toEqual([
      // Two Consolidatable since 1 and 5 minutes: only the first took it within the window.
      {
        type: 'Consolidatable',
        status: 'True',
        reason: 'Consolidatable',
        objects: 2,
        longestSeconds: 300,
        transitions: 1,
      },
      expect.objectContaining({ type: 'Initialized', status: 'True', objects: 2, steady: true }),
      expect.objectContaining({ type: 'Launched', status: 'False', reason: 'LaunchFailed', objects: 1 }),
      expect.objectContaining({ type: 'Launched', status: 'True', objects: 2, steady: true }),
      expect.objectContaining({ type: 'Registered', status: 'True', objects: 2, steady: true }),
    ]);
    const failed = observed.nodeClaim.find((t) => t.status === 'False');
    expect(failed).toEqual({
      type: 'Launched',
      status: 'False',
      reason: 'LaunchFailed',
      objects: 1,
      longestSeconds: 30,
      transitions: 1,
    });
  });

  it('reads Nodes without a reason, and a pressure condition True as out of its steady state', () => {
    expect(observed.node).toEqual([
      { type: 'DiskPressure', status: 'True', objects: 1, longestSeconds: 20, transitions: 1 },
      { type: 'Ready', status: 'True', objects: 1, longestSeconds: 60, transitions: 1, steady: true },
    ]);
  });

  it('tallies the NodePools and EC2NodeClasses read', () => {
    expect(observed.nodePool).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'NodeClassNotReady',
        objects: 1,
        longestSeconds: 60,
        transitions: 1,
      },
    ]);
    expect(observed.ec2NodeClass.length).toBeGreaterThan(0);
    expect(observed.ec2NodeClass.every((t) => t.objects === 1)).toBe(true);
  });

  it('counts no transition without a window', () => {
    const windowless = observeConditions({
      claims,
      nodes,
      pools: [],
      nodeClasses: [],
      nowMs: T0,
      sinceMs: undefined,
      untilMs: T0,
    });
    expect(windowless.nodeClaim.every((t) => t.transitions === 0)).toBe(true);
  });

  it.each([
    ['Ready', 'True'],
    ['ValidationSucceeded', 'True'],
    ['Drifted', 'False'],
    ['Consolidatable', 'False'],
    ['MemoryPressure', 'False'],
    ['NodeRepairBlocked', 'False'],
  ])('takes %s’s steady state to be %s', (type, status) => {
    expect(steadyConditionStatus(type)).toBe(status);
  });
});

describe('observeTerminations: the longest terminations under way', () => {
  it('ages the NodeClaim and the Node deleted first', () => {
    const claims = [
      { ...nodeClaim('a', { deleting: true }), deletedAtMs: T0 - 90 * SECOND },
      { ...nodeClaim('b', { deleting: true }), deletedAtMs: T0 - 30 * SECOND },
      nodeClaim('c'),
    ];
    const nodes = [
      { ...clusterNode('n1', { deleting: true }), deletedAtMs: T0 - 45 * SECOND },
      clusterNode('n2'),
    ];
    expect(observeTerminations(claims, nodes, T0)).toEqual({ nodeClaimSeconds: 90, nodeSeconds: 45 });
  });

  it('is none when nothing terminates', () => {
    expect(observeTerminations([nodeClaim('c')], [clusterNode('n2')], T0)).toBeUndefined();
  });
});

describe('observeCluster: the figures it adds to each observation', () => {
  it('carries each NodePool’s Node totals, the conditions it read and the terminations under way', () => {
    const nodes = [
      { ...clusterNode('node-a', { pods: [boundPod('w')] }), createdAtMs: T0 - 3 * MINUTE },
      { ...clusterNode('node-b', { deleting: true }), deletedAtMs: T0 - 10 * SECOND },
    ];
    const observed = observeCluster({
      nodes,
      claims: [nodeClaim('a'), nodeClaim('b')],
      pools: new Map([['default', pool('default')]]),
      nodeClasses: [nodeClass],
      input: undefined,
      sinceMs: T0 - MINUTE,
      untilMs: T0,
      readAtMs: T0,
    });
    expect(observed.nodePools['default']).toMatchObject({
      allocatable: { cpu: 8, memoryBytes: 32 * GiB },
      oldestNodeSeconds: 180,
    });
    expect(observed.conditions?.nodeClaim.map((t) => [t.type, t.objects])).toEqual([
      ['Initialized', 2],
      ['Launched', 2],
      ['Registered', 2],
    ]);
    expect(observed.conditions?.ec2NodeClass.length).toBeGreaterThan(0);
    expect(observed.terminating).toEqual({ nodeSeconds: 10 });
  });
});
