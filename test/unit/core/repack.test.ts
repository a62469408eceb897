import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  computeAllocatable,
  computePodRequests,
  type InstanceType,
  Label,
  type Pod,
  type SolveInput,
  type SolveResult,
  solve,
} from '../../../shared/core/index.ts';
import { assignmentLowerBound } from '../../bench/lower-bound.ts';
import { benchInput, loadInstanceTypes, lpInputs } from '../../bench/workloads.ts';
import { catalogInstanceTypes, nodePool, type PodOptions, planCost, pod, solveInput } from './builders.ts';
import { SMALL_TYPES } from './fixtures.ts';

const CATALOG_SUBSET = catalogInstanceTypes({
  filter: (t) => ['c7i', 'm7i', 'r7i', 't4g', 'c6g', 'r6g'].includes(t.family),
});
const CPUS = ['250m', '500m', '1', '2', '3500m', '4'];
const MEMS = ['512Mi', '1Gi', '4Gi', '8Gi', '16Gi', '28Gi'];

const withRepack = (input: SolveInput, repack: boolean): SolveResult =>
  solve({ ...input, options: { ...(input.options ?? {}), repack } });

/** uid → where the pod went: a claim's pod set (sorted uids) or an existing capacity name. */
function scheduledUids(result: SolveResult): string[] {
  return [
    ...result.nodeClaims.flatMap((c) => c.pods.map((p) => p.uid)),
    ...result.placements.map((p) => p.pod.uid),
  ].sort();
}

/** The claim holding each pod, as the sorted uids of its pods plus its zone requirement. */
function claimOf(result: SolveResult, uid: string): string | undefined {
  const claim = result.nodeClaims.find((c) => c.pods.some((p) => p.uid === uid));
  if (claim === undefined) return undefined;
  const zone = claim.requirements.find((r) => r.key === Label.zone);
  return JSON.stringify([claim.pods.map((p) => p.uid).sort(), zone?.values ?? []]);
}

const arbPlainPods = fc.array(
  fc.record({ cpu: fc.constantFrom(...CPUS), memory: fc.constantFrom(...MEMS) }),
  {
    minLength: 1,
    maxLength: 40,
  },
);

describe('re-packing planned NodeClaims', () => {
  it('never costs more than the greedy plan and schedules exactly the same pods', () => {
    fc.assert(
      fc.property(
        arbPlainPods,
        fc.constantFrom<readonly InstanceType[]>(SMALL_TYPES, CATALOG_SUBSET),
        fc.option(fc.integer({ min: 8, max: 64 }), { nil: undefined }),
        (specs, types, cpuLimit) => {
          const input = solveInput({
            types,
            nodePools: [nodePool(cpuLimit === undefined ? {} : { limits: { cpu: String(cpuLimit) } })],
            pods: specs.map((s) => pod(s)),
          });
          const on = withRepack(input, true);
          const off = withRepack(input, false);
          expect(planCost(on)).toBeLessThanOrEqual(planCost(off) + 1e-9);
          expect(scheduledUids(on)).toEqual(scheduledUids(off));
          expect(on.unschedulable.map((u) => u.pod.uid)).toEqual(off.unschedulable.map((u) => u.pod.uid));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('lowers the cost of an assorted mix of plain pods', () => {
    const input = benchInput('plain-requests', 300, loadInstanceTypes('400'));
    const on = withRepack(input, true);
    const off = withRepack(input, false);
    expect(planCost(on)).toBeLessThan(planCost(off) * 0.97);
    expect(on.unschedulable).toEqual([]);
  });

  const zoneSpread = (app: string): PodOptions => ({
    labels: { app },
    spread: [
      {
        maxSkew: 1,
        topologyKey: Label.zone,
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { app } },
      },
    ],
  });
  const antiHost: PodOptions = {
    labels: { app: 'anti' },
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: 'anti' } } },
        ],
      },
    },
  };
  it.each<[string, (i: number) => PodOptions]>([
    ['zone topology spread', () => zoneSpread('web')],
    ['hostname anti-affinity', () => antiHost],
    ['a host port', () => ({ hostPorts: [8080] })],
    [
      'a label another pod spreads on',
      (i) => (i === 0 ? zoneSpread('shared') : { labels: { app: 'shared' } }),
    ],
  ])('leaves pods with %s on the claims the greedy pass chose', (_name, constrained) => {
    const tied: Pod[] = Array.from({ length: 6 }, (_, i) =>
      pod({ cpu: '1', memory: '2Gi', ...constrained(i) }),
    );
    const free = Array.from({ length: 30 }, (_, i) =>
      pod({ cpu: CPUS[i % CPUS.length] as string, memory: MEMS[(i * 5) % MEMS.length] as string }),
    );
    const input = solveInput({ types: CATALOG_SUBSET, pods: [...tied, ...free] });
    const on = withRepack(input, true);
    const off = withRepack(input, false);
    expect(on.unschedulable).toEqual([]);
    for (const p of tied) expect(claimOf(on, p.uid)).toEqual(claimOf(off, p.uid));
    expect(planCost(on)).toBeLessThanOrEqual(planCost(off) + 1e-9);
  });

  it('keeps a NodePool with minValues as planned', () => {
    const pool = nodePool({
      requirements: [{ key: Label.instanceFamily, operator: 'Exists', minValues: 3 }],
    });
    const pods = Array.from({ length: 20 }, (_, i) =>
      pod({ cpu: CPUS[i % CPUS.length] as string, memory: MEMS[(i * 5) % MEMS.length] as string }),
    );
    const input = solveInput({ types: CATALOG_SUBSET, nodePools: [pool], pods });
    expect(withRepack(input, true)).toEqual(withRepack(input, false));
  });
});

describe('benchmark lower bounds', () => {
  /** The cheapest plan, by trying every partition of the pods into nodes. */
  function optimum(reqs: readonly number[][], types: readonly { alloc: number[]; price: number }[]): number {
    const cheapest = (block: readonly number[]): number => {
      let best = Number.POSITIVE_INFINITY;
      for (const t of types) {
        const fitsAll = t.alloc.every((a, r) => block.reduce((s, i) => s + (reqs[i]?.[r] ?? 0), 0) <= a);
        if (fitsAll) best = Math.min(best, t.price);
      }
      return best;
    };
    let best = Number.POSITIVE_INFINITY;
    const blocks: number[][] = [];
    const place = (i: number, cost: number): void => {
      if (cost >= best) return;
      if (i === reqs.length) {
        best = cost;
        return;
      }
      for (const b of blocks) {
        const before = cheapest(b);
        b.push(i);
        place(i + 1, cost - before + cheapest(b));
        b.pop();
      }
      blocks.push([i]);
      place(i + 1, cost + cheapest([i]));
      blocks.pop();
    };
    place(0, 0);
    return best;
  }

  it('the whole-pod bound is valid (≤ the exact optimum) and at least the assignment bound', () => {
    const types = catalogInstanceTypes({
      names: ['t4g.small', 't4g.medium', 't4g.xlarge', 't4g.2xlarge', 'r6g.large', 'c6g.xlarge'],
    });
    fc.assert(
      fc.property(
        fc.array(fc.record({ cpu: fc.constantFrom(...CPUS), memory: fc.constantFrom(...MEMS) }), {
          minLength: 1,
          maxLength: 6,
        }),
        (specs) => {
          const input: SolveInput = {
            ...benchInput('plain-requests', 0, types),
            pods: specs.map((s) => pod(s)),
          };
          const { shapes, types: lpTypes } = lpInputs(input);
          const whole = assignmentLowerBound(shapes, lpTypes, { wholePods: true });
          const sliced = assignmentLowerBound(shapes, lpTypes);
          const reqs = input.pods.map((p) => {
            const r = computePodRequests(p);
            return [r['cpu'] ?? 0, (r['memory'] ?? 0) / 2 ** 20, r['pods'] ?? 0];
          });
          const exact = optimum(
            reqs,
            types.map((t) => {
              const a = computeAllocatable(t);
              const price = Math.min(
                ...t.offerings.filter((o) => o.capacityType === 'on-demand').map((o) => o.priceUsdPerHour),
              );
              return { alloc: [a['cpu'] ?? 0, (a['memory'] ?? 0) / 2 ** 20, a['pods'] ?? 0], price };
            }),
          );
          fc.pre(Number.isFinite(exact));
          expect(whole).toBeLessThanOrEqual(exact * (1 + 1e-9));
          expect(whole).toBeGreaterThanOrEqual(sliced * (1 - 1e-9));
          expect(planCost(solve(input))).toBeGreaterThanOrEqual(exact * (1 - 1e-9));
        },
      ),
      { numRuns: 60 },
    );
  });
});
