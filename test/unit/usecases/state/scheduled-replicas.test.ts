import { describe, expect, it } from 'vitest';
import { toClusterNodePool } from '../../../../shared/apis/index.ts';
import {
  staticPoolsNow,
  withScheduledReplicas,
} from '../../../../shared/usecases/state/scheduled-replicas.ts';
import { nodePoolManifest } from '../../../fixtures/builders.ts';

// A static NodePool's replicas as its `replicas` windows hold them: the window that opened last
// sets them; none open, spec.replicas; a dynamic pool or schedules that do not read are left out.

const T = (iso: string) => Date.parse(iso);

const pool = (name: string, schedules: unknown, replicas?: number) =>
  toClusterNodePool(
    nodePoolManifest(name, {
      annotations: {
        'flotilla.io/schedules': typeof schedules === 'string' ? schedules : JSON.stringify(schedules),
      },
      ...(replicas === undefined ? {} : { replicas }),
    }),
  );

const nights = [
  { name: 'nightly', start: '0 20 * * *', end: '0 7 * * *', timeZone: 'Europe/Berlin', replicas: 1 },
  { name: 'weekend', start: '0 0 * * sat', end: '0 0 * * mon', timeZone: 'Europe/Berlin', replicas: 0 },
];

describe('a static NodePool under windows of replicas', () => {
  it.each([
    ['a weekday noon (none open)', '2026-10-21T10:00:00Z', 4, undefined],
    [
      'a weekday night',
      '2026-10-21T20:00:00Z',
      1,
      'schedule "nightly" holds replicas 1 until 2026-10-22T05:00:00Z (07:00 Europe/Berlin)',
    ],
    // Saturday 00:00 opened the weekend after Friday 20:00 opened the night: the weekend holds.
    [
      'a Saturday 01:00',
      '2026-10-23T23:00:00Z',
      0,
      'schedule "weekend" holds replicas 0 until 2026-10-25T23:00:00Z (00:00 Europe/Berlin)',
    ],
    // Saturday 20:00 opened the night after the weekend: the night holds.
    [
      'a Saturday night',
      '2026-10-24T19:00:00Z',
      1,
      'schedule "nightly" holds replicas 1 until 2026-10-25T06:00:00Z (07:00 Europe/Berlin)',
    ],
  ])('%s: %s replicas', (_when, at, replicas, heldBy) => {
    const held = withScheduledReplicas(pool('fixed', nights, 4), T(at)).pool;
    expect(held.replicas).toBe(replicas);
    expect(held.replicasHeldBy).toBe(heldBy);
  });

  it('keeps the static pools the pass holds: not a dynamic one, nor one whose schedules do not read', () => {
    const now = T('2026-10-21T20:00:00Z');
    const kept = staticPoolsNow(
      [
        pool('fixed', nights, 4),
        pool('broken', '[{', 4),
        pool('dynamic', [{ ...nights[0], replicas: undefined, noNewNodes: true }]),
      ],
      now,
    );
    expect(kept.map((p) => [p.pool.name, p.pool.replicas])).toEqual([['fixed', 1]]);
  });
});
