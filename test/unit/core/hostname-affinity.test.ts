import { describe, expect, it } from 'vitest';
import { type Affinity, Label, type Pod, type SolveResult, solve } from '../../../shared/core/index.ts';
import { fakeInstanceType, node, pod, solveInput, zoneName } from './builders.ts';

// Required pod affinity on kubernetes.io/hostname when the pods to join are pending in the same
// run. Karpenter's queue tries a failed pod again after any pod is placed, and a pod whose
// preferences are being relaxed is still making progress: a pod that must join another is
// planned onto that pod's node once it is placed, whatever the order the queue meets them in.

const TYPES = [
  fakeInstanceType({ name: 'm.large', cpu: 2, memoryGiB: 8, price: 0.096 }),
  fakeInstanceType({ name: 'm.xlarge', cpu: 4, memoryGiB: 16, price: 0.192 }),
  fakeInstanceType({ name: 'm.2xlarge', cpu: 8, memoryGiB: 32, price: 0.384 }),
];

const joins = (labels: Record<string, string>): Affinity => ({
  podAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [
      { topologyKey: Label.hostname, labelSelector: { matchLabels: labels } },
    ],
  },
});

/** A preferred zone no NodePool offers: the pod fails once per term before it relaxes them away. */
const unreachablePreferences = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    weight: 100 - i,
    reqs: [{ key: Label.zone, operator: 'In' as const, values: [zoneName(`z${i}`)] }],
  }));

/** The node (or planned NodeClaim) each pod ends on, by pod name. */
function hostOf(result: SolveResult): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of result.placements) {
    if (p.kind === 'existingNode') out.set(p.pod.name, p.nodeName);
    else if (p.kind === 'inFlightNodeClaim') out.set(p.pod.name, p.nodeClaimName);
  }
  for (const c of result.nodeClaims) for (const p of c.pods) out.set(p.name, c.name);
  return out;
}

function placedTogether(result: SolveResult, names: readonly string[]): void {
  expect(result.unschedulable.map((u) => u.pod.name)).toEqual([]);
  const hosts = hostOf(result);
  const first = hosts.get(names[0] as string);
  expect(first).toBeDefined();
  for (const n of names) expect(hosts.get(n), n).toBe(first);
}

describe('required hostname pod affinity to pods pending in the same run', () => {
  // The queue meets the web pod first (more cpu): it fails, nothing to relax. The cache pod then
  // fails on each preferred zone in turn and relaxes it; the web pod must still get its try after.
  it.each([1, 3])(
    'joins a partner that relaxes %i preference(s), one per turn of the queue, before it is placed',
    (n) => {
      const web = pod({ name: 'web', cpu: '2', affinity: joins({ app: 'cache' }) });
      const cache = pod({
        name: 'cache',
        cpu: '1',
        labels: { app: 'cache' },
        preferred: unreachablePreferences(n),
      });
      const result = solve(solveInput({ pods: [web, cache], types: TYPES }));
      placedTogether(result, ['web', 'cache']);
      expect(result.nodeClaims).toHaveLength(1);
    },
  );

  it('joins along a chain: each pod joins the one it needs once that one is placed', () => {
    const a = pod({ name: 'a', cpu: '3', labels: { app: 'a' }, affinity: joins({ app: 'b' }) });
    const b = pod({
      name: 'b',
      cpu: '2',
      labels: { app: 'b' },
      affinity: joins({ app: 'c' }),
      preferred: unreachablePreferences(2),
    });
    const c = pod({ name: 'c', cpu: '1', labels: { app: 'c' }, preferred: unreachablePreferences(1) });
    const result = solve(solveInput({ pods: [a, b, c], types: TYPES }));
    placedTogether(result, ['a', 'b', 'c']);
    // One node for the three of them: 6 cpu, the 8-cpu type.
    expect(result.nodeClaims).toHaveLength(1);
    expect(result.nodeClaims[0]?.instanceTypes[0]?.name).toBe('m.2xlarge');
  });

  it('several pods join one partner, and a second group gets its own node', () => {
    const pods: Pod[] = [
      pod({ name: 'w1', cpu: '2', affinity: joins({ app: 'db1' }) }),
      pod({ name: 'w2', cpu: '2', affinity: joins({ app: 'db1' }) }),
      pod({ name: 'db1', cpu: '1', labels: { app: 'db1' }, preferred: unreachablePreferences(1) }),
      pod({ name: 'x1', cpu: '2', affinity: joins({ app: 'db2' }) }),
      pod({
        name: 'db2',
        cpu: '1',
        labels: { app: 'db2' },
        preferred: unreachablePreferences(2),
        // Kept off db1's node, so x1 has to follow it to a second one.
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: 'db1' } } },
            ],
          },
        },
      }),
    ];
    const result = solve(solveInput({ pods, types: TYPES }));
    placedTogether(result, ['w1', 'w2', 'db1']);
    placedTogether(result, ['x1', 'db2']);
    const hosts = hostOf(result);
    expect(hosts.get('w1')).not.toBe(hosts.get('x1'));
  });

  it('joins a partner placed on an existing node when that node has room', () => {
    const existing = node({ name: 'n1', cpu: '8', memory: '32Gi', zone: 'a' });
    const web = pod({ name: 'web', cpu: '2', affinity: joins({ app: 'cache' }) });
    const cache = pod({
      name: 'cache',
      cpu: '1',
      labels: { app: 'cache' },
      preferred: unreachablePreferences(1),
    });
    const result = solve(solveInput({ pods: [web, cache], types: TYPES, nodes: [existing] }));
    expect(result.nodeClaims).toEqual([]);
    expect(hostOf(result).get('web')).toBe('n1');
    expect(hostOf(result).get('cache')).toBe('n1');
  });

  it('places the pod others must join where they fit beside it, not in the last gap of a planned node', () => {
    // The big pod's node has room left for the cache pod but not for the web pod with it: the
    // cache pod goes to a node of its own, which the web pod then joins.
    const big = pod({ name: 'big', cpu: '6' });
    const web = pod({ name: 'web', cpu: '2', affinity: joins({ app: 'cache' }) });
    const cache = pod({ name: 'cache', cpu: '1', labels: { app: 'cache' } });
    const result = solve(solveInput({ pods: [big, web, cache], types: TYPES }));
    placedTogether(result, ['web', 'cache']);
    expect(hostOf(result).get('big')).not.toBe(hostOf(result).get('web'));
    expect(result.nodeClaims).toHaveLength(2);
  });

  it('places the pod others must join on an existing node only where they fit beside it', () => {
    const small = node({ name: 'small', cpu: '1500m', memory: '8Gi', zone: 'a' });
    const web = pod({ name: 'web', cpu: '2', affinity: joins({ app: 'cache' }) });
    const cache = pod({ name: 'cache', cpu: '1', labels: { app: 'cache' } });
    const result = solve(solveInput({ pods: [web, cache], types: TYPES, nodes: [small] }));
    placedTogether(result, ['web', 'cache']);
    expect(hostOf(result).get('cache')).not.toBe('small');
  });

  it('falls back to the plain placement when no node could hold the pod with all that must join it', () => {
    // Ten 2-cpu pods cannot all join one 8-cpu node: the cache pod is placed as any pod, and as
    // many as fit follow it; the rest are reported.
    const webs = Array.from({ length: 10 }, (_, i) =>
      pod({ name: `web-${i}`, cpu: '2', affinity: joins({ app: 'cache' }) }),
    );
    const cache = pod({ name: 'cache', cpu: '1', labels: { app: 'cache' } });
    const result = solve(solveInput({ pods: [...webs, cache], types: TYPES }));
    const hosts = hostOf(result);
    const placed = webs.filter((w) => hosts.get(w.name) !== undefined);
    expect(placed.length).toBeGreaterThan(0);
    for (const w of placed) expect(hosts.get(w.name)).toBe(hosts.get('cache'));
    expect(result.unschedulable).toHaveLength(10 - placed.length);
  });

  it('still reports a pod whose partner never comes: no pod carries the label', () => {
    const web = pod({ name: 'web', cpu: '2', affinity: joins({ app: 'missing' }) });
    const other = pod({ name: 'other', cpu: '1', preferred: unreachablePreferences(2) });
    const result = solve(solveInput({ pods: [web, other], types: TYPES }));
    expect(result.unschedulable.map((u) => u.pod.name)).toEqual(['web']);
    expect(result.unschedulable[0]?.reasons[0]?.reason).toMatch(/pod affinity on kubernetes.io\/hostname/);
    expect(hostOf(result).get('other')).toBeDefined();
  });

  it('reports a pod whose partner landed where it does not fit', () => {
    // The partner fills the largest type's room; the joining pod cannot follow it.
    const web = pod({ name: 'web', cpu: '4', affinity: joins({ app: 'cache' }) });
    const cache = pod({
      name: 'cache',
      cpu: '5',
      labels: { app: 'cache' },
      preferred: unreachablePreferences(1),
    });
    const result = solve(solveInput({ pods: [web, cache], types: TYPES }));
    expect(result.unschedulable.map((u) => u.pod.name)).toEqual(['web']);
    expect(hostOf(result).get('cache')).toBeDefined();
  });
});
