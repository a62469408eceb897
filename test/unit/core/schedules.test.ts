import { describe, expect, it } from 'vitest';
import {
  describeWindow,
  heldPool,
  nextTransition,
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

  it('takes a start or an end the spring change skips at the moment the clocks jump', () => {
    const window = (start: string, end: string): PoolSchedule => ({
      ...nightly(),
      start,
      startCron: cron(start),
      end,
      endCron: cron(end),
    });
    // 22:00 to 02:30: on 29 March 02:30 never comes; the window closes at the jump (01:00 UTC).
    const late = window('0 22 * * *', '30 2 * * *');
    expect(openWindow(late, at('2026-03-28T22:00:00Z'))?.untilMs).toBe(at('2026-03-29T01:00:00Z'));
    expect(openWindow(late, at('2026-03-29T00:59:00Z'))).toBeDefined();
    expect(openWindow(late, at('2026-03-29T01:00:00Z'))).toBeUndefined();
    expect(openWindow(late, at('2026-03-29T12:00:00Z'))).toBeUndefined();
    // 02:30 to 06:00: on 29 March it opens at the jump and closes at 06:00 CEST (04:00 UTC).
    const early = window('30 2 * * *', '0 6 * * *');
    expect(openWindow(early, at('2026-03-29T00:59:00Z'))).toBeUndefined();
    expect(openWindow(early, at('2026-03-29T01:00:00Z'))).toMatchObject({
      sinceMs: at('2026-03-29T01:00:00Z'),
      untilMs: at('2026-03-29T04:00:00Z'),
    });
    expect(openWindow(early, at('2026-03-29T04:00:00Z'))).toBeUndefined();
    // The night before, an ordinary one: 02:30 CET is 01:30 UTC.
    expect(openWindow(early, at('2026-03-28T01:30:00Z'))?.sinceMs).toBe(at('2026-03-28T01:30:00Z'));
  });

  it('gives no credit to a window whose limits are not below the spec', () => {
    const pool = nodePool({ limits: { cpu: '4' } });
    const open = openWindow(nightly({ kind: 'limits', limits: { cpu: 8000 } }), at('2026-03-28T22:00:00Z'));
    if (open === undefined) throw new Error('the window is closed');
    expect(heldPool(pool, [open])).toBe(pool);
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

describe('the next transition of a NodePool’s schedules (its wake-up)', () => {
  it.each([
    [
      'a Saturday afternoon before the autumn change: 20:00 CEST',
      '2026-10-24T12:00:00Z',
      '2026-10-24T18:00:00Z',
    ],
    ['that night: 07:00 CET, after the change', '2026-10-24T18:00:00Z', '2026-10-25T06:00:00Z'],
    ['the next evening: 20:00 CET', '2026-10-25T06:00:00Z', '2026-10-25T19:00:00Z'],
    ['the evening before the spring change: 07:00 CEST', '2026-03-28T19:30:00Z', '2026-03-29T05:00:00Z'],
  ])('%s', (_when, now, next) => {
    expect(nextTransition([nightly()], at(now))).toBe(at(next));
  });

  it('takes the earliest of several schedules, a start the spring change skips at the jump', () => {
    const skipped: PoolSchedule = {
      ...nightly(),
      name: 'early',
      start: '30 2 * * *',
      startCron: cron('30 2 * * *'),
      end: '0 4 * * *',
      endCron: cron('0 4 * * *'),
    };
    // 02:30 does not exist on 29 March in Berlin: the window opens when the clocks jump (01:00 UTC).
    expect(nextTransition([skipped], at('2026-03-29T00:30:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(nextTransition([nightly(), skipped], at('2026-03-28T12:00:00Z'))).toBe(at('2026-03-28T19:00:00Z'));
    expect(nextTransition([], at('2026-03-28T12:00:00Z'))).toBeUndefined();
  });
});
