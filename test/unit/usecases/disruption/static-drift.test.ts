import { describe, expect, it } from 'vitest';
import type { StaticPoolCounts } from '../../../../shared/core/index.ts';
import type { ClusterNodePool } from '../../../../shared/ports/cluster.ts';
import { buildCandidates } from '../../../../shared/usecases/disruption/candidates.ts';
import type { DisruptionCandidate, MethodContext } from '../../../../shared/usecases/disruption/index.ts';
import { planStaticDrift, staticDrift } from '../../../../shared/usecases/disruption/static-drift.ts';
import { fakeInstanceType } from '../../core/builders.ts';
import {
  boundPod,
  type CandidateOptions,
  candidate,
  clusterNode,
  condition,
  MINUTE,
  nodeClaim,
  pool,
  READY_CONDITIONS,
  simulation,
  T0,
} from './builders.ts';

// StaticDrift: a drifted node of a static NodePool is replaced one for one by a node of the pool's
// template, within the budget for Drifted, never past limits.nodes, never during a scale-down, and
// not while its pods block disruption (unless a terminationGracePeriod bounds the drain).

const BLOCKER = {
  pod: 'apps/web',
  kind: 'doNotDisrupt' as const,
  why: 'pod apps/web has karpenter.sh/do-not-disrupt',
};
const TYPES = [
  fakeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096 }),
  fakeInstanceType({ name: 'c5.large', cpu: 2, memoryGiB: 4, price: 0.085 }),
];

function staticPool(name: string, replicas: number, limitNodes?: number): ClusterNodePool {
  return pool(
    name,
    {},
    {
      pool: {
        name,
        nodeClassName: 'default',
        requirements: [],
        replicas,
        ...(limitNodes === undefined ? {} : { limits: { nodes: limitNodes } }),
      },
    },
  );
}

const FIXED = staticPool('fixed', 3);

/** A drifted candidate of `nodePool`, drifted `minute` minutes after T0. */
function drifted(name: string, minute: number, o: CandidateOptions = {}): DisruptionCandidate {
  return candidate(name, {
    nodePool: FIXED,
    conditions: [...READY_CONDITIONS, condition('Drifted', 'True', T0 + minute * MINUTE, 'NodePoolDrifted')],
    pods: [boundPod(`${name}-pod`)],
    ...o,
  });
}

function context(pools: Record<string, StaticPoolCounts>): MethodContext {
  return {
    instanceTypes: (_nodePool, nodeClass) => (nodeClass === 'default' ? TYPES : []),
    poolTotals: new Map(),
    nowMs: T0,
    staticPools: new Map(Object.entries(pools)),
  };
}

const steady = { members: 3, leaving: 0, deleting: 0 };
const names = (commands: ReturnType<typeof staticDrift.computeCommands>) =>
  commands.map((c) => c.candidates.map((x) => x.nodeClaim.name));

describe('staticDrift.shouldDisrupt', () => {
  it.each([
    ['a drifted node of a static pool', drifted('a', 0), true],
    ['a static pool node that is not drifted', candidate('b', { nodePool: FIXED }), false],
    ['a drifted node of a dynamic pool', drifted('c', 0, { nodePool: pool('default') }), false],
  ] as const)('%s: %s', (_, c, expected) => {
    expect(staticDrift.shouldDisrupt(c, T0)).toBe(expected);
  });
});

describe('staticDrift.computeCommands', () => {
  it('replaces each drifted node by one node of the pool’s template, the longest-drifted first', () => {
    const commands = staticDrift.computeCommands(
      [drifted('late', 9), drifted('early', 2), drifted('mid', 5)],
      new Map([['fixed', 2]]),
      simulation(),
      context({ fixed: steady }),
    );
    expect(names(commands)).toEqual([['early'], ['mid']]);
    for (const command of commands) {
      expect(command).toMatchObject({ method: staticDrift, reason: 'Drifted' });
      expect(command.replacements).toHaveLength(1);
      expect(command.replacements[0]?.nodePoolName).toBe('fixed');
      // The cheapest type the pool admits first, as a static replica launches.
      expect(command.replacements[0]?.instanceTypes[0]?.name).toBe('c5.large');
    }
  });

  it('simulates nothing: a static node is there for its count, not for its pods', () => {
    const simulate = simulation({ unschedulableOn: ['a'] });
    const commands = staticDrift.computeCommands(
      [drifted('a', 0)],
      new Map([['fixed', 1]]),
      simulate,
      context({ fixed: steady }),
    );
    expect(names(commands)).toEqual([['a']]);
    expect(simulate.calls).toEqual([]);
  });

  it.each([
    ['the budget allows none', new Map([['fixed', 0]]), steady],
    ['a scale-down is pending', new Map([['fixed', 3]]), { members: 4, leaving: 0, deleting: 0 }],
  ])('replaces nothing when %s', (_, allowed, counts) => {
    const plan = planStaticDrift([drifted('a', 0), drifted('b', 1)], allowed, context({ fixed: counts }));
    expect(plan).toEqual({ commands: [], held: [] });
  });

  it('goes on beside a command in flight, within the budget', () => {
    const commands = staticDrift.computeCommands(
      [drifted('a', 0)],
      new Map([['fixed', 1]]),
      simulation(),
      context({ fixed: { members: 4, leaving: 1, deleting: 0 } }),
    );
    expect(names(commands)).toEqual([['a']]);
  });

  it('holds nodes back at limits.nodes, and stages as many replacements as the limit leaves room for', () => {
    const limited = staticPool('fixed', 3, 4);
    const candidates = ['a', 'b', 'c'].map((n, i) => drifted(n, i, { nodePool: limited }));
    const room = planStaticDrift(candidates, new Map([['fixed', 3]]), context({ fixed: steady }));
    expect(names(room.commands)).toEqual([['a']]);
    const full = planStaticDrift(
      candidates,
      new Map([['fixed', 3]]),
      context({ fixed: { members: 3, leaving: 0, deleting: 1 } }),
    );
    expect(full.commands).toEqual([]);
    expect(full.held.map((h) => [h.candidate.nodeClaim.name, h.why])).toEqual(
      ['a', 'b', 'c'].map((n) => [
        n,
        'static NodePool is at its node limit (limits.nodes 4) and cannot stage a replacement',
      ]),
    );
  });

  it('holds back a node whose pods block disruption, unless a terminationGracePeriod bounds it', () => {
    const plan = planStaticDrift(
      [
        drifted('held', 0, { blockers: [BLOCKER] }),
        drifted('bounded', 1, { blockers: [BLOCKER], terminationGracePeriod: '1h' }),
        drifted('free', 2),
      ],
      new Map([['fixed', 3]]),
      context({ fixed: steady }),
    );
    expect(names(plan.commands)).toEqual([['bounded'], ['free']]);
    expect(plan.held.map((h) => [h.candidate.nodeClaim.name, h.why])).toEqual([['held', BLOCKER.why]]);
  });

  it('holds the pool’s nodes back when no instance type can be planned', () => {
    const plan = planStaticDrift([drifted('a', 0)], new Map([['fixed', 1]]), {
      ...context({ fixed: steady }),
      instanceTypes: () => [],
    });
    expect(plan.commands).toEqual([]);
    expect(plan.held[0]?.why).toMatch(/^static NodePool cannot plan a replacement: /);
  });
});

describe('static NodePools in the candidate set', () => {
  const pools = new Map([['fixed', FIXED]]);
  const claims = [
    nodeClaim('old', { pool: 'fixed', conditions: [...READY_CONDITIONS, condition('Drifted')] }),
    nodeClaim('fresh', { pool: 'fixed' }),
    nodeClaim('gone', { pool: 'fixed', deleting: true }),
    nodeClaim('swapped', { pool: 'fixed', conditions: [...READY_CONDITIONS, condition('Drifted')] }),
    nodeClaim('pinned', { pool: 'fixed', conditions: [...READY_CONDITIONS, condition('Drifted')] }),
  ];
  const set = buildCandidates({
    nodeClaims: claims,
    nodes: claims.map((c) =>
      clusterNode(`node-${c.name}`, {
        pool: 'fixed',
        ...(c.name === 'pinned' ? { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } } : {}),
      }),
    ),
    nodePools: pools,
    pdbs: [],
    inCommand: new Set(['swapped']),
    nominated: new Set(),
    priceOf: () => 0.1,
    nowMs: T0,
  });

  it('offers StaticDrift the drifted nodes alone, and no other method any', () => {
    expect(set.candidates).toEqual([]);
    expect(set.staticCandidates?.map((c) => c.nodeClaim.name)).toEqual(['old']);
  });

  it('tells why a drifted node is kept (do-not-disrupt), and nothing of the others', () => {
    expect(set.excluded.map((e) => [e.nodeClaim.name, e.why])).toEqual([
      ['pinned', 'node has karpenter.sh/do-not-disrupt'],
    ]);
  });

  it('counts the pool’s NodeClaims: staying, leaving in a command, being deleted', () => {
    expect(set.staticPools?.get('fixed')).toEqual({ members: 4, leaving: 1, deleting: 1 });
  });
});
