import { describe, expect, it } from 'vitest';
import {
  Label,
  type NodeSelectorRequirement,
  type Pod,
  type SolveResult,
  solve,
} from '../../../shared/core/index.ts';
import { node, pod, pods, solveInput, zoneName } from './builders.ts';
import { claimZone, SMALL_TYPES } from './fixtures.ts';

const types = SMALL_TYPES;
const zoneIn = (...zones: string[]): NodeSelectorRequirement => ({
  key: Label.zone,
  operator: 'In',
  values: zones.map(zoneName),
});

/** Pods per zone over the new NodeClaims and the existing nodes (`nodeZones`: node → zone). */
function podsPerZone(
  result: SolveResult,
  nodeZones: ReadonlyMap<string, string> = new Map(),
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (zone: string | undefined, n: number) => out.set(zone ?? '?', (out.get(zone ?? '?') ?? 0) + n);
  for (const c of result.nodeClaims) add(claimZone(c), c.pods.length);
  for (const p of result.placements) if (p.kind === 'existingNode') add(nodeZones.get(p.nodeName), 1);
  return out;
}

const spreadOf = (app: string, extra: object = {}) => [
  {
    maxSkew: 1,
    topologyKey: Label.zone,
    whenUnsatisfiable: 'DoNotSchedule' as const,
    labelSelector: { matchLabels: { app } },
    ...extra,
  },
];

describe('topology spread with several required node-affinity terms', () => {
  it('counts pods placed through any term and takes the minimum over the domains of every term', () => {
    // Terms zone a OR zone b: Kubernetes counts both zones for the spread; 18 pods split 9/9.
    const result = solve(
      solveInput({
        types,
        pods: pods(18, () => ({
          cpu: '500m',
          labels: { app: 'web' },
          required: [[zoneIn('a')], [zoneIn('b')]],
          spread: spreadOf('web'),
        })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect([...podsPerZone(result).entries()].sort()).toEqual([
      [zoneName('a'), 9],
      [zoneName('b'), 9],
    ]);
  });

  it('keeps the skew against an existing node that only the second term admits', () => {
    const existing = node({ name: 'n-b', cpu: '8', memory: '32Gi', zone: 'b' });
    const result = solve(
      solveInput({
        types,
        nodes: [existing],
        pods: pods(6, () => ({
          cpu: '500m',
          labels: { app: 'web' },
          required: [[zoneIn('a')], [{ key: Label.hostname, operator: 'In', values: ['n-b'] }]],
          spread: spreadOf('web'),
        })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    const perZone = podsPerZone(result, new Map([['n-b', zoneName('b')]]));
    expect([...perZone.entries()].sort()).toEqual([
      [zoneName('a'), 3],
      [zoneName('b'), 3],
    ]);
  });

  it('with nodeAffinityPolicy Ignore counts every zone, whatever the terms', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(4, () => ({
          cpu: '500m',
          labels: { app: 'web' },
          required: [[zoneIn('a')]],
          spread: spreadOf('web', { nodeAffinityPolicy: 'Ignore' }),
        })),
      }),
    );
    // Zones b and c hold no pod and count: only maxSkew pods fit in zone a.
    expect(result.unschedulable).toHaveLength(3);
    expect([...podsPerZone(result).entries()]).toEqual([[zoneName('a'), 1]]);
  });
});

describe('a nil labelSelector selects no pod', () => {
  it('in a topology spread: the constraint holds whatever the placement', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(4, () => ({
          cpu: '100m',
          labels: { app: 'web' },
          spread: [{ maxSkew: 1, topologyKey: Label.hostname, whenUnsatisfiable: 'DoNotSchedule' as const }],
        })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => c.pods.length)).toEqual([4]);
  });

  it('in required pod anti-affinity: no pod conflicts', () => {
    const result = solve(
      solveInput({
        types,
        pods: pods(3, () => ({
          cpu: '100m',
          labels: { app: 'web' },
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: Label.hostname }],
            },
          },
        })),
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => c.pods.length)).toEqual([3]);
  });

  it('in required pod affinity: no pod satisfies it, not even the pod itself', () => {
    const bound = pod({ name: 'peer', labels: { app: 'web' } });
    const result = solve(
      solveInput({
        types,
        nodes: [node({ name: 'n-a', cpu: '8', memory: '32Gi', boundPods: [bound] })],
        pods: [
          pod({
            name: 'follower',
            cpu: '100m',
            labels: { app: 'web' },
            affinity: {
              podAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: Label.hostname }],
              },
            },
          }),
        ],
      }),
    );
    expect(result.unschedulable.map((u) => u.pod.name)).toEqual(['follower']);
  });
});

describe('volume topology with several terms (ORed)', () => {
  const volumePod = (
    name: string,
    terms: readonly (readonly NodeSelectorRequirement[])[],
    zone?: string,
  ) => ({
    ...pod({ name, cpu: '100m', ...(zone === undefined ? {} : { zone }) }),
    volumeTopology: [{ claimName: `${name}-data`, terms }],
  });

  it('a pod may use any term of its volume', () => {
    const result = solve(solveInput({ types, pods: [volumePod('p', [[zoneIn('a')], [zoneIn('b')]], 'b')] }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map(claimZone)).toEqual([zoneName('b')]);
  });

  it('takes the first term that works, and no zone outside every term', () => {
    const first = solve(solveInput({ types, pods: [volumePod('p', [[zoneIn('c')], [zoneIn('a')]])] }));
    expect(first.nodeClaims.map(claimZone)).toEqual([zoneName('c')]);
    const none = solve(solveInput({ types, pods: [volumePod('q', [[zoneIn('a')], [zoneIn('b')]], 'c')] }));
    expect(none.nodeClaims).toEqual([]);
    expect(none.unschedulable.map((u) => u.pod.name)).toEqual(['q']);
  });

  it('every claim must be met: two claims with two terms each leave their common zone', () => {
    const p = {
      ...pod({ name: 'two', cpu: '100m' }),
      volumeTopology: [
        { claimName: 'x', terms: [[zoneIn('a')], [zoneIn('b')]] },
        { claimName: 'y', terms: [[zoneIn('c')], [zoneIn('b')]] },
      ],
    };
    const result = solve(solveInput({ types, pods: [p] }));
    expect(result.nodeClaims.map(claimZone)).toEqual([zoneName('b')]);
  });

  it('does not narrow a spread: volume topology is not node affinity', () => {
    // Zone-spread pods whose volumes allow a or b: zone c still counts as a domain (Honor reads
    // only the node selector and node affinity), so the third pod waits rather than skew.
    const result = solve(
      solveInput({
        types,
        pods: pods(3, (i) => ({
          cpu: '100m',
          name: `v-${i}`,
          labels: { app: 'db' },
          spread: spreadOf('db'),
        })).map((p) => ({
          ...p,
          volumeTopology: [{ claimName: `${p.name}-data`, terms: [[zoneIn('a')], [zoneIn('b')]] }],
        })),
      }),
    );
    expect([...podsPerZone(result).entries()].sort()).toEqual([
      [zoneName('a'), 1],
      [zoneName('b'), 1],
    ]);
    expect(result.unschedulable).toHaveLength(1);
  });
});

describe('CSI attach limits of existing nodes', () => {
  const EBS = 'ebs.csi.aws.com';
  const withClaims = (p: Pod, ...claims: string[]): Pod => ({
    ...p,
    claimVolumes: claims.map((name) => ({ kind: 'claim' as const, name })),
  });
  const drivers = (...claims: string[]) => new Map(claims.map((c) => [`default/${c}`, EBS]));

  it('counts the volumes of bound pods and of pods the plan puts there', () => {
    const bound = withClaims(pod({ name: 'db-0', cpu: '100m' }), 'data-0');
    const existing = {
      ...node({ name: 'n1', cpu: '8', memory: '32Gi', boundPods: [bound] }),
      volumeLimits: { [EBS]: 2 },
    };
    const pending = [1, 2, 3].map((i) => withClaims(pod({ name: `db-${i}`, cpu: '100m' }), `data-${i}`));
    const result = solve({
      ...solveInput({ types, nodes: [existing], pods: pending }),
      claimDrivers: drivers('data-0', 'data-1', 'data-2', 'data-3'),
    });
    expect(result.unschedulable).toEqual([]);
    // One more volume fits the node (2 attachable); the other pods need new nodes.
    expect(result.placements.map((p) => p.pod.name)).toHaveLength(1);
    expect(result.nodeClaims.flatMap((c) => c.pods)).toHaveLength(2);
  });

  it('a claim already attached there counts once; other drivers and unknown claims are not limited', () => {
    const bound = withClaims(pod({ name: 'a', cpu: '100m' }), 'shared');
    const existing = {
      ...node({ name: 'n1', cpu: '8', memory: '32Gi', boundPods: [bound] }),
      volumeLimits: { [EBS]: 1 },
    };
    const result = solve({
      ...solveInput({
        types,
        nodes: [existing],
        pods: [
          withClaims(pod({ name: 'b', cpu: '100m' }), 'shared'),
          withClaims(pod({ name: 'c', cpu: '100m' }), 'efs-data'),
          withClaims(pod({ name: 'd', cpu: '100m' }), 'unknown'),
        ],
      }),
      claimDrivers: new Map([
        ['default/shared', EBS],
        ['default/efs-data', 'efs.csi.aws.com'],
      ]),
    });
    expect(result.placements.map((p) => p.pod.name).sort()).toEqual(['b', 'c', 'd']);
    expect(result.nodeClaims).toEqual([]);
  });

  it('an ephemeral volume claim is named after its pod', () => {
    const existing = { ...node({ name: 'n1', cpu: '8', memory: '32Gi' }), volumeLimits: { [EBS]: 1 } };
    const eph = (name: string): Pod => ({
      ...pod({ name, cpu: '100m' }),
      claimVolumes: [{ kind: 'ephemeral', name: 'scratch' }],
    });
    const result = solve({
      ...solveInput({ types, nodes: [existing], pods: [eph('e1'), eph('e2')] }),
      claimDrivers: drivers('e1-scratch', 'e2-scratch'),
    });
    expect(result.placements).toHaveLength(1);
    expect(result.nodeClaims.flatMap((c) => c.pods)).toHaveLength(1);
  });
});
