import { describe, expect, it } from 'vitest';
import { type InstanceType, Label, RESERVED_PRICE_DIVISOR, solve } from '../../../shared/core/index.ts';
import { fakeInstanceType, pod, pods, solveInput, zoneName } from './builders.ts';

// Interruptible capacity reservations, as Karpenter v1.14 plans them: their offerings carry
// `karpenter.k8s.aws/capacity-reservation-interruptible`, pods select by it, and of equally priced
// reservations an interruptible one is taken last.

const LABEL = Label.capacityReservationInterruptible;

function withReservations(
  type: InstanceType,
  reservations: readonly { id: string; capacity: number; interruptible: boolean }[],
): InstanceType {
  const onDemand = type.offerings.find((o) => o.capacityType === 'on-demand')?.priceUsdPerHour ?? 0;
  return {
    ...type,
    offerings: [
      ...type.offerings,
      ...reservations.map((r) => ({
        zone: zoneName('a'),
        capacityType: 'reserved' as const,
        priceUsdPerHour: onDemand / RESERVED_PRICE_DIVISOR,
        available: true,
        reservationId: r.id,
        reservationCapacity: r.capacity,
        reservationType: 'default' as const,
        ...(r.interruptible ? { reservationInterruptible: true } : {}),
      })),
    ],
  };
}

const m5 = withReservations(
  fakeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096, capacityTypes: ['on-demand'] }),
  // The interruptible one sorts first by id: only the preference puts it last.
  [
    { id: 'cr-0aaaaaaaaaaaaaaaa', capacity: 1, interruptible: true },
    { id: 'cr-0bbbbbbbbbbbbbbbb', capacity: 1, interruptible: false },
  ],
);
const big = () => ({ cpu: '1500m', memory: '1Gi' });

describe('interruptible capacity reservations in the plan', () => {
  it('takes the non-interruptible reservation of the same price first, then the interruptible one', () => {
    const result = solve(
      solveInput({ pods: pods(3, big), types: [m5], options: { reservedOfferingMode: 'fallback' } }),
    );
    const pinned = result.nodeClaims.map((c) => [c.labels[Label.capacityReservationId], c.labels[LABEL]]);
    expect(pinned).toEqual([
      ['cr-0bbbbbbbbbbbbbbbb', 'false'],
      ['cr-0aaaaaaaaaaaaaaaa', 'true'],
      [undefined, undefined],
    ]);
  });

  it.each([
    ['false', 'cr-0bbbbbbbbbbbbbbbb'],
    ['true', 'cr-0aaaaaaaaaaaaaaaa'],
  ])('places a pod that selects %s only on such a reservation', (value, reservation) => {
    const result = solve(
      solveInput({
        pods: [pod({ ...big(), nodeSelector: { [LABEL]: value } })],
        types: [m5],
      }),
    );
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => c.labels[Label.capacityReservationId])).toEqual([reservation]);
    expect(result.nodeClaims[0]?.labels[LABEL]).toBe(value);
  });

  it('leaves a pod that selects an interruptible reservation pending when none is offered', () => {
    const plain = fakeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096 });
    const result = solve(
      solveInput({ pods: [pod({ ...big(), nodeSelector: { [LABEL]: 'true' } })], types: [plain] }),
    );
    expect(result.nodeClaims).toEqual([]);
    expect(result.unschedulable).toHaveLength(1);
  });
});
