import { describe, expect, it } from 'vitest';
import type { ProviderSettings } from '../../../shared/adapters/class-instance-types.ts';
import {
  bundledCatalog,
  makeMemoryCloud,
  makeMemoryNodeClassResolver,
} from '../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { resolveNodeClassStatus } from '../../../shared/usecases/nodeclass/status.ts';
import { DEFAULT_NODE_CLASS, RESERVATION } from './fixtures.ts';

// The simulator's twins under Karpenter's ReservedCapacity gate and AWS settings, as the EC2
// adapter: with the gate off a class's reservation terms are not resolved (no status, no
// CapacityReservationsReady) and no reserved offering is made even from a status resolved before;
// the VM memory overhead and reserved ENIs shape the bundled catalog's types.

const ZONES = ['us-east-1a', 'us-east-1b'];
const START = new Date('2026-11-21T10:00:00Z');
const RESERVING: EC2NodeClass = {
  ...DEFAULT_NODE_CLASS,
  spec: { ...DEFAULT_NODE_CLASS.spec, capacityReservationSelectorTerms: [{ id: RESERVATION.id }] },
};

async function resolved(reservedCapacity: boolean): Promise<EC2NodeClass> {
  const resolver = makeMemoryNodeClassResolver({
    zones: ZONES,
    capacityReservations: [RESERVATION],
    reservedCapacity,
  });
  return { ...RESERVING, status: await resolveNodeClassStatus(resolver, RESERVING, START) };
}

async function m5Large(nodeClass: EC2NodeClass, provider?: ProviderSettings) {
  const cloud = makeMemoryCloud({
    clock: makeManualClock(START),
    clusterName: 'sim',
    catalog: bundledCatalog('us-east-1', ZONES),
    capacityReservations: { [RESERVATION.id]: 2 },
    ...(provider === undefined ? {} : { provider }),
  });
  return (await cloud.instanceTypes(nodeClass)).find((t) => t.name === 'm5.large');
}

describe('the ReservedCapacity gate in the simulator', () => {
  it('resolves a class`s reservations with the gate on, and not with it off', async () => {
    const on = await resolved(true);
    expect(on.status?.capacityReservations).toEqual([RESERVATION]);
    expect(on.status?.conditions.map((c) => c.type)).toContain('CapacityReservationsReady');
    const off = await resolved(false);
    expect(off.status?.capacityReservations).toBeUndefined();
    expect(off.status?.conditions.map((c) => c.type)).not.toContain('CapacityReservationsReady');
    expect(off.status?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('offers the reservation with the gate on, and nothing reserved with it off', async () => {
    const nodeClass = await resolved(true);
    const reserved = async (provider?: ProviderSettings) =>
      (await m5Large(nodeClass, provider))?.offerings.filter((o) => o.capacityType === 'reserved');
    expect(await reserved()).toEqual([
      expect.objectContaining({ reservationId: RESERVATION.id, reservationCapacity: 2, available: true }),
    ]);
    expect(await reserved({ reservedCapacity: false })).toEqual([]);
  });
});

describe('the VM memory overhead and reserved ENIs in the simulator', () => {
  it('shape the bundled catalog`s types as they shape EC2`s', async () => {
    const nodeClass = await resolved(true);
    const plain = await m5Large(nodeClass);
    const tuned = await m5Large(nodeClass, { vmMemoryOverheadPercent: 0.1, reservedENIs: 1 });
    const MiB = 1024 ** 2;
    expect(plain?.capacity['memory']).toBe((8192 - 615) * MiB);
    expect(tuned?.capacity['memory']).toBe((8192 - 820) * MiB);
    expect(plain?.capacity['pods']).toBe(29);
    expect(tuned?.capacity['pods']).toBe(20);
  });
});
