import { describe, expect, it } from 'vitest';
import {
  computeAllocatable,
  type InstanceType,
  Label,
  type NodeSelectorRequirement,
  type Pod,
} from '../../../../shared/core/index.ts';
import { fairPodCost, makeExcessShare } from '../../../../shared/usecases/disruption/excess.ts';
import type { DisruptionCandidate, MethodContext } from '../../../../shared/usecases/disruption/index.ts';
import { repackConsolidation } from '../../../../shared/usecases/disruption/repack.ts';
import { catalogInstanceTypes } from '../../core/builders.ts';
import { boundPod, consolidatable, pool, simulation, T0 } from './builders.ts';

// What a node pays beyond what its pods need (excess.ts), and repack taking those nodes first:
// prices and sizes are the bundled catalog's (us-east-1, on-demand).

const GIB = 1024 ** 3;
const TYPES = catalogInstanceTypes({
  names: ['c6a.large', 'c6a.xlarge', 'm6a.large', 'r6a.large', 'r6a.xlarge'],
  zones: ['a'],
});
const type = (name: string): InstanceType => {
  const found = TYPES.find((t) => t.name === name);
  if (found === undefined) throw new Error(`${name} is not in the catalog`);
  return found;
};
const onDemand = (name: string): number =>
  Math.min(
    ...type(name)
      .offerings.filter((o) => o.capacityType === 'on-demand')
      .map((o) => o.priceUsdPerHour),
  );
const spot = (name: string): number =>
  Math.min(
    ...type(name)
      .offerings.filter((o) => o.capacityType === 'spot')
      .map((o) => o.priceUsdPerHour),
  );
const priced = (names: readonly string[], price = onDemand) =>
  names.map((n) => ({ price: price(n), allocatable: computeAllocatable(type(n)) }));

const context: MethodContext = { instanceTypes: () => TYPES, poolTotals: new Map(), nowMs: T0 };
const ON_DEMAND: NodeSelectorRequirement = { key: Label.capacityType, operator: 'In', values: ['on-demand'] };

function pod(name: string, cpuMillis: number, memoryGiB: number): Pod {
  return boundPod(name, undefined, {
    containers: [{ name: 'main', requests: { cpu: cpuMillis, memory: memoryGiB * GIB } }],
  });
}

/** A consolidatable on-demand node of `instanceType` holding `count` pods of (cpu, memory). */
function node(
  name: string,
  instanceType: string,
  count: number,
  [cpuMillis, memoryGiB]: readonly [number, number],
  requirements: readonly NodeSelectorRequirement[] = [ON_DEMAND],
): DisruptionCandidate {
  return consolidatable(name, {
    nodePool: pool('default', {}, { pool: { name: 'default', nodeClassName: 'default', requirements } }),
    instanceType,
    pods: Array.from({ length: count }, (_, i) => pod(`${name}-${i}`, cpuMillis, memoryGiB)),
    price: onDemand(instanceType),
  });
}

describe('fairPodCost', () => {
  const all = priced(['c6a.large', 'm6a.large', 'r6a.large']);
  const alloc = (name: string, resource: string) => computeAllocatable(type(name))[resource] ?? 0;
  it.each([
    [
      'a cpu-bound pod: its cpu share of the compute-optimised type',
      { cpu: 1000, memory: GIB, pods: 1 },
      onDemand('c6a.large') * (1000 / alloc('c6a.large', 'cpu')),
    ],
    [
      'a memory-bound pod: its memory share of the memory-optimised type',
      { cpu: 250, memory: 8 * GIB, pods: 1 },
      onDemand('r6a.large') * ((8 * GIB) / alloc('r6a.large', 'memory')),
    ],
    ['a pod no type holds', { cpu: 4000, memory: GIB, pods: 1 }, Number.POSITIVE_INFINITY],
    ['a resource no type has', { cpu: 100, 'nvidia.com/gpu': 1, pods: 1 }, Number.POSITIVE_INFINITY],
  ])('%s', (_, requests, expected) => {
    expect(fairPodCost(requests, all)).toBeCloseTo(expected, 9);
  });

  it('is priced at the offerings given: spot prices make it cheaper', () => {
    const requests = { cpu: 1000, memory: GIB, pods: 1 };
    expect(fairPodCost(requests, priced(['c6a.large'], spot))).toBeLessThan(
      fairPodCost(requests, priced(['c6a.large'])),
    );
  });
});

describe('makeExcessShare', () => {
  it('sees the memory a cpu-bound node pays for, which its fullest resource hides', () => {
    // Four 950m pods fill 97% of the r6a.xlarge's cpu, yet most of its price buys unused memory.
    const rFull = node('r-full', 'r6a.xlarge', 4, [950, 1]);
    // Three 1-cpu pods on a c6a.xlarge: 77% of its cpu, on the type that suits them.
    const cMost = node('c-most', 'c6a.xlarge', 3, [1000, 1]);
    const excess = makeExcessShare(context);
    expect(excess(rFull)).toBeGreaterThan(0.3);
    expect(excess(cMost)).toBeLessThan(0.25);
    expect(excess(rFull)).toBeGreaterThan(excess(cMost));
  });

  it('is small for a node its pods fill, and never below 0', () => {
    // Two pods that each fill a c6a.large's cpu, on the c6a.xlarge that holds both.
    const full = node('full', 'c6a.xlarge', 2, [1930, 1]);
    expect(makeExcessShare(context)(full)).toBeLessThan(0.02);
    // A node bought for less than its pods' fair costs (a discount) has no excess.
    expect(makeExcessShare(context)({ ...full, pricePerHour: 0.1 })).toBe(0);
  });

  it('prices pods on the instance types and capacity types the NodePool allows', () => {
    // In a pool of r6a nodes only, cpu-bound pods on an r6a.xlarge waste little.
    const onlyR = node(
      'r',
      'r6a.xlarge',
      4,
      [950, 1],
      [ON_DEMAND, { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['r6a'] }],
    );
    expect(makeExcessShare(context)(onlyR)).toBeLessThan(0.05);
    // Where the pool allows spot, the pods' fair cost is spot's: the on-demand node pays more.
    const onDemandPool = node('c', 'c6a.xlarge', 3, [1000, 1]);
    const spotPool = node('c', 'c6a.xlarge', 3, [1000, 1], []);
    expect(makeExcessShare(context)(spotPool)).toBeGreaterThan(makeExcessShare(context)(onDemandPool));
  });

  it('is 0 without a price or with a pod no type of the NodePool holds', () => {
    const { pricePerHour: _, ...unpriced } = node('u', 'c6a.xlarge', 1, [1000, 1]);
    const tooBig = node('big', 'r6a.xlarge', 1, [3000, 1]);
    expect(makeExcessShare({ ...context, instanceTypes: () => [type('c6a.large')] })(tooBig)).toBe(0);
    expect(makeExcessShare(context)(unpriced)).toBe(0);
  });
});

describe('repack order', () => {
  it('takes first the node that pays most beyond what its pods need', () => {
    const rFull = node('r-full', 'r6a.xlarge', 4, [950, 1]);
    const cMost = node('c-most', 'c6a.xlarge', 3, [1000, 1]);
    // Whatever node is re-solved, its pods go onto one c6a.xlarge: cheaper than the r6a.xlarge only.
    const simulate = simulation({
      replacements: [
        {
          name: 'replacement',
          nodePoolName: 'default',
          nodeClassName: 'default',
          labels: {},
          requirements: [ON_DEMAND, { key: Label.instanceType, operator: 'In', values: ['c6a.xlarge'] }],
          taints: [],
          startupTaints: [],
          pods: [],
          requests: {},
          instanceTypes: [{ name: 'c6a.xlarge', priceUsdPerHour: onDemand('c6a.xlarge') }],
          minValuesRelaxed: false,
        },
      ],
    });
    // A budget of one node: the package is the first node in repack's order.
    const [command] = repackConsolidation.computeCommands(
      [cMost, rFull],
      new Map([['default', 1]]),
      simulate,
      context,
    );
    expect(simulate.calls).toEqual([['r-full']]);
    expect(command?.candidates.map((c) => c.nodeClaim.name)).toEqual(['r-full']);
    expect(command?.replacements.map((r) => r.instanceTypes[0]?.name)).toEqual(['c6a.xlarge']);
  });
});
