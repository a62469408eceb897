import { describe, expect, it } from 'vitest';
import { Label, parseResourceList, type SolveInput, solve } from '../../../shared/core/index.ts';
import { daemonSet, node, pod, solveInput } from './builders.ts';

// SolveOptions.existingNodeScoring and queueOrder: which existing node a pod goes to when several
// can take it, as kube-scheduler's NodeResourcesFit strategies rank them, and in which order the
// pods come.

const nodes = () => [
  node({
    name: 'a-half',
    cpu: '4',
    memory: '16Gi',
    boundPods: [pod({ name: 'x', cpu: '2', memory: '8Gi' })],
  }),
  node({ name: 'b-empty', cpu: '4', memory: '16Gi' }),
  node({
    name: 'c-most',
    cpu: '4',
    memory: '16Gi',
    boundPods: [pod({ name: 'y', cpu: '3', memory: '12Gi' })],
  }),
];

function placedOn(options: SolveInput['options'], pods = [pod({ name: 'p', cpu: '500m', memory: '1Gi' })]) {
  const result = solve(solveInput({ pods, nodes: nodes(), ...(options === undefined ? {} : { options }) }));
  expect(result.nodeClaims).toEqual([]);
  return Object.fromEntries(
    result.placements.map((p) => [p.pod.name, p.kind === 'existingNode' ? p.nodeName : p.kind]),
  );
}

describe('the existing node a pod goes to', () => {
  it('is the first that can take it by default (initialized nodes, then by name)', () => {
    expect(placedOn(undefined)).toEqual({ p: 'a-half' });
  });

  it('is the one with the most room left under LeastAllocated', () => {
    expect(placedOn({ existingNodeScoring: 'LeastAllocated' })).toEqual({ p: 'b-empty' });
  });

  it('is the fullest that still fits under MostAllocated', () => {
    expect(placedOn({ existingNodeScoring: 'MostAllocated' })).toEqual({ p: 'c-most' });
    // A pod the fullest node cannot hold goes to the next.
    const big = [pod({ name: 'big', cpu: '1500m', memory: '1Gi' })];
    expect(placedOn({ existingNodeScoring: 'MostAllocated' }, big)).toEqual({ big: 'a-half' });
  });

  it('spreads pods one after another under LeastAllocated, each scored against the room left', () => {
    const three = ['p1', 'p2', 'p3'].map((name) => pod({ name, cpu: '1', memory: '4Gi' }));
    // b-empty first (4 free), then b-empty again (3 free against a-half's 2), then a tie at 2
    // free between a-half and b-empty goes to the first in order.
    expect(placedOn({ existingNodeScoring: 'LeastAllocated' }, three)).toEqual({
      p1: 'b-empty',
      p2: 'b-empty',
      p3: 'a-half',
    });
  });
});

describe("what kube-scheduler's score counts beyond the requests planned", () => {
  it('counts a pod without requests as 100m of cpu and 200Mi of memory', () => {
    // Ten such pods on a-bare score as 1 CPU and 2000Mi: after a 500m / 1Gi pod it keeps 62% of
    // its cpu and 81% of its memory (71), b-light 67% and 87% (77). Counted as nothing, a-bare
    // would score 90.
    const bare = Array.from({ length: 10 }, (_, i) => pod({ name: `bare-${i}` }));
    const result = solve(
      solveInput({
        pods: [pod({ name: 'p', cpu: '500m', memory: '1Gi' })],
        nodes: [
          node({ name: 'a-bare', cpu: '4', memory: '16Gi', boundPods: bare }),
          node({
            name: 'b-light',
            cpu: '4',
            memory: '16Gi',
            boundPods: [pod({ cpu: '800m', memory: '1Gi' })],
          }),
        ],
        options: { existingNodeScoring: 'LeastAllocated' },
      }),
    );
    expect(result.placements).toEqual([
      expect.objectContaining({ kind: 'existingNode', nodeName: 'b-light' }),
    ]);
  });

  it("counts an in-flight NodeClaim's DaemonSet pods in its allocatable, as the node will have them", () => {
    // A DaemonSet of 1 CPU. The node: 900m of pods and the DaemonSet's 1 CPU; with a 500m pod, 40%
    // of its cpu left. The launched claim: 4 CPUs, 1 CPU of pods and the DaemonSet's; with the pod
    // 37% left, though 50% of the 3 CPUs the DaemonSet leaves to pods. Memory alike on both.
    const result = solve(
      solveInput({
        pods: [pod({ name: 'p', cpu: '500m', memory: '1Gi' })],
        daemonSets: [daemonSet({ name: 'agent', cpu: '1', memory: '0' })],
        nodes: [
          node({ name: 'n', cpu: '4', memory: '16Gi', boundPods: [pod({ cpu: '900m', memory: '1Gi' })] }),
        ],
        nodeClaims: [
          {
            name: 'claim-1',
            nodePoolName: 'default',
            requirements: [],
            instanceTypeNames: ['m5.xlarge'],
            labels: { [Label.instanceType]: 'm5.xlarge', [Label.hostname]: 'claim-1' },
            allocatable: parseResourceList(
              { cpu: '4', memory: '16Gi', pods: '110' },
              { object: 'nodeClaim "claim-1"', field: 'status.allocatable' },
            ),
            pods: [pod({ name: 'q', cpu: '1', memory: '1Gi' })],
          },
        ],
        options: { existingNodeScoring: 'LeastAllocated' },
      }),
    );
    expect(result.placements).toEqual([expect.objectContaining({ kind: 'existingNode', nodeName: 'n' })]);
  });
});

describe('scoring over many existing nodes', () => {
  it('finds the best node past blocks of full ones, and an in-flight NodeClaim as one of them', () => {
    // 150 nodes, more than two blocks of the headroom index: full ones, then half-full ones, then
    // the emptiest last by name.
    const many = Array.from({ length: 150 }, (_, i) => {
      const name = `n-${String(i).padStart(3, '0')}`;
      const used = i < 70 ? '4' : i < 149 ? '2' : '1';
      return node({
        name,
        cpu: '4',
        memory: '16Gi',
        boundPods: [pod({ name: `${name}-x`, cpu: used, memory: '1Gi' })],
      });
    });
    const solved = (nodeClaims: SolveInput['nodeClaims']) =>
      solve(
        solveInput({
          pods: [pod({ name: 'p', cpu: '500m', memory: '1Gi' })],
          nodes: many,
          nodeClaims,
          options: { existingNodeScoring: 'LeastAllocated' },
        }),
      ).placements;
    expect(solved(undefined)).toEqual([expect.objectContaining({ kind: 'existingNode', nodeName: 'n-149' })]);
    // An empty in-flight NodeClaim of a type larger still has more room.
    const inFlight = [
      {
        name: 'claim-1',
        nodePoolName: 'default',
        requirements: [],
        instanceTypeNames: ['m5.4xlarge'],
        pods: [],
      },
    ];
    expect(solved(inFlight)).toEqual([
      expect.objectContaining({ kind: 'inFlightNodeClaim', nodeClaimName: 'claim-1' }),
    ]);
  });
});

describe('the order pods are placed in', () => {
  // One node with room for 3 CPUs: placed largest first, the 3-CPU pod takes it all; smallest
  // first, the two small pods take a CPU of it and leave the large one without room.
  const one = () => [
    node({ name: 'n', cpu: '4', memory: '16Gi', boundPods: [pod({ name: 'x', cpu: '1', memory: '1Gi' })] }),
  ];
  const queue = () => [
    pod({ name: 'small-a', cpu: '500m', memory: '1Gi' }),
    pod({ name: 'large', cpu: '3', memory: '1Gi' }),
    pod({ name: 'small-b', cpu: '500m', memory: '1Gi' }),
  ];
  const unplaced = (queueOrder: 'largestFirst' | 'smallestFirst') =>
    solve(
      solveInput({
        pods: queue(),
        nodes: one(),
        nodePools: [],
        options: { queueOrder, maxNewNodeClaims: 0 },
      }),
    ).unschedulable.map((u) => u.pod.name);

  it('is largest first by default, as Karpenter queues them', () => {
    expect(unplaced('largestFirst')).toEqual(['small-a', 'small-b']);
  });

  it('can be smallest first', () => {
    expect(unplaced('smallestFirst')).toEqual(['large']);
  });
});
