import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DaemonSet,
  type ExistingNode,
  type InFlightNodeClaim,
  Label,
  type NodeSelectorRequirement,
  type Pod,
  type SolveResult,
  solve,
  type Taint,
  type TopologySpreadConstraint,
} from '../../../shared/core/index.ts';
import { daemonSet, node, nodePool, type PodOptions, pod, pods, solveInput, zoneName } from './builders.ts';
import { claimZone, SMALL_TYPES } from './fixtures.ts';

const types = SMALL_TYPES;
const DEDICATED: Taint = { key: 'dedicated', value: 'x', effect: 'NoSchedule' };
type Policy = 'Honor' | 'Ignore' | undefined;

function webSpread(policy: Policy, maxSkew = 1): Pick<PodOptions, 'labels' | 'spread'> {
  const c: TopologySpreadConstraint = {
    maxSkew,
    topologyKey: Label.zone,
    whenUnsatisfiable: 'DoNotSchedule',
    labelSelector: { matchLabels: { app: 'web' } },
    ...(policy === undefined ? {} : { nodeTaintsPolicy: policy }),
  };
  return { labels: { app: 'web' }, spread: [c] };
}

/** Pods per zone over the planned NodeClaims, zones sorted. */
function perZone(result: SolveResult): [string, number][] {
  const out = new Map<string, number>();
  for (const c of result.nodeClaims) {
    const z = claimZone(c) ?? '?';
    out.set(z, (out.get(z) ?? 0) + c.pods.length);
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** An open pool in zones a and b, and a pool tainted `dedicated=x:NoSchedule` in zone c. */
const splitPools = [
  nodePool({
    name: 'open',
    requirements: [{ key: Label.zone, operator: 'In', values: ['a', 'b'].map(zoneName) }],
  }),
  nodePool({
    name: 'tainted',
    taints: [DEDICATED],
    requirements: [{ key: Label.zone, operator: 'In', values: [zoneName('c')] }],
  }),
];

describe('topology spread nodeTaintsPolicy', () => {
  it.each<[string, Policy, number, [string, number][]]>([
    // Zone c of the tainted pool stays at 0 pods, so a and b can hold maxSkew pods each.
    [
      'Ignore (default) keeps the tainted pool zone',
      undefined,
      2,
      [
        [zoneName('a'), 1],
        [zoneName('b'), 1],
      ],
    ],
    [
      'Ignore keeps the tainted pool zone',
      'Ignore',
      2,
      [
        [zoneName('a'), 1],
        [zoneName('b'), 1],
      ],
    ],
    [
      'Honor drops the tainted pool zone',
      'Honor',
      0,
      [
        [zoneName('a'), 2],
        [zoneName('b'), 2],
      ],
    ],
  ])('NodePool templates: %s', (_name, policy, unschedulable, zones) => {
    const result = solve(
      solveInput({ types, nodePools: splitPools, pods: pods(4, () => ({ cpu: '1', ...webSpread(policy) })) }),
    );
    expect(result.unschedulable).toHaveLength(unschedulable);
    expect(perZone(result)).toEqual(zones);
    expect(result.nodeClaims.every((c) => c.nodePoolName === 'open')).toBe(true);
  });

  const boundWeb = (): Pod[] => pods(3, () => ({ cpu: '100m', labels: { app: 'web' } }));
  const taintedNode = (): ExistingNode =>
    node({ name: 'n-a', cpu: '1', memory: '2Gi', zone: 'a', taints: [DEDICATED], boundPods: boundWeb() });
  const taintedInFlight = (): InFlightNodeClaim => ({
    name: 'inflight-a',
    nodePoolName: 'default',
    requirements: [{ key: Label.zone, operator: 'In', values: [zoneName('a')] }],
    taints: [DEDICATED],
    instanceTypeNames: ['c.large'],
    labels: { [Label.zone]: zoneName('a'), [Label.hostname]: 'inflight-a' },
    pods: boundWeb(),
  });

  it.each<[string, Policy, 'node' | 'inflight', [string, number][]]>([
    // Ignore: the 3 pods on the tainted capacity in zone a count, so new pods avoid zone a.
    [
      'Ignore counts pods on a tainted node',
      undefined,
      'node',
      [
        [zoneName('b'), 2],
        [zoneName('c'), 2],
      ],
    ],
    [
      'Ignore counts pods on a tainted in-flight claim',
      'Ignore',
      'inflight',
      [
        [zoneName('b'), 2],
        [zoneName('c'), 2],
      ],
    ],
    // Honor: the tainted capacity is outside the spread, zone a starts at 0.
    [
      'Honor skips pods on a tainted node',
      'Honor',
      'node',
      [
        [zoneName('a'), 2],
        [zoneName('b'), 1],
        [zoneName('c'), 1],
      ],
    ],
    [
      'Honor skips pods on a tainted in-flight claim',
      'Honor',
      'inflight',
      [
        [zoneName('a'), 2],
        [zoneName('b'), 1],
        [zoneName('c'), 1],
      ],
    ],
  ])('existing capacity: %s', (_name, policy, where, zones) => {
    const result = solve(
      solveInput({
        types,
        ...(where === 'node' ? { nodes: [taintedNode()] } : { nodeClaims: [taintedInFlight()] }),
        pods: pods(4, () => ({ cpu: '1', ...webSpread(policy) })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.placements).toEqual([]);
    expect(perZone(result)).toEqual(zones);
  });

  it('Honor still counts tainted capacity the pod tolerates', () => {
    const spread = webSpread('Honor');
    const result = solve(
      solveInput({
        types,
        nodes: [taintedNode()],
        pods: pods(4, () => ({
          cpu: '1',
          ...spread,
          tolerations: [{ key: 'dedicated', operator: 'Exists' }],
        })),
      }),
    );
    expect(perZone(result)).toEqual([
      [zoneName('b'), 2],
      [zoneName('c'), 2],
    ]);
  });

  it('Ignore schedules at most maxSkew per untainted zone; Honor schedules all within maxSkew', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 3 }), (n, maxSkew) => {
        const run = (policy: Policy) =>
          solve(
            solveInput({
              types,
              nodePools: splitPools,
              pods: pods(n, () => ({ cpu: '500m', ...webSpread(policy, maxSkew) })),
            }),
          );
        const ignore = run('Ignore');
        const ignored = perZone(ignore);
        expect(ignored.every(([z, count]) => z !== zoneName('c') && count <= maxSkew)).toBe(true);
        expect(ignored.reduce((s, [, c]) => s + c, 0)).toBe(Math.min(n, 2 * maxSkew));
        const honor = run('Honor');
        expect(honor.unschedulable).toEqual([]);
        const [a = 0, b = 0] = [zoneName('a'), zoneName('b')].map(
          (z) => perZone(honor).find(([x]) => x === z)?.[1] ?? 0,
        );
        expect(a + b).toBe(n);
        expect(Math.abs(a - b)).toBeLessThanOrEqual(maxSkew);
      }),
      { numRuns: 40 },
    );
  });
});

describe('DaemonSet pods not yet running on existing nodes', () => {
  const agent = (extra: Partial<Parameters<typeof daemonSet>[0]> = {}): DaemonSet =>
    daemonSet({ name: 'agent', cpu: '1', memory: '100Mi', ...extra });
  const bound = (name: string, cpu: string, extra: Partial<Pod> = {}): Pod => ({
    ...pod({ name, namespace: 'kube-system', cpu, memory: '100Mi' }),
    ...extra,
  });

  it.each<[string, DaemonSet, readonly Pod[], readonly Taint[], string, 'node' | 'claim']>([
    ['a pending DaemonSet pod takes its room first', agent(), [], [], '1500m', 'claim'],
    [
      'the same pod fits when there is no DaemonSet',
      daemonSet({ name: 'none', cpu: '0', memory: '0' }),
      [],
      [],
      '1500m',
      'node',
    ],
    [
      'a running DaemonSet pod (controller name) is not counted twice',
      agent(),
      [bound('agent-x7k2p', '1')],
      [],
      '900m',
      'node',
    ],
    [
      'a running DaemonSet pod (daemonSetName) is not counted twice',
      agent(),
      [bound('custom', '1', { daemonSetName: 'agent' })],
      [],
      '900m',
      'node',
    ],
    [
      'a pod of another DaemonSet does not stand in for it',
      agent(),
      [bound('agent-logs-q2w9e', '100m')],
      [],
      '1500m',
      'claim',
    ],
    [
      'a DaemonSet for another arch is not counted',
      agent({ nodeSelector: { [Label.arch]: 'arm64' } }),
      [],
      [],
      '1500m',
      'node',
    ],
    [
      'a DaemonSet that does not tolerate the node taint is not counted',
      agent(),
      [],
      [DEDICATED],
      '1500m',
      'node',
    ],
    [
      'a DaemonSet that tolerates the node taint is counted',
      agent({ tolerations: [{ operator: 'Exists' }] }),
      [],
      [DEDICATED],
      '1500m',
      'claim',
    ],
  ])('%s', (_name, ds, boundPods, taints, cpu, expected) => {
    const n = node({
      name: 'n1',
      cpu: '2',
      memory: '4Gi',
      boundPods,
      ...(taints.length > 0 ? { taints } : {}),
    });
    const p = pod({ cpu, memory: '100Mi', tolerations: [{ key: 'dedicated', operator: 'Exists' }] });
    const result = solve(solveInput({ types, nodes: [n], daemonSets: [ds], pods: [p] }));
    expect(result.unschedulable).toEqual([]);
    if (expected === 'node') {
      expect(result.placements).toEqual([
        { kind: 'existingNode', pod: expect.objectContaining({ name: p.name }), nodeName: 'n1' },
      ]);
      expect(result.nodeClaims).toEqual([]);
    } else {
      expect(result.placements).toEqual([]);
      expect(result.nodeClaims).toHaveLength(1);
    }
  });

  it('never fills an existing node past allocatable minus the DaemonSet pods still to come', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 1500 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 50, max: 2000 }), { minLength: 1, maxLength: 12 }),
        (nodeCpu, dsMillis, running, podMillis) => {
          const ds = daemonSet({ name: 'agent', cpu: `${dsMillis}m`, memory: '0' });
          const boundPods = running ? [bound('agent-abcde', `${dsMillis}m`)] : [];
          const n = node({ name: 'n1', cpu: String(nodeCpu), memory: '64Gi', boundPods });
          const pending = podMillis.map((m) => pod({ cpu: `${m}m`, memory: '10Mi' }));
          const result = solve(solveInput({ types, nodes: [n], daemonSets: [ds], pods: pending }));
          const onNode = new Set(result.placements.map((pl) => pl.pod.uid));
          const placedMillis = pending
            .filter((p) => onNode.has(p.uid))
            .reduce((s, p) => s + (p.containers[0]?.requests?.['cpu'] ?? 0), 0);
          // A DaemonSet larger than the node leaves no room at all.
          if (placedMillis > 0) expect(placedMillis + dsMillis).toBeLessThanOrEqual(nodeCpu * 1000);
          else expect(result.placements).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('pods that refuse Karpenter nodes', () => {
  const doesNotExist: NodeSelectorRequirement = { key: Label.nodePool, operator: 'DoesNotExist' };
  const zoneA: NodeSelectorRequirement = { key: Label.zone, operator: 'In', values: [zoneName('a')] };

  it.each<[string, PodOptions, 'ignored' | 'scheduled']>([
    ['required DoesNotExist → ignored', { required: [[doesNotExist]] }, 'ignored'],
    [
      'required DoesNotExist with another expression → ignored',
      { required: [[zoneA, doesNotExist]] },
      'ignored',
    ],
    [
      'DoesNotExist in the first of two terms (Karpenter reads the first) → ignored',
      { required: [[doesNotExist], [zoneA]] },
      'ignored',
    ],
    [
      'heaviest preferred DoesNotExist (Karpenter treats it as required) → ignored',
      {
        preferred: [
          { weight: 10, reqs: [zoneA] },
          { weight: 50, reqs: [doesNotExist] },
        ],
      },
      'ignored',
    ],
    [
      'DoesNotExist only in the second term → scheduled',
      { required: [[zoneA], [doesNotExist]] },
      'scheduled',
    ],
    [
      'DoesNotExist only in a lighter preferred term → scheduled',
      {
        preferred: [
          { weight: 50, reqs: [zoneA] },
          { weight: 10, reqs: [doesNotExist] },
        ],
      },
      'scheduled',
    ],
    [
      'nodepool Exists → scheduled',
      { required: [[{ key: Label.nodePool, operator: 'Exists' }]] },
      'scheduled',
    ],
    [
      'nodepool NotIn another pool → scheduled',
      { required: [[{ key: Label.nodePool, operator: 'NotIn', values: ['gpu'] }]] },
      'scheduled',
    ],
    [
      'DoesNotExist on another key → scheduled',
      { required: [[{ key: 'example.com/x', operator: 'DoesNotExist' }]] },
      'scheduled',
    ],
  ])('%s', (_name, options, expected) => {
    const refusing = pod({ cpu: '1', ...options });
    const other = pod({ cpu: '1' });
    const result = solve(solveInput({ types, pods: [refusing, other] }));
    expect(result.unschedulable).toEqual([]);
    const placed = result.nodeClaims.flatMap((c) => c.pods.map((p) => p.uid));
    expect(placed).toContain(other.uid);
    expect(placed.includes(refusing.uid)).toBe(expected === 'scheduled');
  });

  it('ignores them even when nothing else could host them, and leaves existing nodes alone', () => {
    const refusing = pod({ cpu: '64', required: [[doesNotExist]] });
    const result = solve(
      solveInput({ types, nodes: [node({ name: 'n1', cpu: '128', memory: '8Gi' })], pods: [refusing] }),
    );
    expect(result).toEqual({ nodeClaims: [], placements: [], unschedulable: [] });
  });
});
