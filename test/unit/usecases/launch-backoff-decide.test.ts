import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Pod, Taint } from '../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim, Condition } from '../../../shared/ports/cluster.ts';
import {
  decideLaunchBackoff,
  findNodeClaimFailures,
  findRecoveredNodeClaim,
  LAUNCH_BACKOFF_MAX_MS,
  type LaunchBackoffOutcome,
  launchBackoffMs,
  launchPausedUntil,
  type NodeClaimFailure,
  readLaunchBackoff,
  unexpectedTaints,
} from '../../../shared/usecases/launch-backoff-decide.ts';
import { nodePool, pod } from './provision-builders.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MIN = 60_000;
const ROGUE: Taint = { key: 'chaos.example.com/rogue', effect: 'NoExecute' };

function claim(
  name: string,
  createdAtMs: number,
  conditions: string[],
  extra: Partial<ClusterNodeClaim> = {},
) {
  return {
    name,
    uid: `uid-${name}`,
    nodePoolName: 'general',
    nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
    labels: {},
    annotations: {},
    finalizers: [],
    requirements: [],
    requests: {},
    taints: [],
    startupTaints: [],
    createdAtMs,
    deleting: false,
    status: {
      providerId: `aws:///us-east-1a/i-${name}`,
      nodeName: `node-${name}`,
      conditions: conditions.map(
        (type): Condition => ({ type, status: 'True', reason: type, message: '', lastTransitionTime: '' }),
      ),
    },
    ...extra,
  } satisfies ClusterNodeClaim;
}

function node(name: string, taints: Taint[], pods: Pod[] = []): ClusterNode {
  return {
    name: `node-${name}`,
    uid: `uid-node-${name}`,
    nodePoolName: 'general',
    providerId: `aws:///us-east-1a/i-${name}`,
    labels: {},
    taints,
    allocatable: { cpu: 2000 },
    pods,
    initialized: true,
    annotations: {},
    finalizers: [],
    ready: true,
    deleting: false,
  };
}

const failure = (nodeClaim: string, createdAtMs: number): NodeClaimFailure => ({
  kind: 'UnexpectedTaint',
  nodeClaim,
  createdAtMs,
  detail: `nodeClaim "${nodeClaim}" failed`,
});

/** A NodePool carrying the condition a decision wrote (as the adapter merges it). */
function poolAfter(outcome: LaunchBackoffOutcome, generation = 1) {
  if (outcome.kind === 'unchanged') throw new Error('nothing was written');
  const condition: Condition = {
    ...outcome.condition,
    lastTransitionTime: '',
    observedGeneration: generation,
  };
  return nodePool('general', {}, { conditions: [condition], generation });
}

describe('launchBackoffMs', () => {
  it.each([
    [0, 0],
    [1, MIN],
    [2, 2 * MIN],
    [3, 4 * MIN],
    [5, 16 * MIN],
    [6, 30 * MIN],
    [60, 30 * MIN],
  ])('after %i failures in a row pauses %i ms', (failures, ms) => {
    expect(launchBackoffMs(failures)).toBe(ms);
  });

  it('is monotone in the failures in a row and capped at 30 minutes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 10_000 }), (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(launchBackoffMs(lo)).toBeLessThanOrEqual(launchBackoffMs(hi));
        expect(launchBackoffMs(hi)).toBeLessThanOrEqual(LAUNCH_BACKOFF_MAX_MS);
      }),
    );
  });

  it('pauses longer for each further failure in a row, up to the cap, through the condition', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), (count) => {
        let pool = nodePool('general', {}, { generation: 1 });
        let now = T0;
        const pauses: number[] = [];
        for (let i = 1; i <= count; i++) {
          now += 40 * MIN;
          const outcome = decideLaunchBackoff({ pool, failures: [failure(`c${i}`, now - MIN)], nowMs: now });
          if (outcome.kind !== 'start') throw new Error(`failure ${i} started no pause`);
          pauses.push(outcome.backoffMs);
          pool = poolAfter(outcome);
        }
        for (let i = 1; i < pauses.length; i++) {
          expect(pauses[i]).toBeGreaterThanOrEqual(pauses[i - 1] ?? 0);
        }
        expect(Math.max(...pauses)).toBeLessThanOrEqual(LAUNCH_BACKOFF_MAX_MS);
        expect(readLaunchBackoff(pool.conditions)?.failures).toBe(count);
      }),
    );
  });
});

describe('decideLaunchBackoff', () => {
  it('starts a 1-minute pause at the first failure, with the reason and until when', () => {
    const outcome = decideLaunchBackoff({
      pool: nodePool('general'),
      failures: [failure('a', T0)],
      nowMs: T0 + MIN,
    });
    expect(outcome).toMatchObject({
      kind: 'start',
      backoffMs: MIN,
      state: { failures: 1, lastFailedCreatedMs: T0, pausedUntilMs: T0 + 2 * MIN },
      condition: { type: 'LaunchBackoff', status: 'True', reason: 'UnexpectedTaint' },
    });
    const pool = poolAfter(outcome);
    expect(readLaunchBackoff(pool.conditions)).toEqual({
      failures: 1,
      lastFailedCreatedMs: T0,
      pausedUntilMs: T0 + 2 * MIN,
    });
    expect(launchPausedUntil(readLaunchBackoff(pool.conditions), T0 + MIN + 1)).toBe(T0 + 2 * MIN);
    expect(launchPausedUntil(readLaunchBackoff(pool.conditions), T0 + 2 * MIN)).toBeUndefined();
  });

  it('counts a lingering failed NodeClaim once, and NodeClaims failing together once', () => {
    const first = decideLaunchBackoff({
      pool: nodePool('general', {}, { generation: 1 }),
      failures: [failure('a', T0), failure('b', T0)],
      nowMs: T0 + MIN,
    });
    expect(first).toMatchObject({ kind: 'start', state: { failures: 1 } });
    const again = decideLaunchBackoff({
      pool: poolAfter(first),
      failures: [failure('a', T0)],
      nowMs: T0 + 90_000,
    });
    expect(again).toMatchObject({ kind: 'unchanged', state: { failures: 1 } });
  });

  it.each([
    ['expires: the count stays', { nowMs: T0 + 3 * MIN }, 'expired', 1, 'BackoffExpired'],
    [
      'a NodeClaim initialized with pods: the count resets',
      { recovered: 'c', nowMs: T0 + 90_000 },
      'recovered',
      0,
      'NodeClaimInitialized',
    ],
    [
      'the NodePool changed: the count resets',
      { generation: 2, nowMs: T0 + 90_000 },
      'nodePoolChanged',
      0,
      'NodePoolChanged',
    ],
  ] as const)('ends when the pause %s', (_, input, why, failures, reason) => {
    const started = decideLaunchBackoff({
      pool: nodePool('general', {}, { generation: 1 }),
      failures: [failure('a', T0)],
      nowMs: T0 + MIN,
    });
    const pool = poolAfter(started);
    const outcome = decideLaunchBackoff({
      pool: 'generation' in input ? { ...pool, generation: input.generation } : pool,
      failures: [],
      nowMs: input.nowMs,
      ...('recovered' in input ? { recovered: input.recovered } : {}),
    });
    expect(outcome).toMatchObject({
      kind: 'end',
      why,
      state: { failures, lastFailedCreatedMs: T0 },
      condition: { status: 'False', reason },
    });
  });

  it('changes nothing without failures or a pause', () => {
    expect(decideLaunchBackoff({ pool: nodePool('general'), failures: [], nowMs: T0 })).toEqual({
      kind: 'unchanged',
      state: undefined,
    });
  });

  it('reads no state from a message edited beyond reading', () => {
    const condition: Condition = {
      type: 'LaunchBackoff',
      status: 'True',
      reason: 'UnexpectedTaint',
      message: 'edited',
      lastTransitionTime: '',
    };
    expect(readLaunchBackoff([condition])).toBeUndefined();
  });
});

describe('findNodeClaimFailures', () => {
  const pending = [pod('web-1', 100)];
  const pool = nodePool('general', {
    taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'example.com/booting', effect: 'NoSchedule' }],
  });
  const tolerant = [pod('web-1', 100, { tolerations: [{ key: 'dedicated', operator: 'Exists' }] })];

  it.each([
    [
      'a rogue taint on an empty initialized node, pods pending',
      ROGUE,
      'Initialized',
      tolerant,
      ['UnexpectedTaint'],
    ],
    [
      'the template taint',
      { key: 'dedicated', value: 'web', effect: 'NoSchedule' },
      'Initialized',
      tolerant,
      [],
    ],
    [
      'a known ephemeral taint',
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
      'Initialized',
      tolerant,
      [],
    ],
    ['a PreferNoSchedule taint', { key: 'x', effect: 'PreferNoSchedule' }, 'Initialized', tolerant, []],
    [
      'karpenter.sh/disrupted',
      { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' },
      'Initialized',
      tolerant,
      [],
    ],
    ['a rogue taint, no pending pod the pool could host', ROGUE, 'Initialized', pending, []],
    [
      'a rogue taint the pending pods tolerate',
      ROGUE,
      'Initialized',
      [pod('web-1', 100, { tolerations: [{ operator: 'Exists' }] })],
      [],
    ],
    ['a rogue taint on a node not initialized yet', ROGUE, 'Registered', tolerant, []],
  ] as const)('%s', (_, taint, condition, pods, kinds) => {
    const c = claim('a', T0, ['Launched', condition]);
    const failures = findNodeClaimFailures({
      pool,
      claims: [c],
      nodes: [node('a', [taint as Taint])],
      pendingPods: pods as readonly Pod[],
      nowMs: T0 + MIN,
    });
    expect(failures.map((f) => f.kind)).toEqual(kinds);
  });

  it('judges no taint without pending pods, nor on a node with pods', () => {
    const c = claim('a', T0, ['Launched', 'Registered', 'Initialized']);
    expect(
      findNodeClaimFailures({ pool, claims: [c], nodes: [node('a', [ROGUE])], nowMs: T0 + MIN }),
    ).toEqual([]);
    expect(
      findNodeClaimFailures({
        pool,
        claims: [c],
        nodes: [node('a', [ROGUE], [pod('db-1', 100)])],
        pendingPods: tolerant,
        nowMs: T0 + MIN,
      }),
    ).toEqual([]);
  });

  it('counts a NodeClaim registered but not initialized 15 minutes after its creation', () => {
    const c = claim('a', T0, ['Launched', 'Registered']);
    const input = {
      pool,
      claims: [c],
      nodes: [node('a', [{ key: 'example.com/booting', effect: 'NoSchedule' as const }])],
    };
    expect(findNodeClaimFailures({ ...input, nowMs: T0 + 14 * MIN })).toEqual([]);
    expect(findNodeClaimFailures({ ...input, nowMs: T0 + 15 * MIN })).toEqual([
      expect.objectContaining({ kind: 'InitializationTimeout', nodeClaim: 'a', createdAtMs: T0 }),
    ]);
  });

  it('lists the unexpected taints of a node', () => {
    expect(
      unexpectedTaints(node('a', [ROGUE, { key: 'example.com/booting', effect: 'NoSchedule' }]), pool),
    ).toEqual([ROGUE]);
  });
});

describe('findRecoveredNodeClaim', () => {
  it('names a NodeClaim created since the last failure that initialized and hosts pods', () => {
    const pool = nodePool('general');
    const old = claim('old', T0 - MIN, ['Initialized']);
    const fresh = claim('fresh', T0 + MIN, ['Initialized']);
    const nodes = [node('old', [], [pod('a', 100)]), node('fresh', [], [pod('b', 100)])];
    expect(findRecoveredNodeClaim({ pool, claims: [old, fresh], nodes }, T0)).toBe('fresh');
    expect(findRecoveredNodeClaim({ pool, claims: [old], nodes }, T0)).toBeUndefined();
    expect(
      findRecoveredNodeClaim(
        { pool, claims: [fresh], nodes: [node('fresh', [], [pod('ds', 100, { daemonSetName: 'ds' })])] },
        T0,
      ),
    ).toBeUndefined();
  });
});
