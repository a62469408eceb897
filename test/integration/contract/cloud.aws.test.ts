import {
  type CreateFleetRequest,
  DescribeLaunchTemplateVersionsCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEc2CatalogSource } from '../../../shared/adapters/aws/catalog-source.ts';
import { decodeFleetRequest, encodeFleetRequest } from '../../../shared/adapters/aws/fleet-record.ts';
import type { InstanceType } from '../../../shared/core/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { Cloud, EC2NodeClass, OfferingCatalog } from '../../../shared/ports/cloud.ts';
import { describeCloudContract } from '../../contract/cloud-contract.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';
import { setUpAccount } from '../aws/cloud-fixture.ts';
import { CLUSTER, setCapacityReservations, silentLogger } from '../aws/fixtures.ts';
import { noCapacityFor, reservationsFull } from '../aws/ice.ts';

const START = new Date('2026-11-21T10:00:00Z');
let server: Moto;
let catalog: OfferingCatalog;

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  // moto's instance types do not change between resets: read the catalog once, as the catalog
  // Lambda reads it.
  catalog = await makeEc2CatalogSource({
    ec2: new EC2Client(awsConfigAs(server, 'catalog')),
    region: 'us-east-1',
    clock: makeManualClock(START),
    logger: silentLogger,
  }).fetchCatalog();
});

describeCloudContract('AWS adapter on moto', async () => {
  await resetMoto(server);
  const clock = makeManualClock(START);
  const account = await setUpAccount(server, clock);
  await account.as('catalog').cloud.offeringCache.writeCatalog(catalog);
  // Each method runs with the role of the Lambda that calls it in production: the provisioner
  // reads instance types, launches, gets and lists; the termination Lambda terminates (delete);
  // the interruption Lambda backs off the offering of an interrupted spot instance
  // (markUnavailable). The adapter's methods are closures, so they can be taken apart this way.
  const cloud: Cloud = {
    ...account.cloud,
    delete: account.as('termination').cloud.delete,
    markUnavailable: account.as('interruption').cloud.markUnavailable,
  };
  return {
    cloud,
    nodeClass: account.nodeClass,
    clock,
    clusterName: CLUSTER,
    zones: ['us-east-1a', 'us-east-1b', 'us-east-1c'],
    noCapacityFor: (type, zones) => noCapacityFor(account.lambdaEc2, type, zones),
    async launchForeignInstance() {
      const foreign = await account.ec2.send(
        new RunInstancesCommand({
          ImageId: account.amis.amd64,
          MinCount: 1,
          MaxCount: 1,
          InstanceType: 't3.micro',
        }),
      );
      return foreign.Instances?.[0]?.InstanceId ?? '';
    },
  };
});

describe('the moto subject of the contract', () => {
  it('has a catalog with on-demand and spot offerings in several zones to choose from', () => {
    const zones = new Set(catalog.instanceTypes.flatMap((t) => t.offerings.map((o) => o.zone)));
    const capacityTypes = new Set(
      catalog.instanceTypes.flatMap((t) => t.offerings.map((o) => o.capacityType)),
    );
    expect(catalog.instanceTypes.length).toBeGreaterThan(100);
    expect(zones.size).toBeGreaterThan(1);
    expect([...capacityTypes].sort()).toEqual(['on-demand', 'spot']);
  });
});

// Capacity reservations. moto does not model them: the harness answers
// DescribeCapacityReservations as EC2 would (test/harness/moto_server.py), and moto's CreateFleet
// launches without placing the instance in the reservation (its DescribeInstances has no
// CapacityReservationId), so the launch is checked by the request Flotilla sends: a launch
// template that targets the reservation.
describe('capacity reservations on moto', () => {
  const ODCR = 'cr-0a1b2c3d4e5f60001';
  const BLOCK = 'cr-0a1b2c3d4e5f60002';
  const reservations = [
    {
      id: ODCR,
      instanceType: 'm5.large',
      availabilityZone: 'us-east-1b',
      instanceMatchCriteria: 'targeted',
      totalInstanceCount: 3,
      availableInstanceCount: 2,
      tags: { team: 'ml' },
    },
    {
      id: BLOCK,
      instanceType: 'p5.48xlarge',
      availabilityZone: 'us-east-1a',
      instanceMatchCriteria: 'targeted',
      reservationType: 'capacity-block',
      totalInstanceCount: 1,
      availableInstanceCount: 1,
      endDate: new Date(START.getTime() + 20 * 60_000).toISOString(),
      tags: { team: 'ml' },
    },
    { id: 'cr-0a1b2c3d4e5f60003', instanceType: 'c5.large', availabilityZone: 'us-east-1a', tags: {} },
  ];

  const setReservations = (list: readonly Record<string, unknown>[]) =>
    setCapacityReservations(server.endpoint, list);

  async function setUp(list: readonly Record<string, unknown>[] = reservations) {
    await resetMoto(server);
    await setReservations(list);
    const clock = makeManualClock(START);
    const account = await setUpAccount(server, clock, {
      capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }],
    });
    await account.as('catalog').cloud.offeringCache.writeCatalog(catalog);
    return { clock, account };
  }

  /** A launch request for a NodeClaim pinned to the ODCR, as the plan pins it. */
  const pinnedToOdcr = (nodeClaimName: string, nodeClass: EC2NodeClass, m5: InstanceType | undefined) => ({
    nodeClaimName,
    nodePoolName: 'default',
    nodeClass,
    instanceTypes: m5 === undefined ? [] : [m5],
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['reserved'] },
      { key: 'karpenter.k8s.aws/capacity-reservation-id', operator: 'In' as const, values: [ODCR] },
    ],
    labels: {},
    taints: [],
    startupTaints: [],
  });

  it('resolves the selector terms into status.capacityReservations with the provisioner identity', async () => {
    const { account } = await setUp();
    const status = account.nodeClass.status;
    // Every field EC2 answers with, as the status keeps it; the untagged reservation is left out.
    const fields = (r: Record<string, unknown>) =>
      [
        'id',
        'availabilityZone',
        'instanceType',
        'instanceMatchCriteria',
        'ownerID',
        'reservationType',
        'state',
      ]
        .map((k) => r[k])
        .join(' ');
    expect(status?.capacityReservations?.map((r) => fields({ ...r }))).toEqual([
      `${ODCR} us-east-1b m5.large targeted 123456789012 default active`,
      // Ends in 20 minutes: inside the window in which EC2 reclaims a capacity block.
      `${BLOCK} us-east-1a p5.48xlarge targeted 123456789012 capacity-block expiring`,
    ]);
    expect(status?.capacityReservations?.map((r) => r.endTime)).toEqual([
      undefined,
      new Date(START.getTime() + 20 * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ]);
    expect(status?.conditions.find((c) => c.type === 'CapacityReservationsReady')?.status).toBe('True');
    expect(status?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('offers a reservation with room as a reserved offering and launches into it through a targeted template', async () => {
    const { account } = await setUp();
    const types = await account.cloud.instanceTypes(account.nodeClass);
    const m5 = types.find((t) => t.name === 'm5.large');
    const reserved = m5?.offerings.filter((o) => o.capacityType === 'reserved');
    const onDemand = m5?.offerings.find((o) => o.capacityType === 'on-demand')?.priceUsdPerHour ?? 0;
    expect(reserved).toEqual([
      {
        zone: 'us-east-1b',
        capacityType: 'reserved',
        priceUsdPerHour: onDemand / 10_000_000,
        available: true,
        reservationId: ODCR,
        reservationCapacity: 2,
        reservationType: 'default',
      },
    ]);
    // The expiring capacity block takes no new nodes.
    const p5 = types.find((t) => t.name === 'p5.48xlarge');
    expect(p5?.offerings.filter((o) => o.capacityType === 'reserved').map((o) => o.available)).toEqual([
      false,
    ]);

    const request = pinnedToOdcr('reserved-1', account.nodeClass, m5);
    const record = await account.cloud.planLaunch(request);
    const fleet = decodeFleetRequest('reserved-1', record.request);
    expect(fleet.TargetCapacitySpecification?.DefaultTargetCapacityType).toBe('on-demand');
    const configs = fleet.LaunchTemplateConfigs ?? [];
    expect(
      configs.flatMap((c) => (c.Overrides ?? []).map((o) => `${o.InstanceType}@${o.AvailabilityZone}`)),
    ).toEqual(['m5.large@us-east-1b']);
    const templateId = configs[0]?.LaunchTemplateSpecification?.LaunchTemplateId;
    const versions = await account.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: templateId, Versions: ['$Latest'] }),
    );
    expect(
      versions.LaunchTemplateVersions?.[0]?.LaunchTemplateData?.CapacityReservationSpecification,
    ).toEqual({
      CapacityReservationTarget: { CapacityReservationId: ODCR },
    });
    const instance = await account.cloud.launch(request, record, { firstSend: true });
    expect(instance.instanceType).toBe('m5.large');
    expect(instance.zone).toBe('us-east-1b');
  });

  it('reads what a reservation can still take at each plan: a full one offers nothing', async () => {
    const { account } = await setUp();
    await setReservations(reservations.map((r) => (r.id === ODCR ? { ...r, availableInstanceCount: 0 } : r)));
    const types = await account.cloud.instanceTypes(account.nodeClass);
    const reserved = types
      .find((t) => t.name === 'm5.large')
      ?.offerings.filter((o) => o.capacityType === 'reserved');
    expect(reserved?.map((o) => [o.reservationId, o.available, o.reservationCapacity])).toEqual([
      [ODCR, false, 0],
    ]);
  });

  it('backs off only the reservation that was full, not the other reservations of the type and zone', async () => {
    const SECOND = 'cr-0a1b2c3d4e5f60004';
    const { account } = await setUp([
      ...reservations,
      { ...reservations[0], id: SECOND, instanceMatchCriteria: 'targeted', availableInstanceCount: 1 },
    ]);
    const m5 = (await account.cloud.instanceTypes(account.nodeClass)).find((t) => t.name === 'm5.large');
    const request = pinnedToOdcr('reserved-full', account.nodeClass, m5);
    const record = await account.cloud.planLaunch(request);
    const full = reservationsFull(account.lambdaEc2);
    try {
      await expect(account.cloud.launch(request, record, { firstSend: true })).rejects.toMatchObject({
        name: 'InsufficientCapacityError',
        offerings: [
          { instanceType: 'm5.large', zone: 'us-east-1b', capacityType: 'reserved', reservationId: ODCR },
        ],
      });
    } finally {
      full();
    }
    const after = (await account.cloud.instanceTypes(account.nodeClass)).find((t) => t.name === 'm5.large');
    expect(
      after?.offerings
        .filter((o) => o.zone === 'us-east-1b')
        .map((o) => `${o.capacityType} ${o.reservationId ?? '-'} ${o.available}`)
        .sort(),
    ).toEqual(['on-demand - true', `reserved ${ODCR} false`, `reserved ${SECOND} true`, 'spot - true']);
  });
});

describe('a recorded launch someone else wrote', () => {
  // A launch record is an annotation on the NodeClaim: whoever may write the NodeClaim (a user, for
  // a standalone one) may write it. The adapter sends only a request it would plan itself.
  it('is refused, and nothing is sent, when it asks for more than Flotilla plans', async () => {
    await resetMoto(server);
    const account = await setUpAccount(server, makeManualClock(START));
    await account.as('catalog').cloud.offeringCache.writeCatalog(catalog);
    const types = await account.cloud.instanceTypes(account.nodeClass);
    const request = {
      nodeClaimName: 'by-hand',
      nodeClass: account.nodeClass,
      instanceTypes: types.filter((t) => t.name === 'm5.large'),
      requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] }],
      labels: {},
      taints: [],
      startupTaints: [],
    };
    const planned = decodeFleetRequest('by-hand', (await account.cloud.planLaunch(request)).request);
    const [config] = planned.LaunchTemplateConfigs ?? [];
    const override = config?.Overrides?.[0];
    const tampered: [string, CreateFleetRequest][] = [
      [
        'a target capacity other than 1',
        {
          ...planned,
          TargetCapacitySpecification: { ...planned.TargetCapacitySpecification, TotalTargetCapacity: 50 },
        },
      ],
      [
        'an override of ImageId',
        {
          ...planned,
          LaunchTemplateConfigs: [{ ...config, Overrides: [{ ...override, ImageId: 'ami-0someone' }] }],
        },
      ],
      [
        'instance type p5.48xlarge, not a candidate',
        {
          ...planned,
          LaunchTemplateConfigs: [{ ...config, Overrides: [{ ...override, InstanceType: 'p5.48xlarge' }] }],
        },
      ],
      ['instances not tagged for this NodeClaim', { ...planned, TagSpecifications: [] }],
    ];
    for (const [why, fleet] of tampered) {
      const record = { decidedAtMs: START.getTime(), request: encodeFleetRequest(fleet) };
      await expect(account.cloud.launch(request, record, { firstSend: true }), why).rejects.toMatchObject({
        name: 'LaunchRejectedError',
        awsCode: 'MalformedLaunchRecord',
        message: expect.stringContaining(why),
      });
    }
    expect(await account.cloud.list()).toEqual([]);
    // The request as planned still launches.
    const record = { decidedAtMs: START.getTime(), request: encodeFleetRequest(planned) };
    expect((await account.cloud.launch(request, record, { firstSend: true })).instanceType).toBe('m5.large');
  });
});
