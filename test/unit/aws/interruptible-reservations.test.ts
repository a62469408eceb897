import type { Instance } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { fleetCapacityOptions } from '../../../shared/adapters/aws/fleet-plan.ts';
import { toCloudInstance } from '../../../shared/adapters/aws/instances.ts';
import { launchTemplateData } from '../../../shared/adapters/aws/launch-templates.ts';
import { reservedOfferings } from '../../../shared/adapters/class-instance-types.ts';
import { selectCandidates } from '../../../shared/adapters/launch-plan.ts';
import { DEFAULT_METADATA_OPTIONS } from '../../../shared/apis/index.ts';
import { type InstanceType, Label, type Offering } from '../../../shared/core/index.ts';
import type { CapacityReservationStatus, EC2NodeClass, LaunchRequest } from '../../../shared/ports/cloud.ts';
import { launchedLabels } from '../../../shared/usecases/state/new-nodeclaim.ts';

// Interruptible capacity reservations from the EC2NodeClass status to the instance: offerings
// that say so, one kind of reservation per launch (an interruptible one last among equal prices),
// the CreateFleet market EC2 sells them in, and the label on the launched NodeClaim and Node.

const ZONE = 'us-east-1a';

function reservation(id: string, instanceType: string, interruptible?: boolean): CapacityReservationStatus {
  return {
    id,
    availabilityZone: ZONE,
    instanceType,
    instanceMatchCriteria: 'targeted',
    ownerID: '123456789012',
    reservationType: 'default',
    state: 'active',
    ...(interruptible === undefined ? {} : { interruptible }),
  };
}

function nodeClass(reservations: readonly CapacityReservationStatus[]): EC2NodeClass {
  return {
    name: 'default',
    spec: {
      subnetSelectorTerms: [],
      securityGroupSelectorTerms: [],
      amiSelectorTerms: [],
      metadataOptions: DEFAULT_METADATA_OPTIONS,
      capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }],
    },
    status: {
      subnets: [{ id: 'subnet-a', zone: ZONE }],
      securityGroups: [{ id: 'sg-1' }],
      amis: [{ id: 'ami-1', requirements: [] }],
      capacityReservations: reservations,
      conditions: [],
    },
  };
}

const RESERVATIONS = [
  reservation('cr-0aaaaaaaaaaaaaaaa', 'm5.large', true),
  reservation('cr-0bbbbbbbbbbbbbbbb', 'm5.large', false),
  reservation('cr-0cccccccccccccccc', 'c5.large'),
];

function type(name: string, onDemand: number, classOf: EC2NodeClass): InstanceType {
  const offerings: Offering[] = [
    { zone: ZONE, capacityType: 'on-demand', priceUsdPerHour: onDemand, available: true },
    ...reservedOfferings(
      { name, offerings: [{ capacityType: 'on-demand', priceUsdPerHour: onDemand }] },
      {
        nodeClass: classOf,
        unavailable: new Set(),
        reservationCapacity: new Map(RESERVATIONS.map((r) => [r.id, 1])),
      },
      new Set([ZONE]),
    ),
  ];
  return {
    name,
    labels: { [Label.instanceType]: name },
    capacity: { cpu: 2000, memory: 8 * 1024 ** 3, pods: 29 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings,
  };
}

function launch(classOf: EC2NodeClass, instanceTypes: InstanceType[]): LaunchRequest {
  return {
    nodeClaimName: 'default-x1',
    nodePoolName: 'default',
    nodeClass: classOf,
    instanceTypes,
    requirements: [{ key: Label.capacityType, operator: 'In', values: ['reserved', 'on-demand'] }],
    labels: {},
    taints: [],
    startupTaints: [],
  };
}

describe('interruptible capacity reservations at launch', () => {
  const both = nodeClass(RESERVATIONS);

  it("marks the offerings of an interruptible reservation from the class's status", () => {
    const m5 = type('m5.large', 0.096, both);
    const reserved = m5.offerings.filter((o) => o.capacityType === 'reserved');
    expect(reserved.map((o) => [o.reservationId, o.reservationInterruptible === true])).toEqual([
      ['cr-0aaaaaaaaaaaaaaaa', true],
      ['cr-0bbbbbbbbbbbbbbbb', false],
    ]);
  });

  it('launches into the non-interruptible reservation of the same price, and only that kind', () => {
    const selection = selectCandidates(launch(both, [type('m5.large', 0.096, both)]), new Set(), new Map());
    expect(selection?.capacityType).toBe('reserved');
    expect(selection?.candidates.flatMap((c) => c.offerings.map((o) => o.reservationId))).toEqual([
      'cr-0bbbbbbbbbbbbbbbb',
    ]);
  });

  it('launches into an interruptible reservation that is cheaper, on its own market', () => {
    // c5.large is not reserved here; an interruptible m5.large reservation is the cheapest.
    const onlyInterruptible = nodeClass([RESERVATIONS[0] as CapacityReservationStatus]);
    const types = [type('m5.large', 0.096, onlyInterruptible), type('c5.large', 0.085, onlyInterruptible)];
    const selection = selectCandidates(launch(onlyInterruptible, types), new Set(), new Map());
    const offerings = selection?.candidates.flatMap((c) => c.offerings) ?? [];
    expect(offerings.map((o) => o.reservationId)).toEqual(['cr-0aaaaaaaaaaaaaaaa']);
    expect(fleetCapacityOptions('reserved', selection?.candidates ?? [], false)).toEqual({
      TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'reserved-capacity' },
      ReservedCapacityOptions: { ReservationTypes: ['interruptible-capacity-reservation'] },
    });
    const template = launchTemplateData({
      nodeClass: onlyInterruptible,
      family: 'AL2023',
      imageId: 'ami-1',
      userData: '',
      tags: {},
      capacityReservation: { id: 'cr-0aaaaaaaaaaaaaaaa', type: 'default', interruptible: true },
    });
    expect(template.InstanceMarketOptions).toEqual({ MarketType: 'interruptible-capacity-reservation' });
  });

  it('buys an On-Demand Capacity Reservation as on-demand capacity that uses it first, as before', () => {
    const selection = selectCandidates(launch(both, [type('m5.large', 0.096, both)]), new Set(), new Map());
    expect(fleetCapacityOptions('reserved', selection?.candidates ?? [], false)).toEqual({
      TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
      OnDemandOptions: {
        AllocationStrategy: 'lowest-price',
        CapacityReservationOptions: { UsageStrategy: 'use-capacity-reservations-first' },
      },
    });
  });

  it('honours a NodeClaim that requires a non-interruptible reservation', () => {
    const onlyInterruptible = nodeClass([RESERVATIONS[0] as CapacityReservationStatus]);
    const request = launch(onlyInterruptible, [type('m5.large', 0.096, onlyInterruptible)]);
    const selection = selectCandidates(
      {
        ...request,
        requirements: [
          ...request.requirements,
          { key: Label.capacityReservationInterruptible, operator: 'NotIn', values: ['true'] },
        ],
      },
      new Set(),
      new Map(),
    );
    expect(selection?.capacityType).toBe('on-demand');
  });

  it("labels the launched NodeClaim with whether its reservation is interruptible, from the instance's lifecycle", () => {
    const instance = (lifecycle?: Instance['InstanceLifecycle']): Instance => ({
      InstanceId: 'i-0123456789abcdef0',
      InstanceType: 'm5.large',
      Placement: { AvailabilityZone: ZONE },
      CapacityReservationId: 'cr-0aaaaaaaaaaaaaaaa',
      State: { Name: 'running' },
      ...(lifecycle === undefined ? {} : { InstanceLifecycle: lifecycle }),
    });
    const interruptible = toCloudInstance(instance('interruptible-capacity-reservation'));
    expect(interruptible).toMatchObject({ capacityType: 'reserved', capacityReservationInterruptible: true });
    expect(launchedLabels(interruptible, undefined, {}).labels).toMatchObject({
      [Label.capacityReservationId]: 'cr-0aaaaaaaaaaaaaaaa',
      [Label.capacityReservationInterruptible]: 'true',
    });
    const odcr = toCloudInstance(instance());
    expect(launchedLabels(odcr, undefined, {}).labels?.[Label.capacityReservationInterruptible]).toBe(
      'false',
    );
    const { CapacityReservationId: _, ...onDemand } = instance();
    expect(launchedLabels(toCloudInstance(onDemand), undefined, {}).labels).not.toHaveProperty(
      Label.capacityReservationInterruptible,
    );
  });
});
