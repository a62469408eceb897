import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCandidates } from '../../../../shared/usecases/disruption/candidates.ts';
import { drift, driftBlocked } from '../../../../shared/usecases/disruption/drift.ts';
import type { DisruptionCandidate } from '../../../../shared/usecases/disruption/index.ts';
import {
  allowedFor,
  boundPod,
  budgetsArb,
  type CandidateOptions,
  candidate,
  clusterFrom,
  condition,
  daemonPod,
  hasDoNotDisruptPod,
  MINUTE,
  nodeShapesArb,
  pool,
  poolsArb,
  READY_CONDITIONS,
  replacement,
  simulation,
  T0,
  worldFrom,
} from './builders.ts';

const BLOCKER = {
  pod: 'apps/web',
  kind: 'doNotDisrupt' as const,
  why: 'pod apps/web has karpenter.sh/do-not-disrupt',
};

/** A Drifted candidate, drifted `minute` minutes after T0, with `pods` reschedulable pods. */
function drifted(name: string, minute: number, pods = 1, o: CandidateOptions = {}): DisruptionCandidate {
  return candidate(name, {
    conditions: [...READY_CONDITIONS, condition('Drifted', 'True', T0 + minute * MINUTE, 'NodePoolDrifted')],
    pods: Array.from({ length: pods }, (_, i) => boundPod(`${name}-${i}`)),
    ...o,
  });
}

const all = (n: number) => new Map([['default', n]]);
const chosen = (commands: ReturnType<typeof drift.computeCommands>) =>
  commands.map((c) => c.candidates.map((x) => x.nodeClaim.name));

describe('drift.shouldDisrupt', () => {
  it.each([
    ['Drifted True', [...READY_CONDITIONS, condition('Drifted')], true],
    ['Drifted False', [...READY_CONDITIONS, condition('Drifted', 'False')], false],
    ['no Drifted condition', READY_CONDITIONS, false],
    ['Consolidatable only', [...READY_CONDITIONS, condition('Consolidatable')], false],
  ] as const)('%s: %s', (_, conditions, expected) => {
    expect(drift.shouldDisrupt(candidate('c', { conditions }), T0)).toBe(expected);
  });
});

describe('driftBlocked', () => {
  it.each([
    ['no blockers', [], undefined, false],
    ['a blocker', [BLOCKER], undefined, true],
    ['a blocker, with a terminationGracePeriod', [BLOCKER], '1h', false],
    ['no blockers, with a terminationGracePeriod', [], '1h', false],
  ] as const)('%s: %s', (_, blockers, terminationGracePeriod, expected) => {
    const c = candidate('c', {
      blockers,
      ...(terminationGracePeriod === undefined ? {} : { terminationGracePeriod }),
    });
    expect(driftBlocked(c)).toBe(expected);
  });
});

describe('drift.computeCommands', () => {
  it.each<[string, DisruptionCandidate[], string]>([
    ['the only candidate', [drifted('a', 0)], 'a'],
    [
      'an empty node before a longer-drifted one with pods',
      [drifted('full', 0), drifted('empty', 9, 0)],
      'empty',
    ],
    [
      'DaemonSet pods do not make a node non-empty',
      [drifted('full', 0), drifted('agents', 9, 0, { pods: [daemonPod('agent')] })],
      'agents',
    ],
    [
      'the longest-drifted among nodes with pods',
      [drifted('late', 9), drifted('early', 2), drifted('mid', 5)],
      'early',
    ],
    ['the longest-drifted among empty nodes', [drifted('late', 9, 0), drifted('early', 2, 0)], 'early'],
    ['the name when drifted at the same time', [drifted('b', 3), drifted('a', 3)], 'a'],
    [
      'an unreadable transition time counts as the oldest',
      [
        drifted('dated', 0),
        candidate('undated', {
          conditions: [
            ...READY_CONDITIONS,
            {
              type: 'Drifted',
              status: 'True',
              reason: 'NodePoolDrifted',
              message: '',
              lastTransitionTime: 'soon',
            },
          ],
          pods: [boundPod('p')],
        }),
      ],
      'undated',
    ],
    [
      'past a candidate held by its pods',
      [drifted('held', 0, 1, { blockers: [BLOCKER] }), drifted('free', 5)],
      'free',
    ],
    [
      'a held candidate with a terminationGracePeriod',
      [drifted('held', 0, 1, { blockers: [BLOCKER], terminationGracePeriod: '2h' }), drifted('free', 5)],
      'held',
    ],
    ['past a candidate whose pods fit nowhere', [drifted('stuck', 0), drifted('fits', 5)], 'fits'],
  ])('picks %s', (_, candidates, expected) => {
    const commands = drift.computeCommands(candidates, all(1), simulation({ unschedulableOn: ['stuck'] }));
    expect(chosen(commands)).toEqual([[expected]]);
    expect(commands[0]).toMatchObject({ method: drift, reason: 'Drifted' });
  });

  it.each<[string, DisruptionCandidate[], ReadonlyMap<string, number>]>([
    ['no candidates', [], all(1)],
    ['a budget at 0', [drifted('a', 0)], all(0)],
    ['a pool missing from allowed', [drifted('a', 0)], new Map([['other', 3]])],
    [
      'only candidates held by their pods',
      [drifted('a', 0, 1, { blockers: [BLOCKER] }), drifted('b', 0, 0, { blockers: [BLOCKER] })],
      all(5),
    ],
    ['only candidates whose pods fit nowhere', [drifted('stuck', 0)], all(5)],
  ])('returns nothing for %s', (_, candidates, allowed) => {
    expect(drift.computeCommands(candidates, allowed, simulation({ unschedulableOn: ['stuck'] }))).toEqual(
      [],
    );
  });

  it('skips a pool whose budget is used up and takes the next pool', () => {
    const a = pool('a');
    const b = pool('b');
    const commands = drift.computeCommands(
      [drifted('in-a', 0, 1, { nodePool: a }), drifted('in-b', 5, 1, { nodePool: b })],
      new Map([
        ['a', 0],
        ['b', 1],
      ]),
      simulation(),
    );
    expect(chosen(commands)).toEqual([['in-b']]);
  });

  it("returns the simulation's NodeClaims as replacements, one candidate per command", () => {
    const replacements = [replacement('r-1'), replacement('r-2')];
    const simulate = simulation({ replacements });
    const commands = drift.computeCommands([drifted('a', 0, 2), drifted('b', 1, 2)], all(5), simulate);
    expect(commands).toHaveLength(1);
    expect(commands[0]?.candidates).toHaveLength(1);
    expect(commands[0]?.replacements).toEqual(replacements);
    expect(simulate.calls).toEqual([['a']]);
  });

  it('simulates each candidate alone until one fits', () => {
    const simulate = simulation({ unschedulableOn: ['a', 'b'], replacements: [replacement('r')] });
    const commands = drift.computeCommands(
      [drifted('a', 0), drifted('b', 1), drifted('c', 2)],
      all(5),
      simulate,
    );
    expect(simulate.calls).toEqual([['a'], ['b'], ['c']]);
    expect(chosen(commands)).toEqual([['c']]);
    expect(commands[0]?.replacements.map((r) => r.name)).toEqual(['r']);
  });

  it('replaces an empty node without simulating or launching anything', () => {
    const simulate = simulation({ replacements: [replacement('r')] });
    const commands = drift.computeCommands([drifted('empty', 0, 0)], all(1), simulate);
    expect(simulate.calls).toEqual([]);
    expect(commands[0]?.replacements).toEqual([]);
  });
});

describe('drift properties', () => {
  it('never returns a command for a pool whose allowed is below 1, nor a held or stuck candidate', () => {
    fc.assert(
      fc.property(poolsArb, (shapes) => {
        const { candidates, pools, counts, unschedulableOn } = worldFrom(shapes);
        const allowed = allowedFor(pools, counts, 'Drifted');
        const commands = drift.computeCommands(candidates, allowed, simulation({ unschedulableOn }));
        expect(commands.length).toBeLessThanOrEqual(1);
        const eligible = candidates.filter(
          (c) =>
            (allowed.get(c.nodePool.pool.name) ?? 0) >= 1 &&
            !driftBlocked(c) &&
            (c.reschedulablePods.length === 0 || !unschedulableOn.includes(c.nodeClaim.name)),
        );
        for (const command of commands) {
          expect(command.candidates).toHaveLength(1);
          for (const c of command.candidates) {
            expect(allowed.get(c.nodePool.pool.name) ?? 0).toBeGreaterThanOrEqual(1);
            expect(eligible).toContain(c);
          }
        }
        // And it does act when some candidate may go.
        expect(commands.length).toBe(eligible.length > 0 ? 1 : 0);
      }),
      { numRuns: 300 },
    );
  });

  it('never chooses a node with a reschedulable do-not-disrupt pod unless its NodeClaim has a terminationGracePeriod', () => {
    fc.assert(
      fc.property(nodeShapesArb, budgetsArb, budgetsArb, (shapes, b0, b1) => {
        const cluster = clusterFrom(shapes, [b0, b1]);
        const set = buildCandidates({
          ...cluster,
          pdbs: [],
          inCommand: new Set(),
          nominated: new Set(),
          priceOf: () => undefined,
          nowMs: T0 + 60 * MINUTE,
        });
        const accepted = set.candidates.filter((c) => drift.shouldDisrupt(c, T0));
        const allowed = allowedFor([...cluster.nodePools.values()], set.counts, 'Drifted');
        for (const command of drift.computeCommands(accepted, allowed, simulation())) {
          for (const c of command.candidates) {
            if (c.nodeClaim.terminationGracePeriod === undefined)
              expect(hasDoNotDisruptPod(c.node)).toBe(false);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
