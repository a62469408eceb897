import { describe, expect, it } from 'vitest';
import {
  computeAllocatable,
  computeCapacityAndOverhead,
  defaultKubeReservedCpuMillis,
  instanceTypesFromCatalog,
  Label,
} from '../../../shared/core/index.ts';
import { loadCatalog } from './builders.ts';

const Mi = 1024 ** 2;
const Gi = 1024 ** 3;

describe('allocatable (AL2023 defaults)', () => {
  const catalog = loadCatalog();
  const types = instanceTypesFromCatalog(catalog, { region: 'us-east-1', zones: ['us-east-1a'] });
  const byName = new Map(types.map((t) => [t.name, t]));

  it('covers the whole catalog', () => {
    expect(catalog.length).toBe(1210);
    expect(types.length).toBe(1210);
  });

  // Pod-ENI capacity is not computed: whether a type supports ENI trunking is a per-type fact the
  // catalog carries (karpenterAllocatable.podEni), so only the computed resources are compared.
  it("equals Karpenter's published allocatable cpu, memory, ephemeral storage and pods for every catalog type", () => {
    const mismatches: string[] = [];
    for (const record of catalog) {
      const expected = record.karpenterAllocatable;
      if (expected === undefined) continue;
      const it = byName.get(record.name);
      if (it === undefined) {
        mismatches.push(`${record.name}: missing`);
        continue;
      }
      const a = computeAllocatable(it);
      const got = {
        cpuMillicores: a['cpu'],
        memoryMiB: (a['memory'] ?? 0) / Mi,
        ephemeralStorageGiB: (a['ephemeral-storage'] ?? 0) / Gi,
        pods: a['pods'],
      };
      const { podEni: _notComputed, ...want } = expected;
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        mismatches.push(`${record.name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it.each([
    [1, 60],
    [2, 70],
    [4, 80],
    [8, 90],
    [96, 310],
    [192, 550],
  ])('kube-reserved cpu for %d vCPU is %dm', (vcpu, millis) => {
    expect(defaultKubeReservedCpuMillis(vcpu)).toBe(millis);
  });

  it('labels carry the well-known keys', () => {
    const t = byName.get('g5.xlarge');
    expect(t?.labels).toMatchObject({
      [Label.arch]: 'amd64',
      [Label.instanceType]: 'g5.xlarge',
      [Label.instanceFamily]: 'g5',
      [Label.instanceCategory]: 'g',
      [Label.instanceGeneration]: '5',
      [Label.instanceSize]: 'xlarge',
      [Label.instanceCpu]: '4',
      [Label.instanceGpuName]: 'a10g',
      [Label.instanceGpuCount]: '1',
    });
    expect(t?.capacity['nvidia.com/gpu']).toBe(1);
    expect(byName.get('g4ad.xlarge')?.capacity['amd.com/gpu']).toBe(1);
  });

  it('offers on-demand and spot per zone, spot from the advisor estimate', () => {
    const c5 = byName.get('c5.large');
    expect(c5?.offerings).toEqual([
      { zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 0.085, available: true },
      { zone: 'us-east-1a', capacityType: 'spot', priceUsdPerHour: 0.03485, available: true },
    ]);
  });
});

describe('kubelet settings change allocatable', () => {
  const hw = { vcpu: 4, memoryMiB: 16384, arch: 'amd64', eniMaxPods: 58 } as const;

  it.each([
    [
      'maxPods overrides the ENI limit (and kube-reserved memory follows)',
      { kubelet: { maxPods: 110 } },
      { pods: 110, memory: (16384 - 1229 - (11 * 110 + 255) - 100) * Mi },
    ],
    ['podsPerCore caps pods', { kubelet: { podsPerCore: 5 } }, { pods: 20 }],
    ['kubeReserved replaces the default', { kubelet: { kubeReserved: { cpu: 500 } } }, { cpu: 3500 }],
    [
      'systemReserved is subtracted',
      { kubelet: { systemReserved: { cpu: 100, memory: 100 * Mi } } },
      { cpu: 3820, memory: (16384 - 1229 - 893 - 100 - 100) * Mi },
    ],
    [
      'eviction takes the larger of hard and soft; percentages of capacity',
      {
        kubelet: {
          evictionHard: { 'memory.available': { kind: 'quantity', amount: 200 * Mi } },
          evictionSoft: { 'memory.available': { kind: 'quantity', amount: 300 * Mi } },
        },
      },
      { memory: (16384 - 1229 - 893 - 300) * Mi },
    ],
    ['a bigger root volume', { rootVolumeBytes: 100 * Gi }, { 'ephemeral-storage': 89 * Gi }],
  ] as const)('%s', (_name, settings, expected) => {
    const { capacity, overhead } = computeCapacityAndOverhead(hw, settings);
    expect(computeAllocatable({ capacity, overhead })).toMatchObject(expected);
  });
});

describe('assumed prices in the catalog', () => {
  const catalog = loadCatalog();
  const options = { region: 'us-east-1', zones: ['us-east-1a'] };
  const spotOf = (t: { offerings: readonly { capacityType: string; priceAssumed?: boolean }[] }) =>
    t.offerings.find((o) => o.capacityType === 'spot');

  it('marks the spot price of a type without a Spot Advisor estimate as assumed, and only those', () => {
    const types = instanceTypesFromCatalog(catalog, options);
    const withoutEstimate = new Set(
      catalog.filter((r) => r.spotAdvisor?.['us-east-1'] === undefined).map((r) => r.name),
    );
    expect(withoutEstimate.size).toBeGreaterThan(0);
    for (const t of types) expect(spotOf(t)?.priceAssumed === true).toBe(withoutEstimate.has(t.name));
    // us-east-1's on-demand prices are published ones.
    expect(
      types.flatMap((t) => t.offerings).filter((o) => o.capacityType === 'on-demand' && o.priceAssumed),
    ).toEqual([]);
  });

  it("marks an on-demand price taken from another region's as assumed", () => {
    const types = instanceTypesFromCatalog(catalog, { region: 'us-west-2', zones: ['us-west-2a'] });
    const borrowed = catalog.find((r) => r.onDemandPriceSource?.['us-west-2']?.startsWith('assumed'));
    expect(borrowed).toBeDefined();
    const type = types.find((t) => t.name === borrowed?.name);
    expect(type?.offerings.find((o) => o.capacityType === 'on-demand')?.priceAssumed).toBe(true);
  });

  it('leaves out the offerings with an assumed price, and the types left with none, when asked', () => {
    const known = instanceTypesFromCatalog(catalog, { ...options, knownPricesOnly: true });
    const offerings = known.flatMap((t) => t.offerings);
    expect(offerings.length).toBeGreaterThan(0);
    expect(offerings.filter((o) => o.priceAssumed === true)).toEqual([]);
    // Every type keeps its (published) on-demand offering; the spot ones without an estimate go.
    expect(known).toHaveLength(1210);
    expect(offerings.filter((o) => o.capacityType === 'spot')).toHaveLength(
      catalog.filter((r) => r.spotAdvisor?.['us-east-1'] !== undefined).length,
    );
  });
});
