import { describe, expect, it } from 'vitest';
import {
  describeWindow,
  heldPool,
  openWindow,
  type PoolSchedule,
  parseCron,
} from '../../../shared/core/index.ts';
import { nodePool } from './builders.ts';

// NodePool schedule windows (flotilla.io/schedules) by a time zone's wall clock, across
// Europe/Berlin's spring change of 2026 (02:00 CET → 03:00 CEST on 29 March, 01:00 UTC) and its
// autumn change (03:00 CEST → 02:00 CET on 25 October, 01:00 UTC).

const at = (iso: string) => Date.parse(iso);

function cron(expression: string) {
  const parsed = parseCron(expression);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return parsed;
}

const nightly = (hold: PoolSchedule['hold'] = { kind: 'noNewNodes' }): PoolSchedule => ({
  name: 'nightly',
  start: '0 20 * * *',
  startCron: cron('0 20 * * *'),
  end: '0 7 * * *',
  endCron: cron('0 7 * * *'),
  timeZone: 'Europe/Berlin',
  hold,
});

describe('a schedule window from 20:00 to 07:00 Europe/Berlin', () => {
  it('opens at 20:00 and closes at 07:00 local on the night of the spring change (10 hours)', () => {
    expect(openWindow(nightly(), at('2026-03-28T18:59:00Z'))).toBeUndefined();
    expect(openWindow(nightly(), at('2026-03-28T19:00:00Z'))).toMatchObject({
      sinceMs: at('2026-03-28T19:00:00Z'),
      untilMs: at('2026-03-29T05:00:00Z'),
    });
    expect(openWindow(nightly(), at('2026-03-29T04:59:00Z'))).toBeDefined();
    expect(openWindow(nightly(), at('2026-03-29T05:00:00Z'))).toBeUndefined();
    // The next evening, in summer time: 20:00 CEST is 18:00 UTC.
    expect(openWindow(nightly(), at('2026-03-29T17:59:00Z'))).toBeUndefined();
    expect(openWindow(nightly(), at('2026-03-29T18:00:00Z'))?.untilMs).toBe(at('2026-03-30T05:00:00Z'));
  });

  it('opens at 20:00 and closes at 07:00 local on the night of the autumn change (12 hours)', () => {
    expect(openWindow(nightly(), at('2026-10-24T18:00:00Z'))?.untilMs).toBe(at('2026-10-25T06:00:00Z'));
    expect(openWindow(nightly(), at('2026-10-25T05:59:00Z'))).toBeDefined();
    expect(openWindow(nightly(), at('2026-10-25T06:00:00Z'))).toBeUndefined();
  });

  it('is closed through the day, and says what it holds and until when', () => {
    expect(openWindow(nightly(), at('2026-03-30T12:00:00Z'))).toBeUndefined();
    const open = openWindow(nightly(), at('2026-03-28T22:00:00Z'));
    expect(open && describeWindow(open)).toBe(
      'schedule "nightly" holds no new nodes until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
    );
  });

  it('lowers limits to the least any open window sets, leaving the others as the spec has them', () => {
    const pool = nodePool({ limits: { cpu: '100', memory: '400Gi' } });
    const capped = nightly({ kind: 'limits', limits: { cpu: 8000, nodes: 2 } });
    const open = openWindow(capped, at('2026-03-28T22:00:00Z'));
    if (open === undefined) throw new Error('the window is closed');
    expect(heldPool(pool, [open]).limits).toEqual({ cpu: 8000, memory: 400 * 2 ** 30, nodes: 2 });
    expect(heldPool(pool, [])).toBe(pool);
    expect(describeWindow(open)).toBe(
      'schedule "nightly" holds limits cpu 8, nodes 2 until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
    );
  });
});
