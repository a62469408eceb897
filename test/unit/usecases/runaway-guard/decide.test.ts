import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Condition } from '../../../../shared/ports/cluster.ts';
import {
  decideLaunchBackoff,
  LAUNCH_BACKOFF_MAX_MS,
  type LaunchBackoffOutcome,
  launchBackoffMs,
  launchPausedUntil,
} from '../../../../shared/usecases/runaway-guard/decide.ts';
import type { NodeClaimFailure } from '../../../../shared/usecases/runaway-guard/failures.ts';
import {
  encodeLaunchBackoff,
  LAUNCH_BACKOFF_ANNOTATION,
  type LaunchBackoffState,
  readLaunchBackoff,
} from '../../../../shared/usecases/runaway-guard/state.ts';
import { nodePool } from '../provisioning/builders.ts';
import { MIN, T0 } from './fixtures.ts';

// The runaway guard's pause: how long, when it starts and ends, and the state it keeps.

const failure = (nodeClaim: string, createdAtMs: number): NodeClaimFailure => ({
  kind: 'UnexpectedTaint',
  nodeClaim,
  createdAtMs,
  detail: `nodeClaim "${nodeClaim}" failed`,
});

/** A NodePool carrying the condition and the state annotation a decision wrote. */
function poolAfter(outcome: LaunchBackoffOutcome, generation = 1) {
  if (outcome.kind === 'unchanged') throw new Error('nothing was written');
  const condition: Condition = {
    ...outcome.condition,
    lastTransitionTime: '',
    observedGeneration: generation,
  };
  return nodePool(
    'general',
    {},
    { conditions: [condition], generation, annotations: { [LAUNCH_BACKOFF_ANNOTATION]: outcome.annotation } },
  );
}

/** The state a NodePool's annotation holds, or undefined when it holds none that reads. */
function stateOf(pool: ReturnType<typeof nodePool>): LaunchBackoffState | undefined {
  const read = readLaunchBackoff(pool);
  return read.kind === 'state' ? read.state : undefined;
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
        expect(stateOf(pool)?.failures).toBe(count);
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
    expect(stateOf(pool)).toEqual({
      failures: 1,
      lastFailedCreatedMs: T0,
      pausedUntilMs: T0 + 2 * MIN,
    });
    expect(launchPausedUntil(stateOf(pool), T0 + MIN + 1)).toBe(T0 + 2 * MIN);
    expect(launchPausedUntil(stateOf(pool), T0 + 2 * MIN)).toBeUndefined();
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

  it.each([
    [
      'an annotation that is not JSON',
      { [LAUNCH_BACKOFF_ANNOTATION]: 'failures 3' },
      'False',
      /not JSON|does not parse/,
    ],
    [
      'an annotation without its fields',
      { [LAUNCH_BACKOFF_ANNOTATION]: '{"failures":-1}' },
      'False',
      /does not parse.*failures/,
    ],
    ['a True condition without its annotation', {}, 'True', /condition is True but annotation/],
  ] as const)(
    'restarts a 1-minute pause and probing from %s, never "no failures"',
    (_, annotations, status, problem) => {
      const condition: Condition = {
        type: 'LaunchBackoff',
        status,
        reason: 'UnexpectedTaint',
        message: 'launches paused for 4m after 3 failed NodeClaim(s) in a row (failures 3, …)',
        lastTransitionTime: '',
      };
      const pool = nodePool('general', {}, { conditions: [condition], generation: 4, annotations });
      expect(readLaunchBackoff(pool)).toMatchObject({
        kind: 'unreadable',
        problem: expect.stringMatching(problem),
      });
      const outcome = decideLaunchBackoff({ pool, failures: [], nowMs: T0 });
      expect(outcome).toMatchObject({
        kind: 'restart',
        backoffMs: MIN,
        state: { failures: 1, lastFailedCreatedMs: T0, pausedUntilMs: T0 + MIN, observedGeneration: 4 },
        condition: { type: 'LaunchBackoff', status: 'True', reason: 'StateUnreadable' },
      });
      // What it writes reads back: the next decision goes on from it.
      expect(stateOf(poolAfter(outcome, 4))).toEqual({
        failures: 1,
        lastFailedCreatedMs: T0,
        pausedUntilMs: T0 + MIN,
        observedGeneration: 4,
      });
    },
  );

  it('counts a failure seen with an unreadable state as the first in a row', () => {
    const pool = nodePool('general', {}, { annotations: { [LAUNCH_BACKOFF_ANNOTATION]: '{' } });
    expect(decideLaunchBackoff({ pool, failures: [failure('a', T0)], nowMs: T0 + MIN })).toMatchObject({
      kind: 'start',
      state: { failures: 1, lastFailedCreatedMs: T0 },
    });
  });

  it('reads nothing from a NodePool without the annotation and without a pause', () => {
    expect(readLaunchBackoff(nodePool('general'))).toEqual({ kind: 'none' });
  });
});

describe('the state annotation', () => {
  it('reads back what it encodes', () => {
    const ms = fc.integer({ min: 0, max: Date.parse('9999-12-31T23:59:59Z') });
    fc.assert(
      fc.property(
        fc.nat({ max: 1_000 }),
        ms,
        ms,
        fc.option(fc.nat({ max: 1_000_000 }), { nil: undefined }),
        (failures, lastFailedCreatedMs, pausedUntilMs, observedGeneration) => {
          const state: LaunchBackoffState = {
            failures,
            lastFailedCreatedMs,
            pausedUntilMs,
            ...(observedGeneration === undefined ? {} : { observedGeneration }),
          };
          const annotations = { [LAUNCH_BACKOFF_ANNOTATION]: encodeLaunchBackoff(state) };
          expect(readLaunchBackoff({ annotations, conditions: [] })).toEqual({ kind: 'state', state });
        },
      ),
    );
  });

  it('refuses fields it does not know, naming the annotation', () => {
    const value = JSON.stringify({
      failures: 1,
      lastFailedNodeClaimCreated: '2026-01-01T00:00:00Z',
      pausedUntil: '2026-01-01T00:01:00Z',
      extra: true,
    });
    expect(
      readLaunchBackoff({ annotations: { [LAUNCH_BACKOFF_ANNOTATION]: value }, conditions: [] }),
    ).toEqual({
      kind: 'unreadable',
      problem: expect.stringContaining(`annotation ${LAUNCH_BACKOFF_ANNOTATION}`),
    });
  });
});
