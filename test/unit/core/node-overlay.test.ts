import { describe, expect, it } from 'vitest';
import {
  adjustPrice,
  applyNodeOverlays,
  computeAllocatable,
  type InstanceType,
  type NodeOverlay,
  type OverlayPool,
  orderNodeOverlays,
  parsePriceChange,
  resolveNodeOverlays,
  solve,
} from '../../../shared/core/index.ts';
import { fakeInstanceType, nodePool, pod, solveInput } from './builders.ts';

const type = (name: string, memoryGiB: number, price: number) =>
  fakeInstanceType({ name, cpu: 2, memoryGiB, price, capacityTypes: ['on-demand', 'spot'] });
const M5 = type('m5.large', 8, 0.096);
const C5 = type('c5.large', 4, 0.085);
const TYPES = [M5, C5];
const POOL: OverlayPool = { name: 'default', labels: { team: 'a' } };

const onType = (name: string) => [
  { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: [name] },
];

function overlay(o: Partial<NodeOverlay> & { readonly name: string }): NodeOverlay {
  return { weight: 0, requirements: [], ...o };
}

/** An overlay that sets the price of one type's offerings (all types when `type` is undefined). */
function priced(name: string, weight: number, type: string | undefined, usd: number): NodeOverlay {
  return overlay({
    name,
    weight,
    requirements: type === undefined ? [] : onType(type),
    price: { kind: 'price', usd },
  });
}

/** An overlay that adds resources to one type (all types when `type` is undefined). */
function extended(
  name: string,
  weight: number,
  type: string | undefined,
  capacity: Record<string, number>,
): NodeOverlay {
  return overlay({ name, weight, requirements: type === undefined ? [] : onType(type), capacity });
}

function resolve(overlays: readonly NodeOverlay[], pools: readonly OverlayPool[] = [POOL]) {
  return resolveNodeOverlays(overlays, pools, () => TYPES);
}

function priceOf(types: readonly InstanceType[], name: string, capacityType: string): number | undefined {
  return types.find((t) => t.name === name)?.offerings.find((o) => o.capacityType === capacityType)
    ?.priceUsdPerHour;
}

describe('parsePriceChange', () => {
  it.each([
    ['0.05', undefined, { kind: 'price', usd: 0.05 }],
    ['3', undefined, { kind: 'price', usd: 3 }],
    [undefined, '+0.1', { kind: 'delta', usd: 0.1 }],
    [undefined, '-.5', { kind: 'delta', usd: -0.5 }],
    [undefined, '+10%', { kind: 'percent', percent: 10 }],
    [undefined, '-15.5%', { kind: 'percent', percent: -15.5 }],
    [undefined, '-100%', { kind: 'percent', percent: -100 }],
    [undefined, undefined, undefined],
  ])('price %s, adjustment %s', (price, adjustment, expected) => {
    expect(parsePriceChange(price, adjustment)).toEqual(expected);
  });

  it.each([
    ['-1', undefined],
    ['abc', undefined],
    [undefined, '10%'],
    [undefined, '-150%'],
    [undefined, '0.5'],
    ['1', '+1'],
  ])('rejects price %s, adjustment %s with a reason', (price, adjustment) => {
    expect(parsePriceChange(price, adjustment)).toHaveProperty('problem');
  });
});

describe('adjustPrice', () => {
  it.each([
    [{ kind: 'price', usd: 0.02 } as const, 0.02],
    [{ kind: 'delta', usd: 0.04 } as const, 0.14],
    [{ kind: 'delta', usd: -0.5 } as const, 0],
    [{ kind: 'percent', percent: -50 } as const, 0.05],
    [{ kind: 'percent', percent: -100 } as const, 0],
    [{ kind: 'percent', percent: 20 } as const, 0.12],
  ])('%o on 0.1 is %d', (change, expected) => {
    expect(adjustPrice(0.1, change)).toBeCloseTo(expected, 10);
  });
});

describe('orderNodeOverlays', () => {
  it('puts higher weights first, then later names first', () => {
    const ordered = orderNodeOverlays([
      overlay({ name: 'a', weight: 1 }),
      overlay({ name: 'b', weight: 10 }),
      overlay({ name: 'c', weight: 1 }),
      overlay({ name: 'd' }),
    ]);
    expect(ordered.map((o) => o.name)).toEqual(['b', 'c', 'a', 'd']);
  });
});

describe('resolveNodeOverlays and applyNodeOverlays', () => {
  it('changes only the prices of the offerings the requirements select (type and capacity type)', () => {
    const savings = overlay({
      name: 'savings-plan',
      requirements: [
        ...onType('m5.large'),
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
      ],
      price: { kind: 'percent', percent: -50 },
    });
    const types = applyNodeOverlays(resolve([savings]), 'default', TYPES);
    expect(priceOf(types, 'm5.large', 'on-demand')).toBeCloseTo(0.048, 10);
    expect(priceOf(types, 'm5.large', 'spot')).toBeCloseTo(0.096 * 0.4, 10);
    expect(priceOf(types, 'c5.large', 'on-demand')).toBe(0.085);
    expect(
      types.find((t) => t.name === 'm5.large')?.offerings.find((o) => o.capacityType === 'on-demand')
        ?.priceOverlaid,
    ).toBe(true);
    expect(types[1]).toBe(C5);
  });

  it('matches the NodePool name and template labels, and custom labels absent from the type never match In', () => {
    const byPool = overlay({
      name: 'p',
      requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['other'] }],
      price: { kind: 'price', usd: 1 },
    });
    const byLabel = overlay({
      name: 'l',
      requirements: [{ key: 'team', operator: 'In', values: ['a'] }],
      price: { kind: 'price', usd: 2 },
    });
    const absent = overlay({
      name: 'x',
      requirements: [{ key: 'example.com/tier', operator: 'Exists' }],
      price: { kind: 'price', usd: 3 },
    });
    const resolution = resolve([byPool, byLabel, absent], [POOL, { name: 'other' }]);
    expect(priceOf(applyNodeOverlays(resolution, 'default', TYPES), 'm5.large', 'on-demand')).toBe(2);
    expect(priceOf(applyNodeOverlays(resolution, 'other', TYPES), 'm5.large', 'on-demand')).toBe(1);
    expect(resolution.conflicts.size).toBe(0);
  });

  it('lets the higher weight set the price; a lower weight leaves it', () => {
    const high = priced('high', 10, 'm5.large', 0.01);
    const low = priced('low', 1, 'm5.large', 0.5);
    const resolution = resolve([low, high]);
    expect(priceOf(applyNodeOverlays(resolution, 'default', TYPES), 'm5.large', 'on-demand')).toBe(0.01);
    expect(resolution.conflicts.size).toBe(0);
  });

  it('marks the later of two equal-weight price overlays on the same offering as a conflict and applies only the first', () => {
    const a = priced('a', 5, 'm5.large', 0.01);
    const b = priced('b', 5, undefined, 0.02);
    const resolution = resolve([a, b]);
    // b sorts first (later name), so a is the one that conflicts; b applies everywhere.
    expect([...resolution.conflicts]).toEqual(['a']);
    const types = applyNodeOverlays(resolution, 'default', TYPES);
    expect(priceOf(types, 'm5.large', 'on-demand')).toBe(0.02);
    expect(priceOf(types, 'c5.large', 'spot')).toBe(0.02);
  });

  it('lets equal-weight price overlays on disjoint offerings both apply', () => {
    const a = priced('a', 5, 'm5.large', 0.01);
    const b = priced('b', 5, 'c5.large', 0.02);
    const resolution = resolve([a, b]);
    expect(resolution.conflicts.size).toBe(0);
    const types = applyNodeOverlays(resolution, 'default', TYPES);
    expect([priceOf(types, 'm5.large', 'on-demand'), priceOf(types, 'c5.large', 'on-demand')]).toEqual([
      0.01, 0.02,
    ]);
  });

  it('adds extended resources to capacity and so to allocatable; the higher weight wins a shared resource', () => {
    const high = extended('high', 10, 'm5.large', { 'example.com/fpga': 2 });
    const low = extended('low', 1, undefined, { 'example.com/fpga': 8, 'example.com/license': 1 });
    const types = applyNodeOverlays(resolve([low, high]), 'default', TYPES);
    const m5 = types.find((t) => t.name === 'm5.large');
    const c5 = types.find((t) => t.name === 'c5.large');
    expect(m5?.capacity['example.com/fpga']).toBe(2);
    expect(m5?.capacity['example.com/license']).toBe(1);
    expect(c5?.capacity['example.com/fpga']).toBe(8);
    expect(computeAllocatable(m5 as InstanceType)['example.com/fpga']).toBe(2);
    expect(m5?.capacity['cpu']).toBe(M5.capacity['cpu']);
  });

  it('marks equal-weight capacity overlays that set the same resource as a conflict, not those that set others', () => {
    const a = extended('a', 3, undefined, { 'example.com/fpga': 1 });
    const b = extended('b', 3, 'm5.large', { 'example.com/fpga': 2 });
    const c = extended('c', 3, 'c5.large', { 'example.com/other': 2 });
    const resolution = resolve([a, b, c]);
    // Order: c, b, a. c and b touch different types; a shares example.com/fpga with b on m5.large.
    expect([...resolution.conflicts]).toEqual(['a']);
    const types = applyNodeOverlays(resolution, 'default', TYPES);
    expect(types.find((t) => t.name === 'c5.large')?.capacity['example.com/fpga']).toBeUndefined();
  });

  it('returns the types unchanged without overlays, or for a pool no overlay selects', () => {
    const resolution = resolve([
      overlay({
        name: 'p',
        requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['other'] }],
        price: { kind: 'price', usd: 1 },
      }),
    ]);
    expect(applyNodeOverlays(resolution, 'default', TYPES)).toBe(TYPES);
    expect(applyNodeOverlays(resolve([]), 'default', TYPES)).toBe(TYPES);
  });
});

describe('solve with overlaid instance types', () => {
  it('launches the type a price overlay makes cheapest', () => {
    const pods = [pod({ cpu: '1', memory: '1Gi' })];
    const pool = nodePool({
      requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
    });
    const plain = solve(solveInput({ pods, nodePools: [pool], types: TYPES }));
    expect(plain.nodeClaims[0]?.instanceTypes[0]?.name).toBe('c5.large');
    const resolution = resolve(
      [overlay({ name: 'sp', requirements: onType('m5.large'), price: { kind: 'percent', percent: -50 } })],
      [{ name: pool.name }],
    );
    const overlaid = solve({
      ...solveInput({ pods, nodePools: [pool], types: TYPES }),
      poolInstanceTypes: new Map([[pool.name, applyNodeOverlays(resolution, pool.name, TYPES)]]),
    });
    expect(overlaid.nodeClaims[0]?.instanceTypes[0]).toEqual({ name: 'm5.large', priceUsdPerHour: 0.048 });
  });

  it('places a pod requesting an extended resource only where a capacity overlay adds it', () => {
    const pods = [pod({ cpu: '1', memory: '1Gi', requests: { 'example.com/fpga': '1' } })];
    const pool = nodePool();
    expect(solve(solveInput({ pods, nodePools: [pool], types: TYPES })).unschedulable).toHaveLength(1);
    const resolution = resolve(
      [overlay({ name: 'fpga', requirements: onType('m5.large'), capacity: { 'example.com/fpga': 1 } })],
      [{ name: pool.name }],
    );
    const result = solve({
      ...solveInput({ pods, nodePools: [pool], types: TYPES }),
      poolInstanceTypes: new Map([[pool.name, applyNodeOverlays(resolution, pool.name, TYPES)]]),
    });
    expect(result.unschedulable).toHaveLength(0);
    expect(result.nodeClaims[0]?.instanceTypes.map((t) => t.name)).toEqual(['m5.large']);
  });
});
