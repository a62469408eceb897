import { describe, expect, it } from 'vitest';
import { type InstanceType, RESERVED_PRICE_DIVISOR } from '../../../../shared/core/index.ts';
import { isEmptyCandidate } from '../../../../shared/usecases/disruption/balanced.ts';
import { drift } from '../../../../shared/usecases/disruption/drift.ts';
import { emptiness } from '../../../../shared/usecases/disruption/emptiness.ts';
import type { DisruptionCommand, MethodContext } from '../../../../shared/usecases/disruption/index.ts';
import { METHODS, methodsAsked } from '../../../../shared/usecases/disruption/methods.ts';
import { multiNodeConsolidation } from '../../../../shared/usecases/disruption/multi-node.ts';
import { pickCommand } from '../../../../shared/usecases/disruption/next-command.ts';
import { repackConsolidation } from '../../../../shared/usecases/disruption/repack.ts';
import { replacementCapacity } from '../../../../shared/usecases/disruption/replacement-capacity.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import {
  boundPod,
  candidate,
  condition,
  consolidatable,
  READY_CONDITIONS,
  replacement,
  simulation,
  T0,
} from './builders.ts';

// Where consolidation follows Karpenter v1.14 by default: the first method with a command acts
// (repack, Flotilla's own, is switched off), a node whose pods all cost 0 or less to evict is empty,
// and a replacement the simulation places into a free capacity reservation slot launches there.

const CONSOLIDATABLE = [...READY_CONDITIONS, condition('Consolidatable')];

/** A command of `method` over candidate `name` ($/h `price`), replaced by a node at `after` $/h. */
function commandOf(method: DisruptionCommand['method'], name: string, price: number, after?: number) {
  const c = { ...candidate(name, { conditions: CONSOLIDATABLE }), pricePerHour: price };
  const replacements =
    after === undefined
      ? []
      : [{ ...replacement(`${name}-r`), instanceTypes: [{ name: 'm5.large', priceUsdPerHour: after }] }];
  return { method, reason: method.reason, candidates: [c], replacements } as DisruptionCommand;
}

describe('which method acts', () => {
  it('asks Karpenter’s methods (after a schedule’s window, which acts only on held NodePools) by default, and repack between the two consolidations when switched on', () => {
    expect(methodsAsked(false).map((m) => m.name)).toEqual([
      'schedule',
      'emptiness',
      'static-drift',
      'drift',
      'multi-node',
      'single-node',
    ]);
    expect(methodsAsked(true)).toBe(METHODS);
    expect(methodsAsked(true).map((m) => m.name)).toEqual([
      'schedule',
      'emptiness',
      'static-drift',
      'drift',
      'multi-node',
      'repack',
      'single-node',
    ]);
  });

  it('takes the first method’s command by default, even when a later one saves more', () => {
    const multi = commandOf(multiNodeConsolidation, 'a', 0.2, 0.15); // saves $0.05/h
    const single = commandOf(singleNodeConsolidation, 'b', 1, 0.1); // saves $0.90/h
    expect(pickCommand([multi, single], false)).toBe(multi);
    // Switched on, the consolidation commands compete on savings.
    expect(pickCommand([multi, single], true)).toBe(single);
  });

  it('takes a method whose policy is first at once, repack or not', () => {
    const drifted = commandOf(drift, 'd', 0.1, 0.1);
    const repack = commandOf(repackConsolidation, 'r', 5, 0.1);
    expect(pickCommand([drifted, repack], false)).toBe(drifted);
    expect(pickCommand([drifted, repack], true)).toBe(drifted);
    expect(pickCommand([], true)).toBeUndefined();
  });
});

describe('emptiness counts pods by eviction cost, as Karpenter v1.14', () => {
  // A deletion cost of -2^27 takes a pod's eviction cost from 1 to 0; a priority of -2^26 to -1.
  const free = boundPod('free', { deletionCost: -(2 ** 27) });
  const negative = boundPod('negative', { priority: -(2 ** 26) });
  const cheap = boundPod('cheap', { deletionCost: -(2 ** 26) }); // costs 0.5
  const emptyOf = (pods: ReturnType<typeof boundPod>[]) =>
    candidate('n', { conditions: CONSOLIDATABLE, pods });

  it.each([
    ['no pod at all', [], true],
    ['only pods whose eviction costs 0 or less', [free, negative], true],
    ['a pod that costs something to evict', [free, cheap], false],
    ['an ordinary pod', [boundPod('web')], false],
  ])('%s: empty %s', (_, pods, expected) => {
    const c = emptyOf(pods);
    expect(isEmptyCandidate(c)).toBe(expected);
    expect(emptiness.shouldDisrupt(c, T0)).toBe(expected);
  });

  it('leaves a node of free pods to emptiness: consolidation does not take it', () => {
    const c = {
      ...consolidatable('n', { instanceType: 'm5.large', pods: [free, negative], price: 0.1 }),
    };
    expect(emptiness.shouldDisrupt(c, T0)).toBe(true);
    for (const method of [multiNodeConsolidation, singleNodeConsolidation, repackConsolidation]) {
      expect(method.shouldDisrupt(c, T0)).toBe(false);
    }
    const [command] = emptiness.computeCommands([c], new Map([['default', 1]]), simulation());
    expect(command?.candidates.map((x) => x.nodeClaim.name)).toEqual(['n']);
    expect(command?.replacements).toEqual([]);
  });

  it('spends a budget on the priciest empty nodes first, as consolidation orders them', () => {
    const idle = (name: string, price: number, createdMinute: number) => ({
      ...candidate(name, { conditions: CONSOLIDATABLE, createdAtMs: T0 + createdMinute * 60_000 }),
      pricePerHour: price,
    });
    const [command] = emptiness.computeCommands(
      [idle('old-cheap', 0.05, 0), idle('new-dear', 0.8, 30), idle('mid', 0.2, 10)],
      new Map([['default', 2]]),
      simulation(),
    );
    expect(command?.candidates.map((c) => c.nodeClaim.name)).toEqual(['new-dear', 'mid']);
  });
});

describe('replacements into free capacity reservation slots', () => {
  /** m5.large with an on-demand offering and a reserved one with `count` free slots. */
  const reservedLarge: InstanceType = {
    name: 'm5.large',
    labels: { 'node.kubernetes.io/instance-type': 'm5.large' },
    capacity: { cpu: 2000, memory: 8 * 2 ** 30, pods: 29 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    offerings: [
      { zone: 'us-east-1a', capacityType: 'on-demand', priceUsdPerHour: 0.096, available: true },
      {
        zone: 'us-east-1a',
        capacityType: 'reserved',
        priceUsdPerHour: 0.096 / RESERVED_PRICE_DIVISOR,
        available: true,
        reservationId: 'cr-1',
        reservationCapacity: 2,
      },
    ],
  };
  const context: MethodContext = { instanceTypes: () => [reservedLarge], poolTotals: new Map(), nowMs: T0 };
  /** The simulation placed the candidate's pods on a new node in the reservation (pinned to it). */
  const intoReservation = simulation({
    replacements: [
      {
        ...replacement('r'),
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['reserved'] },
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
        ],
        instanceTypes: [{ name: 'm5.large', priceUsdPerHour: 0.096 / RESERVED_PRICE_DIVISOR }],
      },
    ],
  });

  it('replaces an on-demand node of the same type by a reserved one', () => {
    const c = consolidatable('od', { instanceType: 'm5.large', pods: [boundPod('web')], price: 0.096 });
    const [command] = singleNodeConsolidation.computeCommands(
      [c],
      new Map([['default', 1]]),
      intoReservation,
      context,
    );
    expect(command?.replacements).toHaveLength(1);
    const capacity = command?.replacements[0]?.requirements.find(
      (r) => r.key === 'karpenter.sh/capacity-type',
    );
    expect(capacity?.values).toEqual(['reserved']);
  });

  it('replaces a spot node into a reservation too, spot-to-spot off', () => {
    expect(
      replacementCapacity({ allowed: new Set(['reserved']), candidates: ['spot'], spotToSpot: false }),
    ).toEqual({ kind: 'capacityTypes', capacityTypes: new Set(['reserved']) });
  });
});
