import { describe, expect, it } from 'vitest';
import {
  bundledCatalog,
  bundledCatalogRecords,
  MEMORY_NESTED_VIRTUALIZATION_FAMILIES,
  type MemoryCloudOptions,
  type MemoryNodeClassResolverOptions,
  makeMemoryCloud,
  makeMemoryNodeClassResolver,
} from '../../../shared/adapters/memory/index.ts';
import { Label, ValidationError } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass, LaunchRequest } from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { DEFAULT_NODE_CLASS, RESERVATION } from './fixtures.ts';

// The simulator's cloud launches what the EC2 adapter launches for a NodeClass: the images of its
// AMI family, user data that renders for it, the types its launch settings allow with the
// devices they advertise, capacity reservations that hold a fixed number of instances, and the
// partitions of a partition placement group.

const ZONES = ['us-east-1a', 'us-east-1b'];
const START = new Date('2026-11-21T10:00:00Z');

async function world(
  spec: Partial<EC2NodeClass['spec']>,
  cloudOptions: Partial<MemoryCloudOptions> = {},
  resolverOptions: Partial<MemoryNodeClassResolverOptions> = {},
) {
  const clock = makeManualClock(START);
  const cloud = makeMemoryCloud({
    clock,
    clusterName: 'sim',
    catalog: bundledCatalog('us-east-1', ZONES),
    ...cloudOptions,
  });
  const declared: EC2NodeClass = { ...DEFAULT_NODE_CLASS, spec: { ...DEFAULT_NODE_CLASS.spec, ...spec } };
  const status = await resolveNodeClassStatus(
    makeMemoryNodeClassResolver({ zones: ZONES, ...resolverOptions }),
    declared,
    clock.now(),
  );
  const nodeClass = { ...declared, status };
  const types = await cloud.instanceTypes(nodeClass);
  const request = (name: string, overrides: Partial<LaunchRequest> = {}): LaunchRequest => ({
    nodeClaimName: name,
    nodePoolName: 'general',
    nodeClass,
    instanceTypes: types.filter((t) => ['m5.large', 'c5.large'].includes(t.name)),
    requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
    labels: {},
    taints: [],
    startupTaints: [],
    ...overrides,
  });
  return { clock, cloud, nodeClass, types, request };
}

const condition = (nodeClass: EC2NodeClass, type: string) =>
  nodeClass.status?.conditions.find((c) => c.type === type);

describe('AMI families in the simulator', () => {
  it('boots a Windows class on amd64 Windows images, its types labelled with the OS and build', async () => {
    const { nodeClass, types, cloud, request } = await world({
      amiSelectorTerms: [{ alias: 'windows2022@latest' }],
    });
    expect(condition(nodeClass, 'Ready')?.status).toBe('True');
    expect(types.length).toBeGreaterThan(0);
    expect(types.every((t) => t.labels[Label.arch] === 'amd64')).toBe(true);
    expect(types.every((t) => t.labels[Label.os] === 'windows')).toBe(true);
    expect(types[0]?.labels[Label.windowsBuild]).toBe('10.0.20348');
    // Not ENI-limited: 110 pods, as the EC2 adapter counts a Windows node.
    expect(types.find((t) => t.name === 'm5.large')?.capacity['pods']).toBe(110);
    const instance = await cloud.create(request('win'));
    expect(instance.imageId).toBe(nodeClass.status?.amis[0]?.id);
    expect(nodeClass.status?.amis[0]?.name).toContain('Windows2022');
  });

  it('boots a Bottlerocket class on its own images, with the data volume as ephemeral storage', async () => {
    const { nodeClass, types, cloud, request } = await world({
      amiSelectorTerms: [{ alias: 'bottlerocket@latest' }],
    });
    expect(nodeClass.status?.amis.every((a) => a.name?.startsWith('bottlerocket-aws-k8s'))).toBe(true);
    expect(types.some((t) => t.labels[Label.arch] === 'arm64')).toBe(true);
    expect(types.find((t) => t.name === 'm5.large')?.capacity['ephemeral-storage']).toBe(20 * 1024 ** 3);
    const instance = await cloud.create(request('br'));
    expect(nodeClass.status?.amis.map((a) => a.id)).toContain(instance.imageId);
  });

  it('checks user data as the EC2 adapter renders it: bad TOML for Bottlerocket is not valid and does not launch', async () => {
    const { nodeClass, request, cloud } = await world({
      amiSelectorTerms: [{ alias: 'bottlerocket@latest' }],
      userData: '[settings.kubernetes\nmax-pods = ',
    });
    const validation = condition(nodeClass, 'ValidationSucceeded');
    expect(validation?.status).toBe('False');
    expect(validation?.reason).toBe('UserDataInvalid');
    expect(validation?.message).toContain('not valid TOML');
    // A launch forced past the status fails the same way the EC2 adapter's would.
    const forced = { ...nodeClass, status: { ...(nodeClass.status ?? DEFAULT_STATUS), conditions: READY } };
    await expect(cloud.planLaunch(request('bad', { nodeClass: forced }))).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});

const READY = [
  { type: 'Ready', status: 'True' as const, reason: 'Ready', message: '', lastTransitionTime: '' },
];
const DEFAULT_STATUS = { subnets: [], securityGroups: [], amis: [], conditions: [] };

describe('launch settings in the simulator', () => {
  it('advertises vpc.amazonaws.com/efa on EFA types, and only types with enough EFA interfaces under networkInterfaces', async () => {
    const plain = await world({});
    const efaRecord = bundledCatalogRecords().find((r) => (r.efaCount ?? 0) > 1 && r.gpuCount === 0);
    expect(efaRecord).toBeDefined();
    const efaType = plain.types.find((t) => t.name === efaRecord?.name);
    expect(efaType?.capacity['vpc.amazonaws.com/efa']).toBe(efaRecord?.efaCount);
    expect(plain.types.find((t) => t.name === 'm5.large')?.capacity['vpc.amazonaws.com/efa']).toBeUndefined();

    const efa = await world({
      networkInterfaces: [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: 'efa-only' },
      ],
    });
    expect(efa.types.length).toBeGreaterThan(0);
    const efaCounts = new Map(bundledCatalogRecords().map((r) => [r.name, r.efaCount ?? 0]));
    expect(efa.types.every((t) => (efaCounts.get(t.name) ?? 0) >= 1)).toBe(true);
    expect(efa.types.every((t) => t.capacity['vpc.amazonaws.com/efa'] === 1)).toBe(true);
  });

  it('offers only types whose processor supports nested virtualization when cpuOptions enables it', async () => {
    const { types } = await world({ cpuOptions: { nestedVirtualization: 'enabled' } });
    expect(types.length).toBeGreaterThan(0);
    const families = new Set(types.map((t) => t.labels[Label.instanceFamily]));
    expect([...families].every((f) => MEMORY_NESTED_VIRTUALIZATION_FAMILIES.has(f ?? ''))).toBe(true);
    const disabled = await world({ cpuOptions: { nestedVirtualization: 'disabled' } });
    expect(disabled.types.length).toBeGreaterThan(types.length);
  });

  it('offers no type when enclaveOptions enables Nitro Enclaves: the bundled catalog does not say which support them', async () => {
    expect((await world({ enclaveOptions: { enabled: true } })).types).toEqual([]);
    expect((await world({ enclaveOptions: { enabled: false } })).types.length).toBeGreaterThan(0);
  });
});

describe('capacity reservations in the simulator', () => {
  const reservation = RESERVATION;

  it('fills a reservation up to the instances it holds, then offers it no more until one goes', async () => {
    const { cloud, nodeClass, request } = await world(
      { capacityReservationSelectorTerms: [{ id: reservation.id }] },
      { capacityReservations: { [reservation.id]: 2 } },
      { capacityReservations: [reservation] },
    );
    const reservedOffering = async () =>
      (await cloud.instanceTypes(nodeClass))
        .find((t) => t.name === 'm5.large')
        ?.offerings.find((o) => o.capacityType === 'reserved');
    expect(await reservedOffering()).toMatchObject({ reservationCapacity: 2, available: true });
    const launchReserved = async (name: string) => {
      const types = await cloud.instanceTypes(nodeClass);
      return cloud.create(
        request(name, {
          instanceTypes: types.filter((t) => t.name === 'm5.large'),
          requirements: [{ key: Label.capacityType, operator: 'In', values: ['reserved'] }],
        }),
      );
    };
    const first = await launchReserved('r1');
    expect(first).toMatchObject({ capacityType: 'reserved', capacityReservationId: reservation.id });
    expect(await reservedOffering()).toMatchObject({ reservationCapacity: 1, available: true });
    await launchReserved('r2');
    expect(await reservedOffering()).toMatchObject({ reservationCapacity: 0, available: false });
    await expect(launchReserved('r3')).rejects.toThrow(/none of the 1 instance types/);
    await cloud.delete(first.instanceId);
    expect(await reservedOffering()).toMatchObject({ reservationCapacity: 1, available: true });
  });
});

describe('a partition placement group in the simulator', () => {
  const group = {
    id: 'pg-0cassandra000001',
    name: 'cassandra',
    state: 'available',
    strategy: 'partition',
    partitionCount: 2,
  };

  it('offers every offering per partition, puts a pinned claim in its partition and spreads the others', async () => {
    const { cloud, types, request } = await world(
      { placementGroupSelector: { name: 'cassandra' } },
      {},
      { placementGroups: [group] },
    );
    const m5 = types.find((t) => t.name === 'm5.large');
    expect(m5?.labels[Label.placementGroupId]).toBe(group.id);
    expect(new Set(m5?.offerings.map((o) => o.partition))).toEqual(new Set(['1', '2']));
    const pinned = await cloud.create(
      request('pinned', {
        requirements: [{ key: Label.placementGroupPartition, operator: 'In', values: ['2'] }],
      }),
    );
    expect(pinned.placementGroup).toMatchObject({ id: group.id, partition: '2' });
    // EC2 chooses for the others: the partition with the fewest instances first.
    const chosen = [await cloud.create(request('a')), await cloud.create(request('b'))];
    expect(chosen.map((i) => i.placementGroup?.partition)).toEqual(['1', '1']);
    const third = await cloud.create(request('c'));
    expect(third.placementGroup?.partition).toBe('2');
  });

  it('backs off the spot offerings of every partition when the spot service-linked role is missing', async () => {
    const { cloud, nodeClass, request } = await world(
      { placementGroupSelector: { name: 'cassandra' } },
      { noSpotServiceLinkedRole: true },
      { placementGroups: [group] },
    );
    const spot = [{ key: Label.capacityType, operator: 'In' as const, values: ['spot'] }];
    await expect(cloud.create(request('spot', { requirements: spot }))).rejects.toThrow(/ServiceLinkedRole/);
    const m5 = (await cloud.instanceTypes(nodeClass)).find((t) => t.name === 'm5.large');
    const offerings = m5?.offerings ?? [];
    expect(offerings.filter((o) => o.capacityType === 'spot').every((o) => !o.available)).toBe(true);
    expect(offerings.filter((o) => o.capacityType === 'on-demand').every((o) => o.available)).toBe(true);
  });
});
