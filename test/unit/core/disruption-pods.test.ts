import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  disruptionCost,
  doNotDisrupt,
  isReschedulable,
  matchingPdbs,
  nodeDoNotDisrupt,
  type PdbLimit,
  type Pod,
  type PodDisruptionInfo,
  podBlockers,
  podEvictionCost,
} from '../../../shared/core/index.ts';

const NOW = Date.parse('2026-11-21T10:00:00Z');
const MINUTE = 60_000;

/** A pod bound to a node, in namespace `apps` unless said otherwise. */
function bound(name: string, extra: Partial<Pod> = {}, disruption?: PodDisruptionInfo): Pod {
  return {
    uid: `uid-${name}`,
    name,
    namespace: 'apps',
    labels: { app: name },
    containers: [{ name: 'main', requests: { cpu: 100 } }],
    ...extra,
    ...(disruption === undefined ? {} : { disruption }),
  };
}

function pdb(name: string, selector: PdbLimit['selector'], disruptionsAllowed: number, namespace = 'apps') {
  return {
    namespace,
    name,
    ...(selector === undefined ? {} : { selector }),
    disruptionsAllowed,
  } satisfies PdbLimit;
}

describe('isReschedulable', () => {
  it.each([
    ['a plain pod', bound('web'), true],
    ['a pod with disruption info, not a mirror', bound('web', {}, { mirror: false, priority: 5 }), true],
    ["a DaemonSet's pod", bound('agent', { daemonSetName: 'agent' }), false],
    ['a mirror pod', bound('etcd', {}, { mirror: true }), false],
  ])('%s: %s', (_, pod, expected) => {
    expect(isReschedulable(pod)).toBe(expected);
  });
});

describe('doNotDisrupt', () => {
  const started = NOW - 10 * MINUTE;
  it.each([
    ['no annotation', undefined, started, { protected: false }],
    ['"true"', 'true', started, { protected: true }],
    ['"true" without a start time', 'true', undefined, { protected: true }],
    ['30m, started 10m ago', '30m', started, { protected: true, untilMs: started + 30 * MINUTE }],
    ['1h30m, started 10m ago', '1h30m', started, { protected: true, untilMs: started + 90 * MINUTE }],
    ['10m, started exactly 10m ago', '10m', started, { protected: false }],
    ['5m, started 10m ago', '5m', started, { protected: false }],
    ['10m1s, started 10m ago', '10m1s', started, { protected: true, untilMs: started + 10 * MINUTE + 1000 }],
    [
      '30m, no start time: counted from now',
      '30m',
      undefined,
      { protected: true, untilMs: NOW + 30 * MINUTE },
    ],
  ] as const)('%s', (_, value, startedAtMs, verdict) => {
    const pod = bound(
      'web',
      {},
      {
        ...(value === undefined ? {} : { doNotDisrupt: value }),
        ...(startedAtMs === undefined ? {} : { startedAtMs }),
      },
    );
    expect(doNotDisrupt(pod, NOW)).toEqual(verdict);
  });

  it('protects a pod without any disruption info not at all', () => {
    expect(doNotDisrupt(bound('web'), NOW)).toEqual({ protected: false });
  });

  it.each(['false', 'True', 'yes', '', '0', '0s', '-5m', '30 minutes', '30'])(
    'does not protect a pod whose value %j is neither "true" nor a positive duration, saying so',
    (value) => {
      const verdict = doNotDisrupt(bound('web', {}, { doNotDisrupt: value, startedAtMs: started }), NOW);
      expect(verdict).toEqual({
        protected: false,
        problem: `karpenter.sh/do-not-disrupt "${value}" is neither "true" nor a positive duration such as 30m; it is ignored`,
      });
    },
  );

  it('a positive duration protects exactly until start + duration (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 48 * 60 }),
        fc.integer({ min: 0, max: 72 * 60 }),
        (minutes, ageMinutes) => {
          const startedAtMs = NOW - ageMinutes * MINUTE;
          const verdict = doNotDisrupt(bound('web', {}, { doNotDisrupt: `${minutes}m`, startedAtMs }), NOW);
          expect(verdict.protected).toBe(ageMinutes < minutes);
          expect(verdict.problem).toBeUndefined();
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('matchingPdbs', () => {
  const pod = bound('web', { labels: { app: 'web', tier: 'front' } });
  it.each([
    ['matchLabels on the pod', pdb('a', { matchLabels: { app: 'web' } }, 1), true],
    ['matchLabels not on the pod', pdb('a', { matchLabels: { app: 'db' } }, 1), false],
    ['an empty selector (every pod of the namespace)', pdb('a', {}, 1), true],
    ['no selector (selects nothing)', pdb('a', undefined, 1), false],
    ['another namespace', pdb('a', { matchLabels: { app: 'web' } }, 1, 'other'), false],
    ['an empty selector in another namespace', pdb('a', {}, 1, 'other'), false],
    [
      'matchExpressions In',
      pdb('a', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'back'] }] }, 1),
      true,
    ],
    [
      'matchExpressions DoesNotExist',
      pdb('a', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, 1),
      false,
    ],
  ])('%s matches: %s', (_, budget, matches) => {
    expect(matchingPdbs(pod, [budget])).toEqual(matches ? [budget] : []);
  });

  it('returns every matching budget, in order', () => {
    const budgets = [
      pdb('a', {}, 1),
      pdb('b', { matchLabels: { app: 'db' } }, 1),
      pdb('c', { matchLabels: { tier: 'front' } }, 0),
    ];
    expect(matchingPdbs(pod, budgets).map((b) => b.name)).toEqual(['a', 'c']);
  });

  it('a pod without labels matches only empty selectors', () => {
    const bare: Pod = { uid: 'u', name: 'bare', namespace: 'apps', containers: [] };
    expect(
      matchingPdbs(bare, [pdb('all', {}, 1), pdb('web', { matchLabels: { app: 'web' } }, 1)]).map(
        (b) => b.name,
      ),
    ).toEqual(['all']);
  });
});

describe('podBlockers', () => {
  const started = NOW - 10 * MINUTE;
  const webPdb = (allowed: number) => pdb('web-pdb', { matchLabels: { app: 'web' } }, allowed);

  it.each([
    ['no pods', [], [], []],
    ['plain pods without budgets', [bound('web'), bound('db')], [], []],
    ['a budget that still allows evictions', [bound('web')], [webPdb(1)], []],
    [
      'do-not-disrupt "true"',
      [bound('web', {}, { doNotDisrupt: 'true' })],
      [],
      [{ pod: 'apps/web', kind: 'doNotDisrupt', why: 'pod apps/web has karpenter.sh/do-not-disrupt' }],
    ],
    [
      'do-not-disrupt for a duration that has not passed',
      [bound('web', {}, { doNotDisrupt: '30m', startedAtMs: started })],
      [],
      [
        {
          pod: 'apps/web',
          kind: 'doNotDisrupt',
          why: `pod apps/web has karpenter.sh/do-not-disrupt until ${new Date(started + 30 * MINUTE).toISOString()}`,
        },
      ],
    ],
    [
      'do-not-disrupt for a duration that has passed',
      [bound('web', {}, { doNotDisrupt: '5m', startedAtMs: started })],
      [],
      [],
    ],
    [
      'an invalid do-not-disrupt value (ignored, as in Karpenter)',
      [bound('web', {}, { doNotDisrupt: 'please' })],
      [],
      [],
    ],
    [
      "a DaemonSet's pod with do-not-disrupt (the drain would wait on it)",
      [bound('agent', { daemonSetName: 'agent' }, { doNotDisrupt: 'true' })],
      [],
      [{ pod: 'apps/agent', kind: 'doNotDisrupt', why: 'pod apps/agent has karpenter.sh/do-not-disrupt' }],
    ],
    [
      'a mirror pod with do-not-disrupt',
      [bound('etcd', {}, { mirror: true, doNotDisrupt: 'true' })],
      [],
      [{ pod: 'apps/etcd', kind: 'doNotDisrupt', why: 'pod apps/etcd has karpenter.sh/do-not-disrupt' }],
    ],
    [
      'a mirror pod under a budget at 0 (never evicted)',
      [bound('web', {}, { mirror: true })],
      [webPdb(0)],
      [],
    ],
    [
      'a budget with disruptionsAllowed 0',
      [bound('web')],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'a budget with negative disruptionsAllowed',
      [bound('web')],
      [webPdb(-1)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'two budgets on one pod, both allowing evictions',
      [bound('web')],
      [webPdb(3), pdb('all', {}, 5)],
      [
        {
          pod: 'apps/web',
          kind: 'pdb',
          why: 'pod apps/web matches 2 PodDisruptionBudgets (web-pdb, all); eviction supports one',
        },
      ],
    ],
    [
      'three budgets on one pod',
      [bound('web')],
      [
        webPdb(1),
        pdb('all', {}, 1),
        pdb('front', { matchExpressions: [{ key: 'app', operator: 'Exists' }] }, 0),
      ],
      [
        {
          pod: 'apps/web',
          kind: 'pdb',
          why: 'pod apps/web matches 3 PodDisruptionBudgets (web-pdb, all, front); eviction supports one',
        },
      ],
    ],
    [
      "a DaemonSet's pod under a budget at 0 (the drain evicts DaemonSet pods too)",
      [bound('web', { daemonSetName: 'web' })],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    ['a budget at 0 in another namespace', [bound('web')], [pdb('web-pdb', {}, 0, 'other')], []],
    ['a terminating pod under a budget at 0', [bound('web', {}, { deletedAtMs: 0 })], [webPdb(0)], []],
    [
      'a terminating pod with do-not-disrupt (only active pods protect their node)',
      [bound('web', {}, { deletedAtMs: 0, doNotDisrupt: 'true' })],
      [],
      [],
    ],
    ['a finished pod under a budget at 0', [bound('web', {}, { finished: true })], [webPdb(0)], []],
    [
      'a finished pod under two budgets',
      [bound('web', {}, { finished: true })],
      [webPdb(1), pdb('all', {}, 1)],
      [],
    ],
    [
      'a pod tolerating karpenter.sh/disrupted:NoSchedule under a budget at 0 (never evicted)',
      [
        bound('web', {
          tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists', effect: 'NoSchedule' }],
        }),
      ],
      [webPdb(0)],
      [],
    ],
    [
      'a pod tolerating every taint, under two budgets',
      [bound('web', { tolerations: [{ operator: 'Exists' }] })],
      [webPdb(1), pdb('all', {}, 1)],
      [],
    ],
    [
      'a pod tolerating only NoExecute taints under a budget at 0',
      [bound('web', { tolerations: [{ operator: 'Exists', effect: 'NoExecute' }] })],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'a pod tolerating the disrupted taint, with do-not-disrupt',
      [
        bound(
          'web',
          { tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists' }] },
          { doNotDisrupt: 'true' },
        ),
      ],
      [],
      [{ pod: 'apps/web', kind: 'doNotDisrupt', why: 'pod apps/web has karpenter.sh/do-not-disrupt' }],
    ],
    [
      'a pod that is not Ready under an AlwaysAllow budget at 0',
      [bound('web', {}, { notReady: true })],
      [{ ...webPdb(0), alwaysAllowUnhealthy: true }],
      [],
    ],
    [
      'a Ready pod under an AlwaysAllow budget at 0',
      [bound('web')],
      [{ ...webPdb(0), alwaysAllowUnhealthy: true }],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'a pod that is not Ready under an IfHealthyBudget budget at 0',
      [bound('web', {}, { notReady: true })],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'a pod that is not Ready under two AlwaysAllow budgets (eviction supports one)',
      [bound('web', {}, { notReady: true })],
      [
        { ...webPdb(0), alwaysAllowUnhealthy: true },
        { ...pdb('all', {}, 0), alwaysAllowUnhealthy: true },
      ],
      [
        {
          pod: 'apps/web',
          kind: 'pdb',
          why: 'pod apps/web matches 2 PodDisruptionBudgets (web-pdb, all); eviction supports one',
        },
      ],
    ],
    [
      'do-not-disrupt and a budget at 0: one blocker, do-not-disrupt',
      [bound('web', {}, { doNotDisrupt: 'true' })],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'doNotDisrupt', why: 'pod apps/web has karpenter.sh/do-not-disrupt' }],
    ],
    [
      'a passed do-not-disrupt does not hide a budget at 0',
      [bound('web', {}, { doNotDisrupt: '1m', startedAtMs: started })],
      [webPdb(0)],
      [{ pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' }],
    ],
    [
      'one blocker per blocked pod, in pod order',
      [bound('db', {}, { doNotDisrupt: 'true' }), bound('cache'), bound('web')],
      [webPdb(0)],
      [
        { pod: 'apps/db', kind: 'doNotDisrupt', why: 'pod apps/db has karpenter.sh/do-not-disrupt' },
        { pod: 'apps/web', kind: 'pdb', why: 'pdb apps/web-pdb prevents pod evictions' },
      ],
    ],
  ] as const)('%s', (_, pods, pdbs, blockers) => {
    expect(podBlockers(pods, pdbs, NOW)).toEqual(blockers);
  });
});

describe('nodeDoNotDisrupt', () => {
  it.each([
    [{ 'karpenter.sh/do-not-disrupt': 'true' }, true],
    [{ 'karpenter.sh/do-not-disrupt': 'True' }, false],
    [{ 'karpenter.sh/do-not-disrupt': 'false' }, false],
    [{ 'karpenter.sh/do-not-disrupt': '30m' }, false],
    [{ other: 'true' }, false],
    [{}, false],
  ])('%o: %s', (annotations, expected) => {
    expect(nodeDoNotDisrupt(annotations)).toBe(expected);
  });
});

describe('podEvictionCost', () => {
  it.each([
    ['no disruption info', undefined, 1],
    ['no deletion cost or priority', {}, 1],
    ['deletion cost 2^27', { deletionCost: 2 ** 27 }, 2],
    ['deletion cost -2^27', { deletionCost: -(2 ** 27) }, 0],
    ['priority 2^25', { priority: 2 ** 25 }, 2],
    ['priority -2^25', { priority: -(2 ** 25) }, 0],
    ['both', { deletionCost: 2 ** 26, priority: 2 ** 24 }, 2],
    ['system-node-critical priority, clamped to 10', { priority: 2_000_001_000 }, 10],
    ['the largest deletion cost, clamped to 10', { deletionCost: 2 ** 31 - 1 }, 10],
    ['the smallest deletion cost, clamped to -10', { deletionCost: -(2 ** 31) }, -10],
    ['exactly 10', { deletionCost: 9 * 2 ** 27 }, 10],
  ] as const)('%s: %d', (_, info, cost) => {
    expect(podEvictionCost(bound('web', {}, info))).toBe(cost);
  });

  it('stays within [-10, 10] (property)', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { nil: undefined }),
        fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { nil: undefined }),
        (deletionCost, priority) => {
          const cost = podEvictionCost(
            bound(
              'web',
              {},
              {
                ...(deletionCost === undefined ? {} : { deletionCost }),
                ...(priority === undefined ? {} : { priority }),
              },
            ),
          );
          expect(cost).toBeGreaterThanOrEqual(-10);
          expect(cost).toBeLessThanOrEqual(10);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('disruptionCost', () => {
  const pods = [
    bound('a'),
    bound('b', {}, { deletionCost: 2 ** 27 }),
    bound('agent', { daemonSetName: 'agent' }, { priority: 2 ** 25 }),
    bound('etcd', {}, { mirror: true }),
  ];
  it.each([
    ['no pods, no expiry', [], undefined, 0],
    ['reschedulable pods only, no expiry', pods, undefined, 3],
    ['a whole lifetime left', pods, 1, 3],
    ['half the lifetime left', pods, 0.5, 1.5],
    ['nothing left', pods, 0, 0],
    ['past expiry (negative), clamped to 0', pods, -0.25, 0],
    ['more than a lifetime (clock skew), clamped to 1', pods, 2, 3],
    ['only DaemonSet and mirror pods', pods.slice(2), 1, 0],
  ] as const)('%s: %d', (_, list, lifetimeLeft, cost) => {
    expect(disruptionCost(list, lifetimeLeft)).toBe(cost);
  });
});
