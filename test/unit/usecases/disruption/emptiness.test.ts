import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCandidates } from '../../../../shared/usecases/disruption/candidates.ts';
import { emptiness } from '../../../../shared/usecases/disruption/emptiness.ts';
import type { DisruptionCandidate } from '../../../../shared/usecases/disruption/index.ts';
import {
  allowedFor,
  boundPod,
  budgetsArb,
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
  simulation,
  T0,
  worldFrom,
} from './builders.ts';

const CONSOLIDATABLE = [...READY_CONDITIONS, condition('Consolidatable')];
const names = (candidates: readonly DisruptionCandidate[]) => candidates.map((c) => c.nodeClaim.name);

describe('emptiness.shouldDisrupt', () => {
  it.each([
    ['an empty Consolidatable node', {}, true],
    [
      'a node with only DaemonSet and mirror pods',
      { pods: [daemonPod('agent'), boundPod('etcd', { mirror: true })] },
      true,
    ],
    ['a node with a reschedulable pod', { pods: [daemonPod('agent'), boundPod('web')] }, false],
    [
      'a node whose only pod, a DaemonSet pod, has do-not-disrupt',
      {
        pods: [daemonPod('agent')],
        blockers: [
          {
            pod: 'apps/agent',
            kind: 'doNotDisrupt' as const,
            why: 'pod apps/agent has karpenter.sh/do-not-disrupt',
          },
        ],
      },
      false,
    ],
    [
      'Consolidatable False',
      { conditions: [...READY_CONDITIONS, condition('Consolidatable', 'False')] },
      false,
    ],
    ['no Consolidatable condition', { conditions: READY_CONDITIONS }, false],
    ['consolidateAfter Never', { nodePool: pool('default', { consolidateAfter: 'Never' }) }, false],
    ['policy WhenEmpty', { nodePool: pool('default', { consolidationPolicy: 'WhenEmpty' }) }, true],
    [
      'policy WhenEmptyOrUnderutilized',
      { nodePool: pool('default', { consolidationPolicy: 'WhenEmptyOrUnderutilized' }) },
      true,
    ],
  ] as const)('%s: %s', (_, options, expected) => {
    expect(emptiness.shouldDisrupt(candidate('c', { conditions: CONSOLIDATABLE, ...options }), T0)).toBe(
      expected,
    );
  });
});

describe('emptiness.computeCommands', () => {
  const a = pool('a');
  const b = pool('b');
  const idle = (name: string, nodePool = a, createdMinute = 0) =>
    candidate(name, { nodePool, createdAtMs: T0 + createdMinute * MINUTE, conditions: CONSOLIDATABLE });
  const simulate = simulation();

  it.each([
    ['everything within a large budget', { a: 10, b: 10 }, ['a-old', 'b-old', 'a-mid', 'b-new', 'a-new']],
    ['oldest first within each pool', { a: 2, b: 1 }, ['a-old', 'b-old', 'a-mid']],
    [
      'an unlimited budget (no active budget)',
      { a: Number.POSITIVE_INFINITY, b: 0 },
      ['a-old', 'a-mid', 'a-new'],
    ],
    ['a pool at 0 contributes nothing', { a: 0, b: 2 }, ['b-old', 'b-new']],
    ['a pool missing from allowed contributes nothing', { b: 1 }, ['b-old']],
  ])('%s', (_, allowed, chosen) => {
    const candidates = [
      idle('a-new', a, 30),
      idle('b-new', b, 20),
      idle('a-old', a, 0),
      idle('a-mid', a, 10),
      idle('b-old', b, 5),
    ];
    const commands = emptiness.computeCommands(candidates, new Map(Object.entries(allowed)), simulate);
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatchObject({ method: emptiness, reason: 'Empty', replacements: [] });
    expect(names(commands[0]?.candidates ?? [])).toEqual(chosen);
  });

  it('returns no command when every budget is used up or there are no candidates', () => {
    expect(emptiness.computeCommands([idle('x')], new Map([['a', 0]]), simulate)).toEqual([]);
    expect(emptiness.computeCommands([], new Map([['a', 5]]), simulate)).toEqual([]);
  });

  it('breaks ties on creation time by name, and takes a NodeClaim without one as oldest', () => {
    const noTime: DisruptionCandidate = (() => {
      const c = idle('zz-unknown-age');
      const { createdAtMs: _, ...claim } = c.nodeClaim;
      return { ...c, nodeClaim: claim };
    })();
    const commands = emptiness.computeCommands(
      [idle('b', a, 1), idle('a', a, 1), noTime],
      new Map([['a', 2]]),
      simulate,
    );
    expect(names(commands[0]?.candidates ?? [])).toEqual(['zz-unknown-age', 'a']);
  });

  it('does not simulate: nothing is launched for empty nodes', () => {
    const recorded = simulation();
    emptiness.computeCommands([idle('x')], new Map([['a', 1]]), recorded);
    expect(recorded.calls).toEqual([]);
  });
});

describe('emptiness properties', () => {
  it('never takes more of a pool than its budget allows, and takes the oldest up to it', () => {
    fc.assert(
      fc.property(poolsArb, (shapes) => {
        const { candidates, pools, counts } = worldFrom(shapes);
        const allowed = allowedFor(pools, counts, 'Empty');
        const commands = emptiness.computeCommands(candidates, allowed, simulation());
        expect(commands.length).toBeLessThanOrEqual(1);
        const chosen = commands[0]?.candidates ?? [];
        for (const p of pools) {
          const name = p.pool.name;
          const ofPool = candidates.filter((c) => c.nodePool.pool.name === name);
          const taken = chosen.filter((c) => c.nodePool.pool.name === name);
          const limit = allowed.get(name) ?? 0;
          expect(taken.length).toBeLessThanOrEqual(limit);
          expect(taken.length).toBe(Math.min(limit, ofPool.length));
          const youngestTaken = Math.max(...taken.map((c) => c.nodeClaim.createdAtMs ?? 0));
          for (const left of ofPool.filter((c) => !taken.includes(c))) {
            expect(left.nodeClaim.createdAtMs ?? 0).toBeGreaterThanOrEqual(youngestTaken);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('never chooses a node with a reschedulable do-not-disrupt pod', () => {
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
        const accepted = set.candidates.filter((c) => emptiness.shouldDisrupt(c, T0));
        const allowed = allowedFor([...cluster.nodePools.values()], set.counts, 'Empty');
        for (const command of emptiness.computeCommands(accepted, allowed, simulation())) {
          for (const c of command.candidates) expect(hasDoNotDisruptPod(c.node)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
