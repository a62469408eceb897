import { describe, expect, it } from 'vitest';
import { Label, type Pod, type SolveResult, solve } from '../../../../shared/core/index.ts';
import { commandSavings, memoSimulation, mostSaving } from '../../../../shared/usecases/disruption/choose.ts';
import { MIN_SAVINGS_ANNOTATION } from '../../../../shared/usecases/disruption/consolidation.ts';
import type {
  DisruptionCandidate,
  DisruptionCommand,
  MethodContext,
  SimulateScheduling,
} from '../../../../shared/usecases/disruption/method.ts';
import { multiNodeConsolidation } from '../../../../shared/usecases/disruption/multi-node.ts';
import { repackConsolidation } from '../../../../shared/usecases/disruption/repack.ts';
import {
  evaluateSingleNode,
  SINGLE_NODE_MAX_SIMULATIONS,
  singleNodeConsolidation,
} from '../../../../shared/usecases/disruption/single-node.ts';
import { validateCommand } from '../../../../shared/usecases/disruption/validation.ts';
import { catalogInstanceTypes } from '../../core/builders.ts';
import { boundPod, candidate, consolidatable, pool, replacement, T0 } from './builders.ts';

// Single-node consolidation's re-plan onto one node, with the provisioner's real solver as the
// simulation: the node left after a scale-down of 40 replicas of (1 cpu, 2 GiB) to 4.

const C6A = catalogInstanceTypes({
  filter: (t) => t.family === 'c6a',
  capacityTypes: ['on-demand'],
  zones: ['a'],
});
const context: MethodContext = {
  instanceTypes: () => C6A,
  poolTotals: new Map(),
  nowMs: T0,
};

const webPod = (i: number): Pod =>
  boundPod(`web-${i}`, undefined, {
    containers: [{ name: 'main', requests: { cpu: 1000, memory: 2 * 2 ** 30 } }],
  });

/** The c6a.8xlarge holding the 4 pods left; the NodePool's minimum savings set to `minSavings`. */
function leftover(minSavings: string): DisruptionCandidate {
  return consolidatable('big', {
    nodePool: pool('default', {}, { annotations: { [MIN_SAVINGS_ANNOTATION]: minSavings } }),
    instanceType: 'c6a.8xlarge',
    pods: [0, 1, 2, 3].map(webPod),
    price: 1.224,
  });
}

/** Its pods on an empty cluster of one c6a on-demand NodePool, by the real solver. */
const simulate: SimulateScheduling & { options: unknown[] } = Object.assign(
  (candidates: readonly DisruptionCandidate[], options?: { maxNewNodeClaims?: number }): SolveResult => {
    simulate.options.push(options);
    return solve({
      pods: candidates.flatMap((c) => c.reschedulablePods),
      nodePools: [
        {
          name: 'default',
          nodeClassName: 'default',
          requirements: [{ key: Label.capacityType, operator: 'In', values: ['on-demand'] }],
        },
      ],
      instanceTypes: new Map([['default', C6A]]),
      nowMs: T0,
      ...(options?.maxNewNodeClaims === undefined
        ? {}
        : { options: { maxNewNodeClaims: options.maxNewNodeClaims } }),
    });
  },
  { options: [] as unknown[] },
);

describe('single-node consolidation of a node whose pods the cheapest plan puts on two', () => {
  it('replaces it with one cheaper node holding all its pods', () => {
    const [command] = singleNodeConsolidation.computeCommands(
      [leftover('0%')],
      new Map([['default', 1]]),
      simulate,
      context,
    );
    expect(command).toMatchObject({ method: singleNodeConsolidation, reason: 'Underutilized', podsMoved: 4 });
    expect(command?.replacements).toHaveLength(1);
    expect(command?.replacements[0]?.instanceTypes[0]).toEqual({
      name: 'c6a.2xlarge',
      priceUsdPerHour: 0.306,
    });
    expect(command === undefined ? 0 : commandSavings(command)).toBeCloseTo(1.224 - 0.306, 6);
    // The cheapest plan first (two nodes), then the re-plan onto one.
    expect(simulate.options.slice(-2)).toEqual([undefined, { maxNewNodeClaims: 1 }]);
    // Validated after the wait as it was decided: re-planned onto one node, the same command.
    expect(command?.simulation).toEqual({ maxNewNodeClaims: 1 });
    if (command === undefined) return;
    const again = validateCommand({
      command,
      fresh: {
        candidates: [leftover('0%')],
        excluded: [],
        counts: new Map(),
        poolTotals: new Map(),
        spotFailedAtMs: new Map(),
      },
      allowed: new Map([['default', 1]]),
      simulate,
      nowMs: context.nowMs,
    });
    expect(again.kind).toBe('valid');
    expect(simulate.options.at(-1)).toEqual({ maxNewNodeClaims: 1 });
  });

  it('keeps it, saying why, when the one node would not save the minimum', () => {
    // 0.306 against 1.224 saves 75%: a minimum of 80% keeps the node.
    const found: string[] = [];
    const commands = singleNodeConsolidation.computeCommands(
      [leftover('80%')],
      new Map([['default', 1]]),
      simulate,
      { ...context, unconsolidatable: (c, why) => found.push(`${c.nodeClaim.name}: ${why}`) },
    );
    expect(commands).toEqual([]);
    expect(found).toEqual([
      'big: the pods need 2 new nodes, and on one new node: a replacement would be no cheaper than the candidate of its type',
    ]);
  });

  it('says its look was partial when it could try only some of its candidates, so the memo does not rest on it', () => {
    // 80% keeps every node: each one tried is looked at in vain.
    const tried = (count: number) => {
      let partial = 0;
      const found: string[] = [];
      const many = Array.from({ length: count }, (_, i) =>
        consolidatable(`big-${i}`, {
          nodePool: pool('default', {}, { annotations: { [MIN_SAVINGS_ANNOTATION]: '80%' } }),
          instanceType: 'c6a.8xlarge',
          pods: [0, 1, 2, 3].map(webPod),
          price: 1.224,
        }),
      );
      const commands = singleNodeConsolidation.computeCommands(
        many,
        new Map([['default', count]]),
        simulate,
        {
          ...context,
          unconsolidatable: (c) => found.push(c.nodeClaim.name),
          partial: () => {
            partial += 1;
          },
        },
      );
      return { commands: commands.length, tried: found.length, partial };
    };
    expect(tried(SINGLE_NODE_MAX_SIMULATIONS)).toEqual({
      commands: 0,
      tried: SINGLE_NODE_MAX_SIMULATIONS,
      partial: 0,
    });
    expect(tried(SINGLE_NODE_MAX_SIMULATIONS + 1)).toEqual({
      commands: 0,
      tried: SINGLE_NODE_MAX_SIMULATIONS,
      partial: 1,
    });
  });

  it('does not re-plan when the cheapest plan needs one new node or none', () => {
    const one = Object.assign((cs: readonly DisruptionCandidate[], o?: { maxNewNodeClaims?: number }) => {
      calls.push(o);
      return simulate(cs, o);
    }, {});
    const calls: unknown[] = [];
    const twoPods = { ...leftover('0%'), reschedulablePods: [webPod(0), webPod(1)] };
    expect(evaluateSingleNode(twoPods, one, context).kind).toBe('command');
    expect(calls).toEqual([undefined]);
  });
});

describe('the consolidation command a pass acts on', () => {
  const command = (
    method: DisruptionCommand['method'],
    before: number[],
    after: number[],
  ): DisruptionCommand => ({
    method,
    reason: 'Underutilized',
    candidates: before.map((price, i) => ({ ...candidate(`${method.name}-${i}`), pricePerHour: price })),
    replacements: after.map((price, i) => ({
      ...replacement(`${method.name}-r${i}`),
      instanceTypes: [{ name: 'c6a.large', priceUsdPerHour: price }],
    })),
  });

  it('is the one that saves most $/hour, whichever method proposed it', () => {
    const multi = command(multiNodeConsolidation, [0.2, 0.2], [0.3]); // saves 0.10
    const repack = command(repackConsolidation, [0.2, 0.2, 0.2], [0.15, 0.15]); // saves 0.30
    const single = command(singleNodeConsolidation, [1.224], [0.306]); // saves 0.918
    expect(mostSaving([multi, repack, single])).toBe(single);
    expect(mostSaving([multi, repack])).toBe(repack);
    expect(mostSaving([])).toBeUndefined();
  });

  it('is the first in the methods order on a tie', () => {
    const multi = command(multiNodeConsolidation, [0.4], [0.2]);
    const single = command(singleNodeConsolidation, [0.3], [0.1]);
    expect(mostSaving([multi, single])).toBe(multi);
  });
});

describe('the simulations of one pass', () => {
  it('run once per set of candidates and options, whichever method asks', () => {
    const counted: string[] = [];
    const memo = memoSimulation((candidates, options) => {
      counted.push(
        `${candidates.map((c) => c.nodeClaim.name).join('+')}/${options?.maxNewNodeClaims ?? '-'}`,
      );
      return simulate(candidates, options);
    });
    const [a, b] = [
      leftover('0%'),
      { ...leftover('0%'), nodeClaim: { ...leftover('0%').nodeClaim, name: 'b' } },
    ];
    const first = memo([a, b]);
    expect(memo([b, a])).toBe(first);
    memo([a]);
    memo([a], { maxNewNodeClaims: 1 });
    memo([a]);
    expect(counted).toEqual(['big+b/-', 'big/-', 'big/1']);
    // Single-node after a method that simulated the node alone: only the re-plan is new.
    singleNodeConsolidation.computeCommands([a], new Map([['default', 1]]), memo, context);
    expect(counted).toHaveLength(3);
  });
});
