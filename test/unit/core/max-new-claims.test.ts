import { describe, expect, it } from 'vitest';
import { solve } from '../../../shared/core/index.ts';
import { catalogInstanceTypes, node, nodePool, planCost, pods, solveInput } from './builders.ts';

// SolveOptions.maxNewNodeClaims: consolidation's re-plan of a node's pods onto one new node, as
// Karpenter's scheduler fills one NodeClaim while any instance type still holds its pods.

const C6A = catalogInstanceTypes({ filter: (t) => t.family === 'c6a', capacityTypes: ['on-demand'] });
const fourPods = () => pods(4, () => ({ cpu: '1', memory: '2Gi' }));

describe('at most one new NodeClaim', () => {
  it('puts the pods the cheapest plan spreads over two nodes onto one that holds them all', () => {
    const cheapest = solve(solveInput({ pods: fourPods(), types: C6A }));
    expect(cheapest.nodeClaims.map((c) => c.instanceTypes[0]?.name).sort()).toEqual([
      'c6a.large',
      'c6a.xlarge',
    ]);
    expect(planCost(cheapest)).toBeCloseTo(0.2295, 4);

    const one = solve(solveInput({ pods: fourPods(), types: C6A, options: { maxNewNodeClaims: 1 } }));
    expect(one.unschedulable).toEqual([]);
    expect(one.nodeClaims).toHaveLength(1);
    expect(one.nodeClaims[0]?.pods).toHaveLength(4);
    // The cheapest c6a with room for four pods of 1 cpu next to the kubelet's reservation.
    expect(one.nodeClaims[0]?.instanceTypes[0]?.name).toBe('c6a.2xlarge');
    expect(planCost(one)).toBeCloseTo(0.306, 4);
  });

  it('fills room on existing nodes first', () => {
    const existing = node({ name: 'n1', cpu: '2500m', memory: '8Gi', nodePoolName: 'default' });
    const result = solve(
      solveInput({ pods: fourPods(), types: C6A, nodes: [existing], options: { maxNewNodeClaims: 1 } }),
    );
    expect(result.placements.filter((p) => p.kind === 'existingNode')).toHaveLength(2);
    expect(result.nodeClaims).toHaveLength(1);
    expect(result.nodeClaims[0]?.pods).toHaveLength(2);
  });

  it('leaves unschedulable, with the reason, the pods no single node can hold besides the others', () => {
    // 200 pods of 1 cpu: more than the largest c6a (192 vCPUs) holds.
    const many = pods(200, () => ({ cpu: '1', memory: '1Gi' }));
    const result = solve(solveInput({ pods: many, types: C6A, options: { maxNewNodeClaims: 1 } }));
    expect(result.nodeClaims).toHaveLength(1);
    expect(result.unschedulable.length).toBeGreaterThan(0);
    expect(result.nodeClaims[0]?.pods.length).toBe(200 - result.unschedulable.length);
    expect(result.unschedulable[0]?.message).toContain('no room on the 1 new NodeClaim allowed');
  });

  it('respects the NodePool: a pod its requirements exclude is not put on the one node', () => {
    const arm = solve(
      solveInput({
        pods: fourPods(),
        types: C6A,
        nodePools: [
          nodePool({ requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }] }),
        ],
        options: { maxNewNodeClaims: 1 },
      }),
    );
    expect(arm.nodeClaims).toEqual([]);
    expect(arm.unschedulable).toHaveLength(4);
  });
});
