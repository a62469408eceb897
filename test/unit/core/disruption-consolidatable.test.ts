import { describe, expect, it } from 'vitest';
import { consolidatable } from '../../../shared/core/index.ts';

describe('consolidatable', () => {
  const init = Date.parse('2026-11-21T10:00:00Z');
  const S = 1000;
  it.each([
    ['Never', 'Never', init, undefined, init + 1e9, { kind: 'no', why: 'consolidateAfter is Never' }],
    [
      'Never, not initialized',
      'Never',
      undefined,
      undefined,
      init,
      { kind: 'no', why: 'consolidateAfter is Never' },
    ],
    [
      'an invalid duration',
      'soon',
      init,
      undefined,
      init,
      { kind: 'invalid', problem: 'consolidateAfter "soon" is neither a duration nor Never' },
    ],
    [
      'an invalid duration, not initialized',
      '5 minutes',
      undefined,
      undefined,
      init,
      { kind: 'invalid', problem: 'consolidateAfter "5 minutes" is neither a duration nor Never' },
    ],
    [
      'not initialized',
      '30s',
      undefined,
      undefined,
      init + 1e9,
      { kind: 'no', why: 'the NodeClaim has not initialized' },
    ],
    [
      '30s, one second before',
      '30s',
      init,
      undefined,
      init + 29 * S,
      { kind: 'notYet', atMs: init + 30 * S },
    ],
    [
      '30s, exactly at consolidateAfter',
      '30s',
      init,
      undefined,
      init + 30 * S,
      { kind: 'consolidatable', sinceMs: init + 30 * S },
    ],
    [
      '30s, long after',
      '30s',
      init,
      undefined,
      init + 3600 * S,
      { kind: 'consolidatable', sinceMs: init + 30 * S },
    ],
    ['0s, at initialization', '0s', init, undefined, init, { kind: 'consolidatable', sinceMs: init }],
    [
      'a pod event after initialization counts from the event',
      '30s',
      init,
      init + 600 * S,
      init + 620 * S,
      { kind: 'notYet', atMs: init + 630 * S },
    ],
    [
      'a pod event after initialization, exactly at consolidateAfter',
      '30s',
      init,
      init + 600 * S,
      init + 630 * S,
      { kind: 'consolidatable', sinceMs: init + 630 * S },
    ],
    [
      'a pod event before initialization counts from initialization',
      '1m',
      init,
      init - 600 * S,
      init + 60 * S,
      { kind: 'consolidatable', sinceMs: init + 60 * S },
    ],
    ['1h30m', '1h30m', init, undefined, init + 5399 * S, { kind: 'notYet', atMs: init + 5400 * S }],
  ] as const)('%s', (_, consolidateAfter, initializedAtMs, lastPodEventMs, nowMs, verdict) => {
    expect(consolidatable({ consolidateAfter, initializedAtMs, lastPodEventMs, nowMs })).toEqual(verdict);
  });
});
