import { describe, expect, it } from 'vitest';
import { Label, type NodePool, planStaticNodeClaim, solve } from '../../../shared/core/index.ts';
import { COST_KEY, RemainingLimits } from '../../../shared/core/scheduling/cost-limits.ts';
import { fakeInstanceType, node, nodePool, pod, pods, solveInput } from './builders.ts';

// Dollar limits in the solve: a NodePool's own (flotilla.io/max-cost-per-hour) and the cluster's
// (SolveOptions.maxCostPerHour), counted at the highest price a planned claim may launch at and at
// the running offering's price for nodes that exist.

const TYPES = [
  fakeInstanceType({
    name: 'm.large',
    cpu: 2,
    memoryGiB: 8,
    price: 0.1,
    capacityTypes: ['on-demand', 'spot'],
  }),
  fakeInstanceType({
    name: 'm.xlarge',
    cpu: 4,
    memoryGiB: 16,
    price: 0.2,
    capacityTypes: ['on-demand', 'spot'],
  }),
];

const limited = (usdPerHour: number, o: Parameters<typeof nodePool>[0] = {}): NodePool => ({
  ...nodePool(o),
  costLimit: { usdPerHour },
});

/** The most a plan may cost: every claim at the priciest offering of its priciest candidate. */
function worstCase(result: ReturnType<typeof solve>): number {
  return result.nodeClaims.reduce(
    (sum, c) => sum + Math.max(...c.instanceTypes.map((t) => (t.name === 'm.xlarge' ? 0.2 : 0.1))),
    0,
  );
}

describe('a NodePool dollar limit', () => {
  it('launches no more than the limit allows, counted at the priciest offering, and names the limit', () => {
    // Spot is cheaper, but the fleet may launch on-demand: each m.large counts at $0.10/h.
    const result = solve(
      solveInput({
        types: TYPES,
        nodePools: [limited(0.3)],
        pods: pods(8, () => ({ cpu: '1500m', labels: { app: 'x' } })),
      }),
    );
    expect(worstCase(result)).toBeLessThanOrEqual(0.3 + 1e-9);
    expect(result.nodeClaims.length).toBeGreaterThan(0);
    expect(result.unschedulable.length).toBeGreaterThan(0);
    expect(result.unschedulable[0]?.message).toMatch(
      /^nodePool default: dollar limit \$0\.3000\/h \(the NodePool annotation flotilla\.io\/max-cost-per-hour\) leaves room for no instance type that fits \(remaining \$0\.\d{4}\/h; the cheapest that fits may launch at up to \$0\.1000\/h\)$/,
    );
  });

  it('counts existing nodes at their offering price, from the NodeClaim labels when there are some', () => {
    const existing = {
      ...node({ name: 'n1', cpu: '4', memory: '16Gi', nodePoolName: 'default', instanceType: 'm.xlarge' }),
      pods: [pod({ cpu: '3900m' })],
      labels: {
        ...node({ name: 'n1', cpu: '4', memory: '16Gi', nodePoolName: 'default' }).labels,
        // What the Node says (it may come from the cluster summary): cheaper than it is.
        [Label.instanceType]: 'm.large',
        [Label.capacityType]: 'spot',
      },
      claimLabels: {
        [Label.instanceType]: 'm.xlarge',
        [Label.zone]: 'us-east-1a',
        [Label.capacityType]: 'on-demand',
      },
    };
    const input = (limit: number) =>
      solveInput({ types: TYPES, nodePools: [limited(limit)], nodes: [existing], pods: [pod({ cpu: '1' })] });
    // $0.20 spent by the node: $0.25 leaves room for no m.large at up to $0.10.
    expect(solve(input(0.25)).nodeClaims).toHaveLength(0);
    expect(solve(input(0.3)).nodeClaims).toHaveLength(1);
  });

  it('counts a NodeClaim on its way at the priciest offering of its candidates until it launches', () => {
    const inFlight = {
      name: 'c1',
      nodePoolName: 'default',
      requirements: [],
      instanceTypeNames: ['m.large', 'm.xlarge'],
      pods: [],
    };
    const input = (limit: number) =>
      solveInput({
        types: TYPES,
        nodePools: [
          limited(limit, { requirements: [{ key: Label.capacityType, operator: 'In', values: ['spot'] }] }),
        ],
        nodeClaims: [inFlight],
        pods: [pod({ cpu: '7' }), pod({ cpu: '3' })],
      });
    // $0.20 reserved by c1 (m.xlarge on-demand): none of the limit's $0.21 is left for another.
    expect(solve(input(0.21)).nodeClaims).toHaveLength(0);
    expect(solve(input(0.3)).nodeClaims.length).toBeGreaterThan(0);
  });

  it('refuses to launch when a node it counts has no known price, and says which', () => {
    const unknown = {
      ...node({ name: 'odd', cpu: '4', memory: '16Gi', nodePoolName: 'default', instanceType: 'x.retired' }),
      pods: [pod({ cpu: '3900m' })],
      claimLabels: {
        [Label.instanceType]: 'x.retired',
        [Label.zone]: 'us-east-1a',
        [Label.capacityType]: 'on-demand',
      },
    };
    const result = solve(
      solveInput({ types: TYPES, nodePools: [limited(100)], nodes: [unknown], pods: [pod({ cpu: '1' })] }),
    );
    expect(result.nodeClaims).toHaveLength(0);
    expect(result.unschedulable[0]?.message).toBe(
      'nodePool default: dollar limit cannot be judged: no price is known for node odd',
    );
  });

  it('counts a Node without a NodeClaim at the highest price its pool offers, whatever its labels say', () => {
    // Its labels (perhaps the cluster summary's) say spot m.large; no NodeClaim backs them.
    const unclaimed = {
      ...node({ name: 'bare', cpu: '2', memory: '8Gi', nodePoolName: 'default', instanceType: 'm.large' }),
      labels: { ...node({ name: 'bare', cpu: '2', memory: '8Gi' }).labels, [Label.capacityType]: 'spot' },
      pods: [pod({ cpu: '1900m' })],
    };
    const input = (limit: number) =>
      solveInput({
        types: TYPES,
        nodePools: [limited(limit)],
        nodes: [unclaimed],
        pods: [pod({ cpu: '1' })],
      });
    // At $0.20 (m.xlarge on-demand), $0.25 leaves no room for an m.large at up to $0.10.
    expect(solve(input(0.25)).nodeClaims).toHaveLength(0);
    expect(solve(input(0.3)).nodeClaims).toHaveLength(1);
  });

  it('launches nothing for a pool whose annotation cannot be read, and says why', () => {
    const pool: NodePool = {
      ...nodePool(),
      costLimit: { problem: 'annotation flotilla.io/max-cost-per-hour "x" is not a number' },
    };
    const result = solve(solveInput({ types: TYPES, nodePools: [pool], pods: [pod({ cpu: '1' })] }));
    expect(result.nodeClaims).toHaveLength(0);
    expect(result.unschedulable[0]?.message).toContain('is not a number');
  });

  it('changes nothing when the plan stays under it', () => {
    const free = solve(solveInput({ types: TYPES, pods: pods(4, () => ({ cpu: '1' })) }));
    const capped = solve(
      solveInput({ types: TYPES, nodePools: [limited(50)], pods: pods(4, () => ({ cpu: '1' })) }),
    );
    expect(capped.nodeClaims.map((c) => c.instanceTypes)).toEqual(
      free.nodeClaims.map((c) => c.instanceTypes),
    );
  });
});

describe("the cluster's dollar limit", () => {
  it('is shared by every NodePool, nodes of pools outside the solve included', () => {
    const other = {
      ...node({
        name: 'static-1',
        cpu: '4',
        memory: '16Gi',
        nodePoolName: 'static',
        instanceType: 'm.xlarge',
      }),
    };
    const result = solve(
      solveInput({
        types: TYPES,
        nodePools: [nodePool({ name: 'a', weight: 10 }), nodePool({ name: 'b', requirements: [] })],
        nodes: [other],
        pods: pods(10, () => ({ cpu: '1500m', labels: { app: 'x' } })),
        options: { maxCostPerHour: 0.5 },
      }),
    );
    // $0.20 for the static pool's node leaves $0.30: room for three of the pods, whichever pool.
    expect(worstCase(result)).toBeLessThanOrEqual(0.3 + 1e-9);
    expect(result.nodeClaims.reduce((n, c) => n + c.pods.length, 0)).toBe(3);
    expect(result.unschedulable[0]?.message).toContain(
      "dollar limit $0.5000/h (the cluster's maxCostPerHour)",
    );
  });

  it('binds a pool by the lesser of its own and the cluster remaining', () => {
    const result = solve(
      solveInput({
        types: TYPES,
        nodePools: [limited(1)],
        pods: pods(10, () => ({ cpu: '1500m' })),
        options: { maxCostPerHour: 0.2 },
      }),
    );
    expect(worstCase(result)).toBeLessThanOrEqual(0.2 + 1e-9);
    expect(result.unschedulable[0]?.message).toContain("(the cluster's maxCostPerHour)");
  });
});

describe('RemainingLimits', () => {
  it('reads the lesser of its own and the shared cost, and spends both', () => {
    const cluster = { value: 500 };
    const a = new RemainingLimits([[COST_KEY, 300]], cluster);
    const b = new RemainingLimits([], cluster);
    expect(a.get(COST_KEY)).toBe(300);
    expect(b.get(COST_KEY)).toBe(500);
    a.set(COST_KEY, (a.get(COST_KEY) ?? 0) - 100);
    expect([a.get(COST_KEY), cluster.value, b.get(COST_KEY)]).toEqual([200, 400, 400]);
    b.set(COST_KEY, (b.get(COST_KEY) ?? 0) - 250);
    expect([a.get(COST_KEY), a.costBinding(), b.get(COST_KEY)]).toEqual([150, 'cluster', 150]);
    // A copy and a restore (as re-packing does) put both back.
    const before = new Map(a);
    a.set(COST_KEY, 0);
    for (const [k, v] of before) a.set(k, v);
    expect([a.get(COST_KEY), cluster.value]).toEqual([150, 150]);
  });
});

describe('a dollar limit on a static NodePool', () => {
  it('is refused: the pool plans no replica and says why', () => {
    const problem =
      'annotation flotilla.io/max-cost-per-hour "5" is not supported on a static NodePool (spec.replicas); the NodePool launches nothing until it is removed';
    const planned = planStaticNodeClaim({
      pool: { ...nodePool(), replicas: 2, costLimit: { problem } },
      instanceTypes: TYPES,
    });
    expect(planned).toEqual({ ok: false, reason: problem });
  });
});
