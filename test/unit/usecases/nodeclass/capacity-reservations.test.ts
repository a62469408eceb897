import { describe, expect, it } from 'vitest';
import { launchTemplateData } from '../../../../shared/adapters/aws/launch-templates.ts';
import { parseEC2NodeClass } from '../../../../shared/apis/ec2nodeclass.ts';
import { Label } from '../../../../shared/core/index.ts';
import type {
  CapacityReservationStatus,
  CloudInstance,
  EC2NodeClass,
  NodeClassResolution,
} from '../../../../shared/ports/cloud.ts';
import { cloudDrift } from '../../../../shared/ports/cloud-drift.ts';
import { offeringKeyString } from '../../../../shared/ports/offering.ts';
import { capacityReservationDrift, driftOf } from '../../../../shared/usecases/disruption/conditions.ts';
import { interruptedOffering } from '../../../../shared/usecases/interruption/interruption.ts';
import { computeNodeClassStatus, validateNodeClass } from '../../../../shared/usecases/nodeclass/status.ts';
import { launchedLabels } from '../../../../shared/usecases/state/new-nodeclaim.ts';
import { readNodeClaim } from '../../../fixtures/node-claims.ts';
import { DEFAULT_NODE_CLASS } from '../../memory/fixtures.ts';

const T0 = new Date('2026-11-21T10:00:00Z');
const ODCR: CapacityReservationStatus = {
  id: 'cr-0a1b2c3d4e5f60001',
  availabilityZone: 'us-east-1b',
  instanceType: 'm5.large',
  instanceMatchCriteria: 'targeted',
  ownerID: '123456789012',
  reservationType: 'default',
  state: 'active',
};
const withTerms: EC2NodeClass = {
  ...DEFAULT_NODE_CLASS,
  spec: { ...DEFAULT_NODE_CLASS.spec, capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }] },
};
const base: NodeClassResolution = {
  subnets: { kind: 'resolved', value: [{ id: 'subnet-b', zone: 'us-east-1b' }] },
  securityGroups: { kind: 'resolved', value: [{ id: 'sg-1' }] },
  amis: { kind: 'resolved', value: [{ id: 'ami-1', requirements: [] }] },
  instanceProfile: { kind: 'resolved', value: 'profile' },
};

describe('EC2NodeClass capacity reservations', () => {
  it('parses the selector terms and the status list with the CRD defaults', () => {
    const parsed = parseEC2NodeClass({
      metadata: { name: 'gpu' },
      spec: {
        subnetSelectorTerms: [{ id: 'subnet-1' }],
        securityGroupSelectorTerms: [{ id: 'sg-1' }],
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        role: 'nodes',
        capacityReservationSelectorTerms: [
          { id: ODCR.id },
          { ownerID: '123456789012', instanceMatchCriteria: 'open' },
        ],
      },
      status: {
        capacityReservations: [{ ...ODCR, reservationType: undefined, state: undefined }],
      },
    });
    expect(parsed.spec.capacityReservationSelectorTerms).toEqual([
      { id: ODCR.id },
      { ownerID: '123456789012', instanceMatchCriteria: 'open' },
    ]);
    expect(parsed.status?.capacityReservations).toEqual([ODCR]);
  });

  it('refuses a malformed reservation id or owner with the field named', () => {
    const bad = (term: unknown) => () =>
      parseEC2NodeClass({
        metadata: { name: 'gpu' },
        spec: {
          subnetSelectorTerms: [{ id: 'subnet-1' }],
          securityGroupSelectorTerms: [{ id: 'sg-1' }],
          amiSelectorTerms: [{ alias: 'al2023@latest' }],
          capacityReservationSelectorTerms: [term],
        },
      });
    expect(bad({ id: 'reservation-1' })).toThrow(/capacityReservationSelectorTerms\.0\.id/);
    expect(bad({ ownerID: '12' })).toThrow(/capacityReservationSelectorTerms\.0\.ownerID/);
  });

  it('says what is wrong with a term the CRD rules would refuse', () => {
    const terms = [{ id: ODCR.id, tags: { team: 'ml' } }, { ownerID: '123456789012' }];
    const problems = validateNodeClass({
      ...DEFAULT_NODE_CLASS,
      spec: { ...DEFAULT_NODE_CLASS.spec, capacityReservationSelectorTerms: terms },
    });
    expect(problems).toEqual([
      'spec.capacityReservationSelectorTerms[0]: id is mutually exclusive with tags, ownerID and instanceMatchCriteria',
      'spec.capacityReservationSelectorTerms[1]: set one of tags, id or instanceMatchCriteria',
    ]);
  });

  it('adds CapacityReservationsReady and the list only for a class that selects reservations', () => {
    const plain = computeNodeClassStatus(DEFAULT_NODE_CLASS, base, T0).status;
    expect(plain.capacityReservations).toBeUndefined();
    expect(plain.conditions.some((c) => c.type === 'CapacityReservationsReady')).toBe(false);

    const selected = computeNodeClassStatus(
      withTerms,
      { ...base, capacityReservations: { kind: 'resolved', value: [ODCR] } },
      T0,
    ).status;
    expect(selected.capacityReservations).toEqual([ODCR]);
    expect(selected.conditions.map((c) => `${c.type}=${c.status}`)).toContain(
      'CapacityReservationsReady=True',
    );
    expect(selected.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('is not Ready when the reservations cannot be read, and keeps the last list while AWS fails for now', () => {
    const denied = computeNodeClassStatus(
      withTerms,
      {
        ...base,
        capacityReservations: {
          kind: 'failed',
          reason: 'CapacityReservationsResolutionFailed',
          message: 'ec2:DescribeCapacityReservations: UnauthorizedOperation',
        },
      },
      T0,
    ).status;
    expect(denied.conditions.find((c) => c.type === 'CapacityReservationsReady')).toMatchObject({
      status: 'False',
      reason: 'CapacityReservationsResolutionFailed',
    });
    expect(denied.conditions.find((c) => c.type === 'Ready')?.status).toBe('False');

    const previous: EC2NodeClass = {
      ...withTerms,
      status: computeNodeClassStatus(
        withTerms,
        { ...base, capacityReservations: { kind: 'resolved', value: [ODCR] } },
        T0,
      ).status,
    };
    const retried = computeNodeClassStatus(
      previous,
      { ...base, capacityReservations: { kind: 'retry', message: 'throttled' } },
      T0,
    );
    expect(retried.retrying).toEqual(['CapacityReservationsReady']);
    expect(retried.status.capacityReservations).toEqual([ODCR]);
  });
});

describe('a node in a capacity reservation', () => {
  const instance: CloudInstance = {
    instanceId: 'i-0123456789abcdef0',
    providerId: 'aws:///us-east-1b/i-0123456789abcdef0',
    instanceType: 'm5.large',
    zone: 'us-east-1b',
    capacityType: 'reserved',
    capacityReservationId: ODCR.id,
    capacityReservationType: 'default',
    state: 'running',
    tags: {},
  };
  const selecting = (list: readonly CapacityReservationStatus[]): EC2NodeClass => ({
    ...withTerms,
    status: { subnets: [], securityGroups: [], amis: [], capacityReservations: list, conditions: [] },
  });

  it('is labelled with the reservation id and type at launch', () => {
    expect(launchedLabels(instance, undefined, {}).labels).toMatchObject({
      [Label.capacityType]: 'reserved',
      [Label.capacityReservationId]: ODCR.id,
      [Label.capacityReservationType]: 'default',
    });
  });

  it('drifts once its reservation is no longer among the class', () => {
    const labels = { [Label.capacityType]: 'reserved', [Label.capacityReservationId]: ODCR.id };
    expect(capacityReservationDrift(labels, selecting([ODCR]))).toBeUndefined();
    expect(capacityReservationDrift(labels, selecting([]))?.reason).toBe('CapacityReservationDrift');
    expect(capacityReservationDrift({ [Label.capacityType]: 'on-demand' }, selecting([]))).toBeUndefined();
    expect(cloudDrift(instance, selecting([ODCR]))).toBeUndefined();
    expect(cloudDrift(instance, selecting([]))).toBe('CapacityReservationDrift');
  });

  it('does not drift once relabelled on-demand, though EC2 still names the reservation it left', () => {
    const claim = (capacityType: string) =>
      readNodeClaim('relabelled', { labels: { [Label.capacityType]: capacityType } });
    const input = (capacityType: string) => ({
      claim: claim(capacityType),
      node: undefined,
      pool: undefined,
      nodeClass: selecting([]),
      instance,
      nowMs: T0.getTime(),
    });
    expect(driftOf(input('on-demand'))).toBeUndefined();
    expect(driftOf(input('reserved'))?.reason).toBe('CapacityReservationDrift');
  });

  it('backs off its own reservation on a capacity-reservation interruption, not the others of its type and zone', () => {
    const labels = {
      [Label.instanceType]: 'm5.large',
      [Label.zone]: 'us-east-1b',
      [Label.capacityType]: 'reserved',
      [Label.capacityReservationId]: ODCR.id,
    };
    const key = interruptedOffering({ labels }, 'reserved');
    expect(key).toEqual({
      instanceType: 'm5.large',
      zone: 'us-east-1b',
      capacityType: 'reserved',
      reservationId: ODCR.id,
    });
    expect(key === undefined ? '' : offeringKeyString(key)).toBe(`reserved:m5.large:us-east-1b:${ODCR.id}`);
    expect(offeringKeyString({ instanceType: 'm5.large', zone: 'us-east-1b', capacityType: 'spot' })).toBe(
      'spot:m5.large:us-east-1b',
    );
    expect(interruptedOffering({ labels })).toBeUndefined();
    // Without its reservation id there is no reservation to back off.
    const { [Label.capacityReservationId]: _, ...unnamed } = labels;
    expect(interruptedOffering({ labels: unnamed }, 'reserved')).toBeUndefined();
  });

  it('is launched through a template that targets the reservation (and the capacity-block market)', () => {
    const input = {
      nodeClass: withTerms,
      family: 'AL2023' as const,
      imageId: 'ami-1',
      userData: '',
      tags: {},
    };
    const odcr = launchTemplateData({ ...input, capacityReservation: { id: ODCR.id, type: 'default' } });
    expect(odcr.CapacityReservationSpecification).toEqual({
      CapacityReservationTarget: { CapacityReservationId: ODCR.id },
    });
    expect(odcr.InstanceMarketOptions).toBeUndefined();
    const block = launchTemplateData({
      ...input,
      capacityReservation: { id: ODCR.id, type: 'capacity-block' },
    });
    expect(block.InstanceMarketOptions).toEqual({ MarketType: 'capacity-block' });
    expect(launchTemplateData(input).CapacityReservationSpecification).toBeUndefined();
  });
});
