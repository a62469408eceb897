import { describe, expect, it } from 'vitest';
import {
  BALANCED_MIN_SCORE,
  balancedDisruption,
  balancedRejection,
  balancedScore,
  commandMoves,
} from '../../../../shared/usecases/disruption/balanced.ts';
import { evaluateConsolidation } from '../../../../shared/usecases/disruption/consolidation.ts';
import type { DisruptionCandidate, MethodContext } from '../../../../shared/usecases/disruption/index.ts';
import type { ConsolidationMove } from '../../../../shared/usecases/disruption/method.ts';
import { multiNodeConsolidation } from '../../../../shared/usecases/disruption/multi-node.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { boundPod, consolidatable, pool, simulation, T0 } from './builders.ts';

// The Balanced policy's score, as Karpenter v1 computes it: savings and disruption each as a
// fraction of the whole NodePool's, a per-node base cost of 1, and its guards.

/** A consolidatable m5.xlarge of a Balanced NodePool running `pods` pods, at `price` $/h. */
function balanced(name: string, price: number, pods: number, poolName = 'default'): DisruptionCandidate {
  return consolidatable(name, {
    nodePool: pool(poolName, { consolidationPolicy: 'Balanced' }),
    instanceType: 'm5.xlarge',
    pods: Array.from({ length: pods }, (_, i) => boundPod(`${name}-${i}`)),
    price,
  });
}

const context = (totals: MethodContext['poolTotals']): MethodContext => ({
  instanceTypes: () => [],
  poolTotals: totals,
  nowMs: T0,
});

describe('balancedDisruption: 1 per node plus its pods, none below 0', () => {
  it.each([
    ['an empty node', [], 1],
    ['three plain pods', [boundPod('a'), boundPod('b'), boundPod('c')], 4],
    ['a pod of low priority (cost below 0 counts as 0)', [boundPod('low', { priority: -(2 ** 30) })], 1],
    ['a pod with a deletion cost', [boundPod('db', { deletionCost: 2 ** 27 })], 3],
  ])('%s', (_, pods, expected) => {
    expect(balancedDisruption(pods)).toBeCloseTo(expected, 10);
  });
});

describe('balancedScore', () => {
  it.each([
    [
      'savings 10% for 20% of the disruption: 0.5, approved',
      0.1,
      2,
      { pricePerHour: 1, disruptionCost: 10 },
      0.5,
      true,
    ],
    [
      'savings 10% for 30% of the disruption: rejected',
      0.1,
      3,
      { pricePerHour: 1, disruptionCost: 10 },
      1 / 3,
      false,
    ],
    ['a NodePool that costs nothing: rejected', 0.1, 1, { pricePerHour: 0, disruptionCost: 10 }, 0, false],
    ['no saving: rejected', 0, 1, { pricePerHour: 1, disruptionCost: 10 }, 0, false],
    [
      'nothing to disrupt in the NodePool: approved',
      0.01,
      1,
      { pricePerHour: 1, disruptionCost: 0 },
      Number.POSITIVE_INFINITY,
      true,
    ],
  ] as const)('%s', (_, savings, disruption, totals, score, approved) => {
    const result = balancedScore(savings, disruption, totals);
    expect(result.approved).toBe(approved);
    expect(result.score).toBeCloseTo(score, 10);
  });

  it('rejects when the NodePool has no totals', () => {
    expect(balancedScore(1, 1, undefined)).toEqual({
      approved: false,
      score: 0,
      savingsFraction: 0,
      disruptionFraction: 0,
    });
    expect(BALANCED_MIN_SCORE).toBe(0.5);
  });
});

describe('Balanced consolidation', () => {
  it("counts the candidates' base cost of 1 each: a move a pod count alone would approve is rejected", () => {
    // Deleting a ($0.10/h, 1 pod) out of a NodePool of $1/h and disruption 10 saves 10%. Its
    // disruption is 2 (1 + 1 pod): 20%, score 0.5, approved; with 2 pods it is 3: 30%, rejected.
    const totals = new Map([['default', { pricePerHour: 1, disruptionCost: 10 }]]);
    const approved = evaluateConsolidation(
      singleNodeConsolidation,
      [balanced('a', 0.1, 1)],
      simulation(),
      context(totals),
    );
    // The command carries the NodePool's verdict, which its ConsolidationApproved Event tells.
    expect(approved.kind === 'command' ? approved.command.balanced : undefined).toEqual([
      { nodePool: 'default', approved: true, score: 0.5, savingsFraction: 0.1, disruptionFraction: 0.2 },
    ]);
    expect(
      evaluateConsolidation(singleNodeConsolidation, [balanced('a', 0.1, 2)], simulation(), context(totals)),
    ).toEqual({
      kind: 'invalid',
      why: "nodePool default: Balanced score 0.33 is below the threshold 0.50 (k 2): it saves 10.0% of the NodePool's $/hour for 30.0% of its disruption",
    });
  });

  it('scores against the whole NodePool: the larger it is, the smaller each fraction', () => {
    const candidates = [balanced('a', 0.01, 10), balanced('b', 0.01, 10)];
    const commands = (pricePerHour: number) =>
      multiNodeConsolidation.computeCommands(
        candidates,
        new Map([['default', 2]]),
        simulation(),
        context(new Map([['default', { pricePerHour, disruptionCost: 44 }]])),
      );
    // Deleting both saves $0.02/h for 22 of the NodePool's 44 of disruption.
    expect(commands(10)).toEqual([]);
    expect(commands(0.05)).toHaveLength(1);
  });

  it('credits each Balanced NodePool of a move with its share of the savings, and asks no other policy', () => {
    const a = balanced('a', 0.3, 1, 'web');
    const b = balanced('b', 0.1, 1, 'batch');
    const totals = new Map([
      ['web', { pricePerHour: 1, disruptionCost: 10 }],
      ['batch', { pricePerHour: 1, disruptionCost: 10 }],
    ]);
    // 0.2 saved: web gets 0.15 (15% of it, for 20% disruption: 0.75), batch 0.05 (5%, 20%: 0.25).
    expect(balancedRejection([a, b], 0.2, totals)).toBe(
      "nodePool batch: Balanced score 0.25 is below the threshold 0.50 (k 2): it saves 5.0% of the NodePool's $/hour for 20.0% of its disruption",
    );
    const underutilized = {
      ...b,
      nodePool: pool('batch', { consolidationPolicy: 'WhenEmptyOrUnderutilized' }),
    };
    expect(balancedRejection([a, underutilized], 0.2, totals)).toBeUndefined();
  });
});

// Karpenter's consolidation moves and scores: each single-candidate move weighed, approved or
// rejected, and each multi-node command decided, once per NodePool of its candidates.
describe('the consolidation moves counted', () => {
  it('tells each single-candidate move with its verdict and score, and a command decided per NodePool', () => {
    const totals = new Map([['default', { pricePerHour: 1, disruptionCost: 10 }]]);
    const moves: ConsolidationMove[] = [];
    const told = { ...context(totals), move: (m: ConsolidationMove) => moves.push(m) };
    evaluateConsolidation(singleNodeConsolidation, [balanced('a', 0.1, 1)], simulation(), told);
    evaluateConsolidation(singleNodeConsolidation, [balanced('b', 0.1, 2)], simulation(), told);
    // A prefix of a multi-node search is not a move of its own.
    evaluateConsolidation(
      multiNodeConsolidation,
      [balanced('a', 0.1, 1), balanced('c', 0.1, 1)],
      simulation(),
      told,
    );
    expect(moves).toEqual([
      { nodePool: 'default', policy: 'Balanced', decision: 'approved', score: 0.5 },
      { nodePool: 'default', policy: 'Balanced', decision: 'rejected', score: expect.closeTo(1 / 3, 6) },
    ]);
    const command = evaluateConsolidation(
      multiNodeConsolidation,
      [balanced('a', 0.1, 1, 'web'), balanced('c', 0.1, 1, 'web'), balanced('d', 0.1, 0, 'batch')],
      simulation(),
      context(
        new Map([
          ['web', { pricePerHour: 1, disruptionCost: 10 }],
          ['batch', { pricePerHour: 1, disruptionCost: 10 }],
        ]),
      ),
    );
    if (command.kind !== 'command') throw new Error(`not a command: ${command.why}`);
    expect(commandMoves(command.command).map((m) => [m.nodePool, m.decision, m.policy])).toEqual([
      ['web', 'approved', 'Balanced'],
      ['batch', 'approved', 'Balanced'],
    ]);
  });

  it('counts a move of another policy without a score', () => {
    const other = consolidatable('x', {
      nodePool: pool('default', { consolidationPolicy: 'WhenEmptyOrUnderutilized' }),
      instanceType: 'm5.xlarge',
      pods: [boundPod('x-0')],
      price: 0.1,
    });
    const moves: ConsolidationMove[] = [];
    evaluateConsolidation(singleNodeConsolidation, [other], simulation(), {
      ...context(new Map()),
      move: (m) => moves.push(m),
    });
    expect(moves).toEqual([
      { nodePool: 'default', policy: 'WhenEmptyOrUnderutilized', decision: 'approved' },
    ]);
  });
});
