import { describe, expect, it } from 'vitest';
import { pausedSinceJudged, recheckLaunchGuard } from '../../../../shared/usecases/runaway-guard/recheck.ts';
import {
  encodeLaunchBackoff,
  LAUNCH_BACKOFF_ANNOTATION,
} from '../../../../shared/usecases/runaway-guard/state.ts';
import { nodePool, pod } from '../provisioning/builders.ts';
import { claim, MIN, node, ROGUE, T0 } from './fixtures.ts';

// The second judgement of a provisioner run: the Nodes the plan's confirmation read again may
// carry a taint the lists did not show (a rogue controller tainted the Node in between). The
// pool that would launch for the pods it repels waits; nothing is written.

describe('recheckLaunchGuard', () => {
  const pool = nodePool('general');
  const other = nodePool('other');
  const pending = [pod('web-1', 100)];
  const first = { paused: new Map<string, string>(), probing: new Set<string>() };
  const base = {
    guard: first,
    launching: new Set(['general']),
    pools: [pool, other],
    claims: [claim('a', T0, ['Launched', 'Registered', 'Initialized'])],
    pendingPods: pending,
    nowMs: T0 + 2_000,
  };

  it('holds a launching pool whose young Node the confirmed read shows under a rogue taint', () => {
    const guard = recheckLaunchGuard({ ...base, nodes: [node('a', [ROGUE])] });
    expect([...guard.paused.keys()]).toEqual(['general']);
    expect(guard.paused.get('general')).toContain('chaos.example.com/rogue');
    expect(guard.paused.get('general')).toContain(new Date(T0 + 2 * MIN).toISOString());
  });

  it('returns the same guard when the confirmed read shows nothing new', () => {
    expect(recheckLaunchGuard({ ...base, nodes: [node('a', [])] })).toBe(first);
    // A pool that launches nothing in this plan is not judged again.
    expect(recheckLaunchGuard({ ...base, launching: new Set(['other']), nodes: [node('a', [ROGUE])] })).toBe(
      first,
    );
  });

  it('holds a probing pool on a failure not counted yet, and not on one already counted', () => {
    const probing = { paused: new Map<string, string>(), probing: new Set(['general']) };
    const failed = { ...base, guard: probing, nodes: [node('a', [ROGUE])], nowMs: T0 + 3 * MIN };
    const held = recheckLaunchGuard(failed);
    expect(held.paused.get('general')).toContain('count a failed NodeClaim');
    expect(held.probing.has('general')).toBe(false);
    // The same NodeClaim, counted already by the pool's state: the probe may go.
    const counted = nodePool(
      'general',
      {},
      {
        annotations: {
          [LAUNCH_BACKOFF_ANNOTATION]: encodeLaunchBackoff({
            failures: 1,
            lastFailedCreatedMs: T0,
            pausedUntilMs: T0 + 2 * MIN,
          }),
        },
      },
    );
    expect(recheckLaunchGuard({ ...failed, pools: [counted] })).toBe(probing);
  });

  it('leaves a pool the first judgement paused as it was', () => {
    const paused = { paused: new Map([['general', 'launches paused']]), probing: new Set<string>() };
    expect(recheckLaunchGuard({ ...base, guard: paused, nodes: [node('a', [ROGUE])] })).toBe(paused);
  });
});

// The NodePools read again just before a round launches: a disruption pass that emptied a node
// under a rogue taint may have paused the pool while the run planned, after its own judgement.
describe('pausedSinceJudged', () => {
  const first = { paused: new Map<string, string>(), probing: new Set(['general']) };
  const withState = (name: string, pausedUntilMs: number) =>
    nodePool(
      name,
      {},
      {
        annotations: {
          [LAUNCH_BACKOFF_ANNOTATION]: encodeLaunchBackoff({
            failures: 2,
            lastFailedCreatedMs: T0,
            pausedUntilMs,
          }),
        },
      },
    );
  const now = T0 + MIN;

  it('holds a launching pool that a back-off paused since the run judged it', () => {
    const guard = pausedSinceJudged(first, new Set(['general']), [withState('general', T0 + 3 * MIN)], now);
    expect(guard.paused.get('general')).toContain(new Date(T0 + 3 * MIN).toISOString());
    expect(guard.paused.get('general')).toContain('2 failed NodeClaim(s)');
    expect(guard.probing.has('general')).toBe(false);
  });

  it('holds every pool paused meanwhile once one that launches is, so the pods do not move to another', () => {
    const pools = [withState('general', T0 + 3 * MIN), withState('other', T0 + 2 * MIN), nodePool('free')];
    const guard = pausedSinceJudged(first, new Set(['general']), pools, now);
    expect([...guard.paused.keys()].sort()).toEqual(['general', 'other']);
  });

  it('holds every pool paused meanwhile when the plan is solved again anyway (the Nodes held a pool)', () => {
    // The confirmed Nodes held `general`; `other`, which the first plan did not launch, was paused
    // meanwhile: the plan solved again must not move the pods there.
    const byNodes = {
      paused: new Map([['general', 'launches wait for a taint to go']]),
      probing: new Set<string>(),
    };
    const pools = [nodePool('general'), withState('other', T0 + 2 * MIN)];
    expect(pausedSinceJudged(byNodes, new Set(['general']), pools, now)).toBe(byNodes);
    const guard = pausedSinceJudged(byNodes, new Set(['general']), pools, now, true);
    expect([...guard.paused.keys()].sort()).toEqual(['general', 'other']);
  });

  it('lets a pool launch whose back-off has ended, or that has none, whatever pools that do not launch say', () => {
    const pools = [withState('general', now - 1), nodePool('other'), withState('idle', T0 + 3 * MIN)];
    expect(pausedSinceJudged(first, new Set(['general', 'other']), pools, now)).toBe(first);
  });

  it('holds a pool whose back-off annotation does not parse', () => {
    const broken = nodePool('general', {}, { annotations: { [LAUNCH_BACKOFF_ANNOTATION]: '{not json' } });
    const guard = pausedSinceJudged(first, new Set(['general']), [broken], now);
    expect(guard.paused.get('general')).toContain('cannot be read');
  });

  it('leaves a pool the first judgement paused as it was', () => {
    const paused = { paused: new Map([['general', 'launches paused']]), probing: new Set<string>() };
    expect(pausedSinceJudged(paused, new Set(['general']), [withState('general', T0 + 3 * MIN)], now)).toBe(
      paused,
    );
  });
});
