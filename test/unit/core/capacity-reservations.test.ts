import { describe, expect, it } from 'vitest';
import { type InstanceType, Label, RESERVED_PRICE_DIVISOR, solve } from '../../../shared/core/index.ts';
import { fakeInstanceType, node, nodePool, pod, pods, solveInput, zoneName } from './builders.ts';

// Capacity reservations in the plan: a reserved offering is the cheapest, each reservation takes
// only as many new NodeClaims as it has room for, and those are pinned to it.

function withReservation(
  type: InstanceType,
  reservation: { id: string; zone: string; capacity: number; available?: boolean },
): InstanceType {
  const onDemand = type.offerings.find((o) => o.capacityType === 'on-demand')?.priceUsdPerHour ?? 0;
  return {
    ...type,
    offerings: [
      ...type.offerings,
      {
        zone: zoneName(reservation.zone),
        capacityType: 'reserved',
        priceUsdPerHour: onDemand / RESERVED_PRICE_DIVISOR,
        available: reservation.available ?? reservation.capacity > 0,
        reservationId: reservation.id,
        reservationCapacity: reservation.capacity,
        reservationType: 'default',
      },
    ],
  };
}

const twoVcpu = (name: string, memoryGiB: number, price: number) =>
  fakeInstanceType({ name, cpu: 2, memoryGiB, price, capacityTypes: ['on-demand', 'spot'] });
const m5 = twoVcpu('m5.large', 8, 0.096);
const c5 = twoVcpu('c5.large', 4, 0.085);
// Each pod takes most of a 2-vCPU node: one pod per NodeClaim.
const fourBigPods = () => pods(4, () => ({ cpu: '1500m', memory: '1Gi' }));
const reqValues = (
  claim: { requirements: readonly { key: string; values?: readonly string[] }[] },
  key: string,
) => claim.requirements.find((r) => r.key === key)?.values;

describe('reserved offerings in the plan', () => {
  const types = [withReservation(m5, { id: 'cr-0123456789abcdef0', zone: 'b', capacity: 2 }), c5];

  it('pins as many NodeClaims as the reservation has room for and leaves the rest for the next loop', () => {
    const result = solve(solveInput({ pods: fourBigPods(), types }));
    expect(result.nodeClaims).toHaveLength(2);
    for (const claim of result.nodeClaims) {
      expect(claim.instanceTypes).toEqual([
        { name: 'm5.large', priceUsdPerHour: 0.096 / RESERVED_PRICE_DIVISOR },
      ]);
      expect(claim.labels[Label.capacityType]).toBe('reserved');
      expect(claim.labels[Label.capacityReservationId]).toBe('cr-0123456789abcdef0');
      expect(claim.labels[Label.zone]).toBe(zoneName('b'));
      expect(reqValues(claim, Label.capacityReservationId)).toEqual(['cr-0123456789abcdef0']);
    }
    // Strict, as Karpenter provisions: no fallback to other capacity in the same loop.
    expect(result.unschedulable).toHaveLength(2);
    expect(result.unschedulable[0]?.message).toContain('cr-0123456789abcdef0');
    expect(result.unschedulable[0]?.reasons[0]?.nodePool).toBe('default');
  });

  it('in fallback mode puts the NodeClaims past the reservation on spot or on-demand', () => {
    const result = solve(
      solveInput({ pods: fourBigPods(), types, options: { reservedOfferingMode: 'fallback' } }),
    );
    expect(result.unschedulable).toEqual([]);
    const pinned = result.nodeClaims.filter((c) => c.labels[Label.capacityReservationId] !== undefined);
    const others = result.nodeClaims.filter((c) => c.labels[Label.capacityReservationId] === undefined);
    expect(pinned).toHaveLength(2);
    expect(others).toHaveLength(2);
    for (const claim of others) {
      expect(claim.requirements).toContainEqual({
        key: Label.capacityType,
        operator: 'NotIn',
        values: ['reserved'],
      });
      // The cheapest offering left is c5.large on spot.
      expect(claim.instanceTypes[0]).toEqual({ name: 'c5.large', priceUsdPerHour: 0.085 * 0.4 });
    }
  });

  it('ignores a reservation that has no room (its offering is unavailable)', () => {
    const full = [withReservation(m5, { id: 'cr-0000000000000full', zone: 'a', capacity: 0 }), c5];
    const result = solve(solveInput({ pods: fourBigPods(), types: full }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(4);
    expect(result.nodeClaims.every((c) => c.labels[Label.capacityReservationId] === undefined)).toBe(true);
  });

  it('never pins a NodeClaim whose NodePool does not allow reserved capacity', () => {
    const onDemandOnly = nodePool({
      requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
    });
    const result = solve(solveInput({ pods: fourBigPods(), types, nodePools: [onDemandOnly] }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(4);
    expect(result.nodeClaims.every((c) => c.labels[Label.capacityReservationId] === undefined)).toBe(true);
  });

  it('fills the cheaper reservation first, then the next one', () => {
    const two = [
      withReservation(withReservation(m5, { id: 'cr-000000000000000b', zone: 'b', capacity: 1 }), {
        id: 'cr-000000000000000a',
        zone: 'a',
        capacity: 1,
      }),
      c5,
    ];
    const result = solve(solveInput({ pods: pods(2, () => ({ cpu: '1500m', memory: '1Gi' })), types: two }));
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims.map((c) => c.labels[Label.capacityReservationId]).sort()).toEqual([
      'cr-000000000000000a',
      'cr-000000000000000b',
    ]);
  });
});

describe('strict mode: the plan no longer counts a NodeClaim it leaves out', () => {
  // One room in the reservation of zone a; two big pods that must run in zone a; a small pod that
  // must run in the zone of the second big pod, and an existing node in zone a it fits on.
  const reservedA = [withReservation(m5, { id: 'cr-00000000000000a1', zone: 'a', capacity: 1 }), c5];
  const input = () => {
    const first = pod({ name: 'big-1', cpu: '1500m', memory: '1Gi', zone: 'a', labels: { app: 'big-1' } });
    const second = pod({ name: 'big-2', cpu: '1500m', memory: '1Gi', zone: 'a', labels: { app: 'big-2' } });
    const follower = pod({
      name: 'follower',
      cpu: '100m',
      memory: '128Mi',
      affinity: {
        podAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { labelSelector: { matchLabels: { app: 'big-2' } }, topologyKey: Label.zone },
          ],
        },
      },
    });
    return solveInput({
      pods: [first, second, follower],
      types: reservedA,
      nodes: [node({ name: 'small-a', cpu: '1', memory: '2Gi', zone: 'a' })],
    });
  };

  it('does not place a pod next to a pod whose NodeClaim waits for the next loop', () => {
    const result = solve(input());
    expect(result.nodeClaims).toHaveLength(1);
    expect(result.nodeClaims[0]?.labels[Label.capacityReservationId]).toBe('cr-00000000000000a1');
    expect(result.nodeClaims[0]?.pods.map((p) => p.name)).toEqual(['big-1']);
    // big-2 lost the reservation and waits; the follower has nothing to follow in zone a yet, so it
    // is not placed on small-a as if big-2 ran there.
    expect(result.unschedulable.map((u) => u.pod.name).sort()).toEqual(['big-2', 'follower']);
    expect(result.placements).toEqual([]);
  });

  it('in fallback mode keeps both big pods and the follower', () => {
    const result = solve({ ...input(), options: { reservedOfferingMode: 'fallback' } });
    expect(result.unschedulable).toEqual([]);
    expect(result.nodeClaims).toHaveLength(2);
  });
});
