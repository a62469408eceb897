import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  bundledCatalog,
  type CapacityWindow,
  type MemoryCloudOptions,
  makeMemoryCloud,
  makeMemoryNodeClassResolver,
  makeMemoryUnavailableOfferings,
  memoryNodeClassSettings,
} from '../../../shared/adapters/memory/index.ts';
import type { InstanceType } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import {
  type EC2NodeClass,
  InstanceNotOwnedError,
  InsufficientCapacityError,
  type LaunchRequest,
  NodeClassNotReadyError,
} from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { DEFAULT_NODE_CLASS } from './fixtures.ts';

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const START = new Date('2026-11-21T10:00:00Z');
const ON_DEMAND = { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] } as const;

async function setUp(
  options: Partial<MemoryCloudOptions> = {},
  nodeClass: EC2NodeClass = DEFAULT_NODE_CLASS,
) {
  const clock = makeManualClock(START);
  const cloud = makeMemoryCloud({
    clock,
    clusterName: 'sim',
    catalog: bundledCatalog('us-east-1', ZONES),
    ...options,
  });
  const resolved = {
    ...nodeClass,
    status: await resolveNodeClassStatus(
      makeMemoryNodeClassResolver({ zones: ZONES }),
      nodeClass,
      clock.now(),
    ),
  };
  async function request(
    nodeClaimName: string,
    names: readonly string[] = ['t3.medium', 'c5.large', 'm5.large'],
    overrides: Partial<LaunchRequest> = {},
  ): Promise<LaunchRequest> {
    const types = await cloud.instanceTypes(resolved);
    return {
      nodeClaimName,
      nodePoolName: 'general',
      nodeClass: resolved,
      instanceTypes: types.filter((t) => names.includes(t.name)),
      requirements: [ON_DEMAND],
      labels: {},
      taints: [],
      startupTaints: [],
      ...overrides,
    };
  }
  return { clock, cloud, nodeClass: resolved, request };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('boot delay', () => {
  it('keeps an instance pending for the boot delay of virtual time, then running', async () => {
    const { clock, cloud, request } = await setUp({ bootDelayMs: 45_000 });
    const launched = await cloud.create(await request('boot'));
    expect(launched).toMatchObject({ state: 'pending', launchTime: START });
    clock.advance(44_999);
    expect((await cloud.get(launched.instanceId))?.state).toBe('pending');
    expect((await cloud.list())[0]?.state).toBe('pending');
    clock.advance(1);
    expect((await cloud.get(launched.instanceId))?.state).toBe('running');
    // A repeated create for the same NodeClaim reports the state now, not the state at launch.
    expect((await cloud.create(await request('boot'))).state).toBe('running');
  });

  it('is running at once without a boot delay', async () => {
    const { cloud, request } = await setUp();
    expect((await cloud.create(await request('now'))).state).toBe('running');
  });
});

describe('windows of insufficient capacity', () => {
  it('fails the matching offerings only while the window is open', async () => {
    const window: CapacityWindow = {
      instanceType: 't3.*',
      capacityType: 'on-demand',
      from: new Date(START.getTime() + 60_000),
      until: new Date(START.getTime() + 120_000),
    };
    const { clock, cloud, request } = await setUp({ capacityWindows: [window] });
    expect((await cloud.create(await request('before'))).instanceType).toBe('t3.medium');
    clock.advance(60_000);
    expect((await cloud.create(await request('during'))).instanceType).toBe('c5.large');
    const backedOff = await cloud.unavailableOfferings.list(clock.now());
    expect([...backedOff.keys()].sort()).toEqual([
      'on-demand:t3.medium:us-east-1a',
      'on-demand:t3.medium:us-east-1b',
      'on-demand:t3.medium:us-east-1c',
    ]);
    expect([...backedOff.values()][0]).toMatchObject({ untilMs: clock.now().getTime() + 180_000 });
    // The window closes at 120 s, the back-off holds until 240 s.
    clock.advance(120_000);
    expect((await cloud.create(await request('backed-off'))).instanceType).toBe('c5.large');
    clock.advance(60_000);
    expect((await cloud.create(await request('after'))).instanceType).toBe('t3.medium');
  });

  it('matches by zone and capacity type, and leaves other capacity types alone', async () => {
    const { cloud, request } = await setUp({
      capacityWindows: [{ zone: 'us-east-1a', capacityType: 'spot' }],
    });
    const spotOrOnDemand = [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
      { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1a'] },
    ] as const;
    // Every spot offering in the zone fails: spot is what was asked for, so the launch fails…
    const error = await cloud
      .create(await request('spot-a', undefined, { requirements: [...spotOrOnDemand] }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientCapacityError);
    const offerings = (error as InsufficientCapacityError).offerings;
    expect(offerings).toHaveLength(3);
    expect(offerings.every((o) => o.capacityType === 'spot' && o.zone === 'us-east-1a')).toBe(true);
    // …and the retry falls back to on-demand, as after a real spot ICE.
    const retry = await cloud.create(
      await request('spot-a', undefined, { requirements: [...spotOrOnDemand] }),
    );
    expect(retry).toMatchObject({ capacityType: 'on-demand', zone: 'us-east-1a', instanceType: 't3.medium' });
  });

  it('adds and removes windows at run time', async () => {
    const { cloud, request } = await setUp();
    const remove = cloud.addCapacityWindow({ instanceType: 't3.medium', zone: 'us-east-1a' });
    expect(cloud.capacityWindows()).toHaveLength(1);
    expect(await cloud.create(await request('w-1'))).toMatchObject({
      instanceType: 't3.medium',
      zone: 'us-east-1b',
    });
    remove();
    expect(cloud.capacityWindows()).toEqual([]);
  });
});

describe('determinism', () => {
  async function run(seed: number) {
    const { clock, cloud, request } = await setUp({
      seed,
      bootDelayMs: 30_000,
      capacityWindows: [{ instanceType: 't3.medium', from: new Date(START.getTime() + 10_000) }],
    });
    const out: string[] = [];
    for (let i = 0; i < 6; i++) {
      const instance = await cloud.create(await request(`claim-${i}`));
      out.push(`${instance.instanceId} ${instance.instanceType} ${instance.zone} ${instance.privateDnsName}`);
      if (i % 2 === 1) await cloud.delete(instance.instanceId);
      clock.advance(7_000);
    }
    return { out, history: cloud.history() };
  }

  it('gives the same ids and choices for the same seed, without Math.random or Date.now', async () => {
    const random = vi.spyOn(Math, 'random');
    const now = vi.spyOn(Date, 'now');
    const first = await run(7);
    const second = await run(7);
    expect(second).toEqual(first);
    expect(random).not.toHaveBeenCalled();
    expect(now).not.toHaveBeenCalled();
    expect(first.out[0]).toMatch(/^i-00007000000000001 t3\.medium us-east-1a ip-10-7-0-1\.ec2\.internal$/);
    // t3.medium runs out of capacity 10 s in; boots take 30 s and the run ends 42 s in.
    expect(first.history.map((i) => `${i.instanceType} ${i.state}`)).toEqual([
      't3.medium running',
      't3.medium terminated',
      'c5.large pending',
      'c5.large terminated',
      'c5.large pending',
      'c5.large terminated',
    ]);
  });

  it('gives different ids for different seeds', async () => {
    const a = await run(1);
    const b = await run(2);
    const ids = (r: typeof a) => r.history.map((i) => i.instanceId);
    expect(ids(a).filter((id) => ids(b).includes(id))).toEqual([]);
    for (const id of [...ids(a), ...ids(b)]) expect(id).toMatch(/^i-[0-9a-f]{17}$/);
  });
});

describe('choosing offerings', () => {
  const reservedType: InstanceType = {
    name: 'm5.large',
    labels: { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': 'm5.large' },
    capacity: { cpu: 2000, memory: 8 * 1024 ** 3, pods: 29 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings: [
      { zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 0.096, available: true },
      { zone: 'us-east-1a', capacityType: 'spot', priceUsdPerHour: 0.04, available: true },
      {
        zone: 'us-east-1b',
        capacityType: 'reserved',
        priceUsdPerHour: 0.2,
        available: true,
        reservationId: 'cr-1',
      },
    ],
  };
  const gpuType: InstanceType = {
    ...reservedType,
    name: 'g4dn.xlarge',
    labels: { ...reservedType.labels, 'karpenter.k8s.aws/instance-gpu-count': '1' },
    offerings: [{ zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 0.01, available: true }],
  };

  it('launches a reserved offering before spot and on-demand, from given instance types', async () => {
    const { cloud, nodeClass } = await setUp({ catalog: { kind: 'types', instanceTypes: [reservedType] } });
    const types = await cloud.instanceTypes(nodeClass);
    expect(types.map((t) => t.name)).toEqual(['m5.large']);
    const instance = await cloud.create({
      nodeClaimName: 'reserved',
      nodePoolName: 'general',
      nodeClass,
      instanceTypes: types,
      requirements: [],
      labels: {},
      taints: [],
      startupTaints: [],
    });
    expect(instance).toMatchObject({
      capacityType: 'reserved',
      zone: 'us-east-1b',
      instanceType: 'm5.large',
    });
  });

  it('backs off a full reservation alone: the other reservation of the type and zone stays available', async () => {
    const twoReservations: InstanceType = {
      ...reservedType,
      offerings: [
        ...reservedType.offerings,
        {
          zone: 'us-east-1b',
          capacityType: 'reserved',
          priceUsdPerHour: 0.2,
          available: true,
          reservationId: 'cr-2',
        },
      ],
    };
    const { cloud, nodeClass } = await setUp({
      catalog: { kind: 'types', instanceTypes: [twoReservations] },
      capacityWindows: [{ capacityType: 'reserved', reservationId: 'cr-1' }],
    });
    const request = {
      nodeClaimName: 'pinned',
      nodePoolName: 'general',
      nodeClass,
      instanceTypes: await cloud.instanceTypes(nodeClass),
      requirements: [
        { key: 'karpenter.k8s.aws/capacity-reservation-id', operator: 'In' as const, values: ['cr-1'] },
      ],
      labels: {},
      taints: [],
      startupTaints: [],
    };
    await expect(cloud.create(request)).rejects.toMatchObject({
      offerings: [
        { instanceType: 'm5.large', zone: 'us-east-1b', capacityType: 'reserved', reservationId: 'cr-1' },
      ],
    });
    const reserved = (await cloud.instanceTypes(nodeClass))[0]?.offerings.filter(
      (o) => o.capacityType === 'reserved',
    );
    expect(reserved?.map((o) => `${o.reservationId} ${o.available}`)).toEqual(['cr-1 false', 'cr-2 true']);
  });

  it('avoids GPU types while an ordinary type fits, and uses the AMI that serves the type', async () => {
    const { cloud, nodeClass } = await setUp({
      catalog: { kind: 'types', instanceTypes: [gpuType, { ...reservedType, offerings: [] }] },
    });
    const types = await cloud.instanceTypes(nodeClass);
    // A type with no offering in the NodeClass's zones is not usable with it.
    expect(types.map((t) => t.name)).toEqual(['g4dn.xlarge']);
    const gpu = await cloud.create({
      nodeClaimName: 'gpu',
      nodePoolName: 'general',
      nodeClass,
      instanceTypes: types,
      requirements: [],
      labels: {},
      taints: [],
      startupTaints: [],
    });
    expect(gpu.imageId).toBe(nodeClass.status?.amis.find((a) => a.name?.includes('nvidia'))?.id);
  });

  it('launches arm64 types on the arm64 AMI', async () => {
    const { cloud, request, nodeClass } = await setUp();
    const arm = await cloud.create(await request('arm', ['m6g.large']));
    expect(arm.instanceType).toBe('m6g.large');
    expect(arm.imageId).toBe(nodeClass.status?.amis.find((a) => a.name?.includes('arm64'))?.id);
  });

  it('raises NodeClassNotReadyError for a NodeClass without status', async () => {
    const { cloud, request } = await setUp();
    const error = await cloud
      .create(await request('no-status', undefined, { nodeClass: DEFAULT_NODE_CLASS }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeClassNotReadyError);
    expect((error as Error).message).toContain('it has no resolved status yet');
  });
});

describe('instances outside Flotilla and reclaims', () => {
  it('does not list or delete instances of another cluster, and reclaims like EC2', async () => {
    const { cloud, request } = await setUp();
    const other = cloud.addForeignInstance({
      instanceType: 'm5.large',
      zone: 'us-east-1b',
      tags: { 'kubernetes.io/cluster/other': 'owned', 'karpenter.sh/nodepool': 'general' },
    });
    const mine = await cloud.create(await request('mine'));
    expect((await cloud.list()).map((i) => i.instanceId)).toEqual([mine.instanceId]);
    await expect(cloud.delete(other.instanceId)).rejects.toBeInstanceOf(InstanceNotOwnedError);

    expect(cloud.reclaim(mine.instanceId)).toMatchObject({ instanceId: mine.instanceId, state: 'running' });
    expect(cloud.reclaim(mine.instanceId)).toBeUndefined();
    expect(await cloud.get(mine.instanceId)).toBeUndefined();
    expect(await cloud.list()).toEqual([]);
    // The NodeClaim's instance is gone, so launching for it again starts a new one.
    const again = await cloud.create(await request('mine'));
    expect(again.instanceId).not.toBe(mine.instanceId);
    expect(cloud.history().map((i) => i.state)).toEqual(['running', 'terminated', 'running']);
  });
});

describe('NodeClass settings', () => {
  it('applies kubelet maxPods and the root volume to the instance types of the NodeClass', async () => {
    const custom: EC2NodeClass = {
      ...DEFAULT_NODE_CLASS,
      name: 'custom',
      spec: {
        ...DEFAULT_NODE_CLASS.spec,
        kubelet: { maxPods: 50, kubeReserved: { cpu: '200m' } },
        blockDeviceMappings: [
          { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSizeBytes: 100 * 1024 ** 3 } },
        ],
      },
    };
    expect(memoryNodeClassSettings(custom)).toMatchObject({
      kubelet: { maxPods: 50, kubeReserved: { cpu: 200 } },
      rootVolumeBytes: 100 * 1024 ** 3,
    });
    const { cloud, nodeClass } = await setUp({}, custom);
    const plain = await setUp();
    const m5 = (await cloud.instanceTypes(nodeClass)).find((t) => t.name === 'm5.large');
    const m5Plain = (await plain.cloud.instanceTypes(plain.nodeClass)).find((t) => t.name === 'm5.large');
    expect(m5?.capacity['pods']).toBe(50);
    expect(m5Plain?.capacity['pods']).toBe(29);
    expect(m5?.capacity['ephemeral-storage']).toBe(100 * 1024 ** 3);
    expect(m5?.overhead.kubeReserved['cpu']).toBe(200);
  });
});

describe('in-memory ICE back-offs', () => {
  it('expires on read and extends when marked again', async () => {
    const table = makeMemoryUnavailableOfferings();
    const key = { instanceType: 'm5.large', zone: 'us-east-1a', capacityType: 'spot' } as const;
    await table.mark([key], 'ice', START, 180);
    await table.mark([key], 'interruption', new Date(START.getTime() + 100_000), 180);
    const later = await table.list(new Date(START.getTime() + 200_000));
    expect([...later.values()]).toEqual([
      { ...key, reason: 'interruption', untilMs: START.getTime() + 280_000 },
    ]);
    expect((await table.list(new Date(START.getTime() + 280_000))).size).toBe(0);
  });
});
