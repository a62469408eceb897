import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InstanceType, NodeClaimPlan } from '../../../../shared/core/index.ts';
import {
  evaluateConsolidation,
  MIN_SAVINGS_ANNOTATION,
  minSavings,
  parseMinSavings,
  SPOT_TO_SPOT_MIN_TYPES,
} from '../../../../shared/usecases/disruption/consolidation.ts';
import type { DisruptionCandidate, MethodContext } from '../../../../shared/usecases/disruption/index.ts';
import { multiNodeConsolidation } from '../../../../shared/usecases/disruption/multi-node.ts';
import { repackConsolidation } from '../../../../shared/usecases/disruption/repack.ts';
import {
  replacementCapacity,
  SPOT_FAILED_ANNOTATION,
  SPOT_RETRY_AFTER_MS,
  SPOT_TO_SPOT_OFF,
} from '../../../../shared/usecases/disruption/replacement-capacity.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { boundPod, consolidatable, pool, READY_CONDITIONS, simulation, T0 } from './builders.ts';

// Consolidation's pure decisions with a scripted simulation: which commands it proposes, and that
// none raises the cost, strands a pod or exceeds a budget.

/** An instance type with an on-demand and (optionally) a spot offering in us-east-1a. */
function itype(name: string, onDemand: number, spot?: number): InstanceType {
  return {
    name,
    labels: { 'node.kubernetes.io/instance-type': name },
    capacity: { cpu: 4000, memory: 16 * 2 ** 30, pods: 58 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings: [
      { zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: onDemand, available: true },
      ...(spot === undefined
        ? []
        : [{ zone: 'us-east-1a', capacityType: 'spot' as const, priceUsdPerHour: spot, available: true }]),
    ],
  };
}

function context(types: readonly InstanceType[], totals = new Map(), spotToSpot = false): MethodContext {
  return { instanceTypes: () => types, poolTotals: totals, nowMs: T0, spotToSpot };
}

/** A consolidatable candidate of `pods` pods on a `type` node at `price` $/h. */
function node(
  name: string,
  price: number,
  o: {
    pods?: number;
    capacityType?: string;
    type?: string;
    poolName?: string;
    annotations?: Record<string, string>;
    policy?: 'WhenEmptyOrUnderutilized' | 'Balanced' | 'WhenEmpty';
  } = {},
): DisruptionCandidate {
  return consolidatable(name, {
    nodePool: pool(
      o.poolName ?? 'default',
      { consolidationPolicy: o.policy ?? 'WhenEmptyOrUnderutilized' },
      o.annotations === undefined ? {} : { annotations: o.annotations },
    ),
    instanceType: o.type ?? 'm5.xlarge',
    ...(o.capacityType === undefined ? {} : { capacityType: o.capacityType }),
    pods: Array.from({ length: o.pods ?? 1 }, (_, i) => boundPod(`${name}-${i}`)),
    price,
  });
}

/** A replacement the simulation plans, allowing `types` (cheapest first) and `capacityTypes`. */
function replacementOf(types: readonly InstanceType[], capacityTypes = ['on-demand', 'spot']): NodeClaimPlan {
  return {
    name: 'replacement',
    nodePoolName: 'default',
    nodeClassName: 'default',
    labels: {},
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: capacityTypes },
      { key: 'node.kubernetes.io/instance-type', operator: 'In', values: types.map((t) => t.name) },
    ],
    taints: [],
    startupTaints: [],
    pods: [],
    requests: {},
    instanceTypes: types.map((t) => ({
      name: t.name,
      priceUsdPerHour: Math.min(...t.offerings.map((o) => o.priceUsdPerHour)),
    })),
    minValuesRelaxed: false,
  };
}

const all = (n: number) => new Map([['default', n]]);
const values = (plan: NodeClaimPlan | undefined, key: string) =>
  plan?.requirements.find((r) => r.key === key)?.values ?? [];

describe('which nodes consolidation looks at', () => {
  it.each([
    ['underutilized, Consolidatable', node('a', 0.2), true],
    ['empty (emptiness takes it)', { ...node('a', 0.2), reschedulablePods: [] }, false],
    ['WhenEmpty', node('a', 0.2, { policy: 'WhenEmpty' }), false],
    ['Balanced', node('a', 0.2, { policy: 'Balanced' }), true],
    ['no price', { ...node('a', 0.2), pricePerHour: undefined }, false],
    [
      'a pod that blocks',
      {
        ...node('a', 0.2),
        blockers: [{ pod: 'apps/x', kind: 'doNotDisrupt' as const, why: 'do-not-disrupt' }],
      },
      false,
    ],
    [
      'not Consolidatable',
      {
        ...node('a', 0.2),
        nodeClaim: { ...node('a', 0.2).nodeClaim, status: { conditions: READY_CONDITIONS } },
      },
      false,
    ],
  ] as const)('%s', (_, c, expected) => {
    expect(singleNodeConsolidation.shouldDisrupt(c as DisruptionCandidate, T0)).toBe(expected);
    expect(multiNodeConsolidation.shouldDisrupt(c as DisruptionCandidate, T0)).toBe(expected);
    expect(repackConsolidation.shouldDisrupt(c as DisruptionCandidate, T0)).toBe(expected);
  });

  it('reads the NodePool minimum savings as a percentage or a fraction, else none (strictly cheaper)', () => {
    expect(minSavings({ [MIN_SAVINGS_ANNOTATION]: '25%' })).toBe(0.25);
    expect(minSavings({ [MIN_SAVINGS_ANNOTATION]: '0.05' })).toBe(0.05);
    expect(minSavings(undefined)).toBe(0);
    expect(minSavings({})).toBe(0);
  });

  it.each(['lots', '1', '-5%', '150%'])(
    'leaves the nodes of a NodePool whose minimum savings is %s alone',
    (raw) => {
      const annotations = { [MIN_SAVINGS_ANNOTATION]: raw };
      const parsed = parseMinSavings(annotations);
      expect(parsed.kind).toBe('invalid');
      expect(parsed.kind === 'invalid' ? parsed.problem : '').toContain(`"${raw}"`);
      const c = node('a', 0.2, { annotations });
      for (const method of [singleNodeConsolidation, multiNodeConsolidation, repackConsolidation]) {
        expect(method.shouldDisrupt(c, T0)).toBe(false);
      }
    },
  );
});

describe('single-node consolidation', () => {
  const m5large = itype('m5.large', 0.096, 0.04);
  const m5xlarge = itype('m5.xlarge', 0.192, 0.08);

  it('deletes a node whose pods fit on the others', () => {
    const [command] = singleNodeConsolidation.computeCommands(
      [node('a', 0.192)],
      all(1),
      simulation(),
      context([]),
    );
    expect(command).toMatchObject({
      method: singleNodeConsolidation,
      reason: 'Underutilized',
      replacements: [],
      podsMoved: 1,
    });
  });

  it('replaces a node with a cheaper one, keeping only the instance types that save the minimum', () => {
    const simulate = simulation({ replacements: [replacementOf([m5large, m5xlarge], ['on-demand'])] });
    const [command] = singleNodeConsolidation.computeCommands(
      [node('a', 0.192)],
      all(1),
      simulate,
      context([m5large, m5xlarge]),
    );
    expect(values(command?.replacements[0], 'node.kubernetes.io/instance-type')).toEqual(['m5.large']);
    expect(command?.policy).toBe('WhenEmptyOrUnderutilized, min savings 0%');
  });

  it('replaces for any saving by default, as Karpenter, and for less than a minimum the NodePool sets never', () => {
    const nearly = itype('m5a.xlarge', 0.18);
    const simulate = simulation({ replacements: [replacementOf([nearly], ['on-demand'])] });
    expect(
      singleNodeConsolidation.computeCommands([node('a', 0.192)], all(1), simulate, context([nearly])),
    ).toHaveLength(1);
    const strict = node('a', 0.192, { annotations: { [MIN_SAVINGS_ANNOTATION]: '10%' } });
    expect(singleNodeConsolidation.computeCommands([strict], all(1), simulate, context([nearly]))).toEqual(
      [],
    );
    const lenient = node('a', 0.192, { annotations: { [MIN_SAVINGS_ANNOTATION]: '5%' } });
    expect(
      singleNodeConsolidation.computeCommands([lenient], all(1), simulate, context([nearly])),
    ).toHaveLength(1);
  });

  it('never replaces a node with one of the same price', () => {
    const same = itype('m5a.xlarge', 0.192);
    const simulate = simulation({ replacements: [replacementOf([same], ['on-demand'])] });
    expect(
      singleNodeConsolidation.computeCommands([node('a', 0.192)], all(1), simulate, context([same])),
    ).toEqual([]);
  });

  it('replaces on-demand nodes with spot where the NodePool allows spot', () => {
    const simulate = simulation({ replacements: [replacementOf([m5large])] });
    const [command] = singleNodeConsolidation.computeCommands(
      [node('a', 0.192)],
      all(1),
      simulate,
      context([m5large]),
    );
    expect(values(command?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
  });

  it('replaces spot with spot only with at least 15 cheaper instance types, and launches the 15 cheapest', () => {
    const few = Array.from({ length: 10 }, (_, i) => itype(`t${i}.large`, 0.1, 0.02 + i * 0.001));
    const spotNode = node('a', 0.08, { capacityType: 'spot' });
    const simulateFew = simulation({ replacements: [replacementOf(few)] });
    expect(
      singleNodeConsolidation.computeCommands([spotNode], all(1), simulateFew, context(few, new Map(), true)),
    ).toEqual([]);
    const many = Array.from({ length: 20 }, (_, i) => itype(`t${i}.large`, 0.1, 0.02 + i * 0.001));
    const simulateMany = simulation({ replacements: [replacementOf(many)] });
    const [command] = singleNodeConsolidation.computeCommands(
      [spotNode],
      all(1),
      simulateMany,
      context(many, new Map(), true),
    );
    expect(values(command?.replacements[0], 'node.kubernetes.io/instance-type')).toHaveLength(
      SPOT_TO_SPOT_MIN_TYPES,
    );
  });

  it('skips a node whose pods fit nowhere else, and takes the next', () => {
    const simulate = simulation({ unschedulableOn: ['a'] });
    const [command] = singleNodeConsolidation.computeCommands(
      [node('a', 0.4), node('b', 0.192)],
      all(2),
      simulate,
      context([]),
    );
    expect(command?.candidates.map((c) => c.nodeClaim.name)).toEqual(['b']);
  });

  it('stays within the budget', () => {
    expect(
      singleNodeConsolidation.computeCommands([node('a', 0.2)], all(0), simulation(), context([])),
    ).toEqual([]);
  });
});

describe('pinning replacements to spot', () => {
  const m5large = itype('m5.large', 0.096, 0.04);
  const both = simulation({ replacements: [replacementOf([m5large])] });
  const mixed = [node('d', 0.192), node('s', 0.08, { capacityType: 'spot' })];

  it.each([
    ['on-demand nodes', [node('a', 0.192), node('b', 0.192)]],
    ['a mixed package (spot and on-demand)', mixed],
  ])('pins the replacement of %s to spot when it could be spot or on-demand', (_, candidates) => {
    const [command] = multiNodeConsolidation.computeCommands(candidates, all(2), both, context([m5large]));
    expect(command?.candidates).toHaveLength(2);
    expect(values(command?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
  });

  it('keeps on-demand where the replacement can only be on-demand', () => {
    const onDemand = simulation({ replacements: [replacementOf([m5large], ['on-demand'])] });
    const [command] = multiNodeConsolidation.computeCommands(mixed, all(2), onDemand, context([m5large]));
    expect(values(command?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['on-demand']);
  });

  it.each([
    [{ allowed: ['on-demand', 'spot'], candidates: ['on-demand', 'spot'] }, ['spot']],
    [{ allowed: ['on-demand', 'spot', 'reserved'], candidates: ['on-demand'] }, ['spot']],
    [{ allowed: ['on-demand', 'reserved'], candidates: ['on-demand'] }, ['on-demand']],
    [{ allowed: ['on-demand'], candidates: ['spot'] }, ['on-demand']],
    [{ allowed: ['on-demand', 'spot'], candidates: [undefined] }, ['spot']],
  ])('%j → %j', (input, expected) => {
    const choice = replacementCapacity({ ...input, allowed: new Set(input.allowed), spotToSpot: false });
    expect(choice.kind === 'capacityTypes' ? [...choice.capacityTypes].sort() : choice).toEqual(expected);
  });
});

describe('a spot shortage: pinned to spot only while spot is there', () => {
  /** m5.large: on-demand $0.096/h; spot $0.04/h, available or backed off after insufficient capacity. */
  const large = (spotAvailable: boolean): InstanceType => {
    const t = itype('m5.large', 0.096, 0.04);
    return {
      ...t,
      offerings: t.offerings.map((o) => (o.capacityType === 'spot' ? { ...o, available: spotAvailable } : o)),
    };
  };
  const toLarge = simulation({ replacements: [replacementOf([large(true)])] });
  const failedAt = (ms: number) => ({
    ...context([large(true)]),
    spotFailedAtMs: new Map([['default', ms]]),
  });
  /** The command that replaces node a ($0.192/h, on-demand) by an m5.large under `ctx`. */
  const replaceA = (ctx: MethodContext) =>
    singleNodeConsolidation.computeCommands([node('a', 0.192)], all(1), toLarge, ctx)[0];

  it('replaces on-demand nodes by cheaper on-demand ones while every spot offering is backed off, and says so', () => {
    const command = replaceA(context([large(false)]));
    expect(values(command?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['on-demand']);
    expect(command?.replacementAnnotations).toEqual({ [SPOT_FAILED_ANNOTATION]: new Date(T0).toISOString() });
    // With spot available, spot as Karpenter, and nothing to remember.
    const spot = replaceA(context([large(true)]));
    expect(values(spot?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
    expect(spot?.replacementAnnotations).toBeUndefined();
  });

  it('does not pin to spot for SPOT_RETRY_AFTER_MS after a replacement of the NodePool failed, then does again', () => {
    const lately = T0 - SPOT_RETRY_AFTER_MS + 60_000;
    const command = replaceA(failedAt(lately));
    expect(values(command?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['on-demand']);
    // The replacements inherit the failure's time: the memory does not grow longer for them.
    expect(command?.replacementAnnotations).toEqual({
      [SPOT_FAILED_ANNOTATION]: new Date(lately).toISOString(),
    });
    const later = replaceA(failedAt(T0 - SPOT_RETRY_AFTER_MS));
    expect(values(later?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
  });

  it('proposes nothing when on-demand is no cheaper than the candidates and spot is short', () => {
    const onDemandNode = node('a', 0.096, { type: 'm5a.large' });
    expect(
      singleNodeConsolidation.computeCommands([onDemandNode], all(1), toLarge, context([large(false)])),
    ).toEqual([]);
    // A NodePool of spot only stays pinned to spot, and so finds no replacement.
    const spotOnly = simulation({ replacements: [replacementOf([large(false)], ['spot'])] });
    expect(
      singleNodeConsolidation.computeCommands([node('a', 0.192)], all(1), spotOnly, context([large(false)])),
    ).toEqual([]);
  });
});

describe('spot-to-spot consolidation (off by default, as Karpenter)', () => {
  const many = Array.from({ length: 20 }, (_, i) => itype(`t${i}.large`, 0.1, 0.02 + i * 0.001));
  const spot = (name: string) => node(name, 0.08, { capacityType: 'spot' });
  const toSpot = simulation({ replacements: [replacementOf(many)] });

  it('off: a spot node is deleted when its pods fit elsewhere, never replaced', () => {
    expect(singleNodeConsolidation.computeCommands([spot('a')], all(1), toSpot, context(many))).toEqual([]);
    expect(evaluateConsolidation(singleNodeConsolidation, [spot('a')], toSpot, context(many))).toEqual({
      kind: 'invalid',
      why: SPOT_TO_SPOT_OFF,
    });
    const [command] = singleNodeConsolidation.computeCommands(
      [spot('a')],
      all(1),
      simulation(),
      context(many),
    );
    expect(command?.replacements).toEqual([]);
    expect(
      multiNodeConsolidation.computeCommands([spot('a'), spot('b')], all(2), toSpot, context(many)),
    ).toEqual([]);
  });

  it('on: spot nodes are replaced by cheaper spot nodes, single- and multi-node', () => {
    const on = context(many, new Map(), true);
    const [single] = singleNodeConsolidation.computeCommands([spot('a')], all(1), toSpot, on);
    expect(values(single?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
    const [multi] = multiNodeConsolidation.computeCommands([spot('a'), spot('b')], all(2), toSpot, on);
    expect(multi?.candidates).toHaveLength(2);
    expect(values(multi?.replacements[0], 'karpenter.sh/capacity-type')).toEqual(['spot']);
  });

  it('repack leaves spot nodes out while it is off, and takes them when it is on', () => {
    const xlarge = itype('m5.xlarge', 0.192, 0.07);
    const nodes = [spot('s1'), spot('s2'), node('d1', 0.192), node('d2', 0.192), node('d3', 0.192)];
    const two = simulation({ replacements: [replacementOf([xlarge]), replacementOf([xlarge])] });
    const [off] = repackConsolidation.computeCommands(nodes, all(5), two, context([xlarge]));
    expect(off?.candidates.map((c) => c.nodeClaim.name).sort()).toEqual(['d1', 'd2', 'd3']);
    const [on] = repackConsolidation.computeCommands(nodes, all(5), two, context([xlarge], new Map(), true));
    expect(on?.candidates).toHaveLength(5);
  });
});

describe('multi-node consolidation', () => {
  it('takes the largest set whose pods all fit, found by binary search', () => {
    const candidates = ['a', 'b', 'c', 'd', 'e'].map((n) => node(n, 0.192));
    // The pods of up to three nodes fit on the rest; with a fourth something has no place.
    const base = simulation();
    const simulate = (cs: readonly DisruptionCandidate[]) =>
      cs.length <= 3
        ? base(cs)
        : {
            nodeClaims: [],
            placements: [],
            unschedulable: [
              { pod: { uid: 'x', namespace: 'a', name: 'x' }, reasons: [], message: 'no room' },
            ],
          };
    const [command] = multiNodeConsolidation.computeCommands(candidates, all(5), simulate, context([]));
    expect(command?.candidates).toHaveLength(3);
    expect(command?.replacements).toEqual([]);
  });

  it('plans at most one replacement, as Karpenter: never an identical node as part of a package', () => {
    const small = itype('m5.large', 0.096);
    const candidates = [node('a', 0.384, { type: 'm5.2xlarge' }), node('b', 0.096, { type: 'm5.large' })];
    const simulate = simulation({
      replacements: [replacementOf([small], ['on-demand']), replacementOf([small], ['on-demand'])],
    });
    expect(multiNodeConsolidation.computeCommands(candidates, all(2), simulate, context([small]))).toEqual(
      [],
    );
    // One m5.large for both would replace b by a node just like it, b's pods moving for nothing:
    // refused, and a is single-node consolidation's to replace.
    const one = simulation({ replacements: [replacementOf([small], ['on-demand'])] });
    expect(multiNodeConsolidation.computeCommands(candidates, all(2), one, context([small]))).toEqual([]);
    expect(
      singleNodeConsolidation
        .computeCommands(candidates, all(2), one, context([small]))[0]
        ?.candidates.map((c) => c.nodeClaim.name),
    ).toEqual(['a']);
    // A replacement of a type no candidate has, cheaper than both, is a valid package.
    const medium = itype('m5.xlarge', 0.192);
    const bigger = [node('a', 0.384, { type: 'm5.2xlarge' }), node('b', 0.384, { type: 'm5.2xlarge' })];
    const toMedium = simulation({ replacements: [replacementOf([medium], ['on-demand'])] });
    const [command] = multiNodeConsolidation.computeCommands(bigger, all(2), toMedium, context([medium]));
    expect(command?.candidates).toHaveLength(2);
    expect(command?.replacements).toHaveLength(1);
  });

  it('never replaces a candidate by a node of its own type that is not cheaper by the minimum', () => {
    // The replacement could be an m5.large (0.096) or an m6i.large (0.096): both cost what b does.
    const large = itype('m5.large', 0.096);
    const m6iLarge = itype('m6i.large', 0.096);
    const candidates = [node('a', 0.768, { type: 'm5.4xlarge' }), node('b', 0.096, { type: 'm5.large' })];
    const simulate = simulation({ replacements: [replacementOf([large, m6iLarge], ['on-demand'])] });
    expect(
      multiNodeConsolidation.computeCommands(candidates, all(2), simulate, context([large, m6iLarge])),
    ).toEqual([]);
  });

  it("refuses a package in which one NodePool's nodes would be replaced by their like", () => {
    // a (pool web) goes for 0.384 saved; b (pool batch) would be swapped for an m5.large of batch.
    const large = itype('m5.large', 0.096);
    const a = node('a', 0.384, { type: 'm5.2xlarge', poolName: 'web' });
    const b = node('b', 0.096, { type: 'm5.large', poolName: 'batch' });
    const batchLarge = { ...replacementOf([large], ['on-demand']), nodePoolName: 'batch' };
    const simulate = simulation({ replacements: [batchLarge] });
    const budgets = new Map([
      ['web', 2],
      ['batch', 2],
    ]);
    expect(multiNodeConsolidation.computeCommands([a, b], budgets, simulate, context([large]))).toEqual([]);
    // In repack too, which may use its candidates' types: the web nodes go without b.
    const c = node('c', 0.384, { type: 'm5.2xlarge', poolName: 'web' });
    const repacked = repackConsolidation.computeCommands([a, b, c], budgets, simulate, context([large]));
    expect(repacked.flatMap((k) => k.candidates.map((x) => x.nodeClaim.name))).toEqual(['a', 'c']);
  });

  it('under Balanced, rejects a move whose savings are small against the disruption it causes', () => {
    const balanced = (n: string, price: number, pods: number) => node(n, price, { policy: 'Balanced', pods });
    const candidates = [balanced('a', 0.01, 10), balanced('b', 0.01, 10)];
    const totals = new Map([['default', { pricePerHour: 10, disruptionCost: 40 }]]);
    expect(
      multiNodeConsolidation.computeCommands(candidates, all(2), simulation(), context([], totals)),
    ).toEqual([]);
    const cheapTotals = new Map([['default', { pricePerHour: 0.05, disruptionCost: 40 }]]);
    expect(
      multiNodeConsolidation.computeCommands(candidates, all(2), simulation(), context([], cheapTotals)),
    ).toHaveLength(1);
  });
});

describe('repack', () => {
  const xlarge = itype('m5.xlarge', 0.192);
  const four = ['a', 'b', 'c', 'd'].map((n) => node(n, 0.192));

  it('moves the pods of several part-full nodes onto fewer new ones, the largest such set', () => {
    // Whatever set is re-solved, its pods need two new m5.xlarge.
    const simulate = simulation({
      replacements: [replacementOf([xlarge], ['on-demand']), replacementOf([xlarge], ['on-demand'])],
    });
    const [command] = repackConsolidation.computeCommands(four, all(4), simulate, context([xlarge]));
    expect(command).toMatchObject({ method: repackConsolidation, reason: 'Underutilized', podsMoved: 4 });
    expect(command?.candidates).toHaveLength(4);
    expect(command?.replacements).toHaveLength(2);
    // Two candidates for two new nodes is no repack (and one for one is single-node's).
    expect(simulate.calls.every((c) => c.length >= 3)).toBe(true);
  });

  it('saves the minimum on the whole package, however many new nodes its pods need', () => {
    const one = [replacementOf([xlarge], ['on-demand'])];
    // Two m5.xlarge ($0.384/h) for three nodes at $0.20/h each saves 36%; for three at $0.125/h
    // it costs more than they do.
    const two = simulation({ replacements: [...one, ...one] });
    const cheap = ['a', 'b', 'c'].map((n) => node(n, 0.125));
    expect(repackConsolidation.computeCommands(cheap, all(3), two, context([xlarge]))).toEqual([]);
    const dear = ['a', 'b', 'c'].map((n) => node(n, 0.2));
    expect(repackConsolidation.computeCommands(dear, all(3), two, context([xlarge]))).toHaveLength(1);
    // Four small nodes for three large ones, when the four cost less than the three.
    const small = itype('m5.large', 0.096);
    const smaller = simulation({
      replacements: Array.from({ length: 4 }, () => replacementOf([small], ['on-demand'])),
    });
    const large = ['a', 'b', 'c'].map((n) => node(n, 0.192));
    const [command] = repackConsolidation.computeCommands(large, all(3), smaller, context([small]));
    expect(command?.replacements).toHaveLength(4);
    // The same four for three m5.large: more than they cost.
    const same = ['a', 'b', 'c'].map((n) => node(n, 0.096, { type: 'm5.large' }));
    expect(repackConsolidation.computeCommands(same, all(3), smaller, context([small]))).toEqual([]);
  });

  it('stays within the budget', () => {
    const simulate = simulation({ replacements: [replacementOf([xlarge], ['on-demand'])] });
    expect(repackConsolidation.computeCommands(four, all(0), simulate, context([xlarge]))).toEqual([]);
    const [two] = repackConsolidation.computeCommands(four, all(2), simulate, context([xlarge]));
    expect(two?.candidates).toHaveLength(2);
    const [command] = repackConsolidation.computeCommands(four, all(3), simulate, context([xlarge]));
    expect(command?.candidates).toHaveLength(3);
  });

  it('re-solves one node onto several smaller ones when no larger package consolidates', () => {
    // One m5.4xlarge whose pods' cheapest plan is an m5.xlarge and an m5.large.
    const large = itype('m5.large', 0.096);
    const simulate = simulation({
      replacements: [replacementOf([xlarge], ['on-demand']), replacementOf([large], ['on-demand'])],
    });
    const big = node('big', 0.768, { type: 'm5.4xlarge', pods: 4 });
    const [command] = repackConsolidation.computeCommands([big], all(1), simulate, context([xlarge, large]));
    expect(command).toMatchObject({ method: repackConsolidation, podsMoved: 4 });
    expect(command?.replacements.map((r) => r.instanceTypes[0]?.name)).toEqual(['m5.xlarge', 'm5.large']);
    // The same plan for a node that costs less than it: nothing.
    const small = node('small', 0.25, { type: 'm5.2xlarge', pods: 4 });
    expect(repackConsolidation.computeCommands([small], all(1), simulate, context([xlarge, large]))).toEqual(
      [],
    );
  });

  it('takes first the nodes that pay most beyond what their pods need', () => {
    // Nodes of 4 cpu; each pod requests 100m.
    const full = node('full', 0.192, { pods: 36 });
    const half = node('half', 0.192, { pods: 20 });
    const idle = node('idle', 0.192, { pods: 1 });
    const dearIdle = node('dear-idle', 0.384, { pods: 1 });
    const simulate = simulation({ replacements: [replacementOf([xlarge], ['on-demand'])] });
    const [command] = repackConsolidation.computeCommands(
      [full, half, idle, dearIdle],
      all(3),
      simulate,
      context([xlarge]),
    );
    expect(command?.candidates.map((c) => c.nodeClaim.name)).toEqual(['dear-idle', 'idle', 'half']);
  });
});

describe('properties', () => {
  const shape = fc.record({
    price: fc.double({ min: 0.01, max: 2, noNaN: true }),
    pods: fc.integer({ min: 1, max: 5 }),
    stuck: fc.boolean(),
  });
  const world = fc.record({
    nodes: fc.array(shape, { minLength: 1, maxLength: 8 }),
    budget: fc.integer({ min: 0, max: 8 }),
    replacementPrices: fc.array(fc.double({ min: 0.005, max: 3, noNaN: true }), { maxLength: 3 }),
  });

  it('a command never raises $/hour, never strands a pod and never exceeds a budget', () => {
    fc.assert(
      fc.property(world, ({ nodes, budget, replacementPrices }) => {
        const candidates = nodes.map((n, i) => node(`n${i}`, n.price, { pods: n.pods }));
        const types = replacementPrices.map((p, i) => itype(`r${i}.large`, p));
        const stuck = nodes.flatMap((n, i) => (n.stuck ? [`n${i}`] : []));
        const simulate = simulation({
          replacements: types.map((t) => replacementOf([t], ['on-demand'])),
          unschedulableOn: stuck,
        });
        for (const method of [multiNodeConsolidation, repackConsolidation, singleNodeConsolidation]) {
          for (const command of method.computeCommands(candidates, all(budget), simulate, context(types))) {
            expect(command.candidates.length).toBeLessThanOrEqual(budget);
            // Karpenter's methods plan one replacement at most; repack as many as its pods need.
            expect(command.method).toBe(method);
            expect(command.replacements.length).toBeLessThanOrEqual(method.consolidation.maxReplacements);
            // Every pod of the candidates has a place: none of them was stuck in the simulation.
            expect(command.candidates.some((c) => stuck.includes(c.nodeClaim.name))).toBe(false);
            const before = command.candidates.reduce((s, c) => s + (c.pricePerHour ?? 0), 0);
            const after = command.replacements.reduce((s, r) => {
              const allowed = new Set(values(r, 'node.kubernetes.io/instance-type'));
              const worst = Math.max(
                ...types.filter((t) => allowed.has(t.name)).map((t) => t.offerings[0]?.priceUsdPerHour ?? 0),
              );
              return s + worst;
            }, 0);
            // Whichever allowed type launches, the command is strictly cheaper.
            expect(after).toBeLessThan(before);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('evaluateConsolidation names why a set cannot be consolidated', () => {
    const simulate = simulation({ unschedulableOn: ['a'] });
    expect(evaluateConsolidation(singleNodeConsolidation, [node('a', 0.2)], simulate, context([]))).toEqual({
      kind: 'invalid',
      why: '1 pods would have no place',
    });
  });
});

describe('prices the catalog only assumes', () => {
  /** An instance type whose spot price is assumed (no Spot Advisor estimate). */
  const assumedSpot = (name: string, onDemand: number, spot: number): InstanceType => {
    const t = itype(name, onDemand, spot);
    return {
      ...t,
      offerings: t.offerings.map((o) => (o.capacityType === 'spot' ? { ...o, priceAssumed: true } : o)),
    };
  };
  const spotNode = (name: string, price: number) => ({
    ...node(name, price, { capacityType: 'spot', type: 'c8i.xlarge' }),
    priceAssumed: true as const,
  });

  it('say so after the figures that count them, when a replacement saves too little', () => {
    const big = assumedSpot('c8i.2xlarge', 0.37484, 0.1312);
    const simulate = simulation({ replacements: [replacementOf([big], ['spot'])] });
    expect(
      evaluateConsolidation(
        multiNodeConsolidation,
        [spotNode('a', 0.0656), spotNode('b', 0.0656)],
        simulate,
        context([big], new Map(), true),
      ),
    ).toEqual({
      kind: 'invalid',
      why: 'replacements cost $0.1312/h (assumed spot price), more than 100% of $0.1312/h (assumed spot price)',
    });
    const known = itype('c8i.2xlarge', 0.37484, 0.1312);
    expect(
      evaluateConsolidation(
        multiNodeConsolidation,
        [node('a', 0.0656, { capacityType: 'spot' }), node('b', 0.0656, { capacityType: 'spot' })],
        simulation({ replacements: [replacementOf([known], ['spot'])] }),
        context([known], new Map(), true),
      ),
    ).toEqual({ kind: 'invalid', why: 'replacements cost $0.1312/h, more than 100% of $0.1312/h' });
  });

  it('are told on the command: the capacity types of the replacements whose cheapest price is assumed', () => {
    const small = assumedSpot('c8i.xlarge', 0.18742, 0.0656);
    const result = evaluateConsolidation(
      singleNodeConsolidation,
      [node('a', 0.37484, { type: 'c8i.2xlarge' })],
      simulation({ replacements: [replacementOf([small])] }),
      context([small]),
    );
    expect(result.kind === 'command' ? result.command.replacementsAssumed : result).toEqual(['spot']);
    const odOnly = evaluateConsolidation(
      singleNodeConsolidation,
      [node('a', 0.37484, { type: 'c8i.2xlarge' })],
      simulation({ replacements: [replacementOf([small], ['on-demand'])] }),
      context([small]),
    );
    expect(odOnly).toMatchObject({ kind: 'command' });
    expect(odOnly.kind === 'command' ? odOnly.command.replacementsAssumed : 'invalid').toBeUndefined();
  });
});
