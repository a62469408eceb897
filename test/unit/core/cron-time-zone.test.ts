import { describe, expect, it } from 'vitest';
import {
  allowedDisruptions,
  cronMatches,
  cronWindowOpen,
  type DisruptionBudget,
  isTimeZone,
  latestFiring,
  nextFiring,
  parseCron,
} from '../../../shared/core/index.ts';

// Cron schedules read in a named IANA time zone, across Europe/Berlin's daylight-saving changes of
// 2026: clocks go from 02:00 CET to 03:00 CEST on 29 March (01:00 UTC) and from 03:00 CEST back
// to 02:00 CET on 25 October (01:00 UTC).

const at = (iso: string) => Date.parse(iso);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BERLIN = 'Europe/Berlin';

function schedule(expression: string) {
  const parsed = parseCron(expression);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return parsed;
}

describe('cron schedules in a time zone', () => {
  const evening = schedule('0 20 * * *');

  it('fires at the local wall-clock time on both sides of each change', () => {
    // Winter (UTC+1), summer (UTC+2), winter again.
    expect(cronMatches(evening, at('2026-03-28T19:00:00Z'), BERLIN)).toBe(true);
    expect(cronMatches(evening, at('2026-03-28T18:00:00Z'), BERLIN)).toBe(false);
    expect(cronMatches(evening, at('2026-03-29T18:00:00Z'), BERLIN)).toBe(true);
    expect(cronMatches(evening, at('2026-03-29T19:00:00Z'), BERLIN)).toBe(false);
    expect(cronMatches(evening, at('2026-10-25T19:00:00Z'), BERLIN)).toBe(true);
    // Without a zone, UTC, as Karpenter reads budget schedules.
    expect(cronMatches(evening, at('2026-03-29T20:00:00Z'))).toBe(true);
  });

  it('skips a time the spring change leaves out, and fires twice at one the autumn change repeats', () => {
    const half = schedule('30 2 * * *');
    const firings = (from: string, days: number) => {
      const out: string[] = [];
      let t = at(from);
      for (
        let f = nextFiring(half, t, days * DAY, BERLIN);
        f !== undefined;
        f = nextFiring(half, t, days * DAY, BERLIN)
      ) {
        out.push(new Date(f).toISOString());
        t = f;
        if (out.length > 10) break;
      }
      return out.filter((iso) => Date.parse(iso) <= at(from) + days * DAY);
    };
    expect(firings('2026-03-28T00:00:00Z', 2)).toEqual(['2026-03-28T01:30:00.000Z']);
    expect(firings('2026-10-25T00:00:00Z', 1)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ]);
  });

  it('finds the latest and the next firing by the local clock', () => {
    expect(latestFiring(evening, at('2026-03-29T17:00:00Z'), 2 * DAY, BERLIN)).toBe(
      at('2026-03-28T19:00:00Z'),
    );
    expect(nextFiring(evening, at('2026-03-29T17:00:00Z'), 2 * DAY, BERLIN)).toBe(at('2026-03-29T18:00:00Z'));
    expect(latestFiring(evening, at('2026-03-29T17:00:00Z'), HOUR, BERLIN)).toBeUndefined();
    const weekdays = schedule('0 7 * * mon-fri');
    // Friday 27 March 07:00 CET is the latest before Sunday noon.
    expect(latestFiring(weekdays, at('2026-03-29T10:00:00Z'), 7 * DAY, BERLIN)).toBe(
      at('2026-03-27T06:00:00Z'),
    );
    expect(nextFiring(weekdays, at('2026-03-29T10:00:00Z'), 7 * DAY, BERLIN)).toBe(
      at('2026-03-30T05:00:00Z'),
    );
  });

  it('opens a window for its elapsed duration from the local firing', () => {
    expect(cronWindowOpen(evening, 2 * HOUR, at('2026-03-29T18:30:00Z'), BERLIN)).toBe(true);
    expect(cronWindowOpen(evening, 2 * HOUR, at('2026-03-29T20:30:00Z'), BERLIN)).toBe(false);
    expect(cronWindowOpen(evening, 2 * HOUR, at('2026-03-29T17:59:00Z'), BERLIN)).toBe(false);
  });

  it('knows IANA zones and refuses others', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Europe/Atlantis')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});

describe('disruption budgets in a time zone (flotilla.io/budget-time-zone)', () => {
  const counts = { nodes: 10, disrupting: 0 };
  const businessHours = (timeZone?: string): DisruptionBudget[] => [
    {
      nodes: '0',
      schedule: '0 9 * * mon-fri',
      duration: '8h',
      ...(timeZone === undefined ? {} : { timeZone }),
    },
    { nodes: '100%' },
  ];

  it('holds from 09:00 to 17:00 local time in summer and in winter', () => {
    const allowed = (iso: string, timeZone?: string) =>
      allowedDisruptions(businessHours(timeZone), 'Drifted', counts, at(iso)).allowed;
    // Monday 30 March (CEST, UTC+2): 09:00 local is 07:00 UTC.
    expect(allowed('2026-03-30T07:30:00Z', BERLIN)).toBe(0);
    expect(allowed('2026-03-30T06:30:00Z', BERLIN)).toBe(10);
    expect(allowed('2026-03-30T15:30:00Z', BERLIN)).toBe(10);
    // Monday 26 October (CET, UTC+1): 09:00 local is 08:00 UTC.
    expect(allowed('2026-10-26T07:30:00Z', BERLIN)).toBe(10);
    expect(allowed('2026-10-26T08:30:00Z', BERLIN)).toBe(0);
    // Read in UTC without the annotation.
    expect(allowed('2026-03-30T07:30:00Z')).toBe(10);
    expect(allowed('2026-03-30T09:30:00Z')).toBe(0);
  });

  it('takes a budget whose time zone is unknown as active, and says so', () => {
    const result = allowedDisruptions(
      businessHours('Europe/Atlantis'),
      'Drifted',
      counts,
      at('2026-03-29T03:00:00Z'),
    );
    expect(result.allowed).toBe(0);
    expect(result.problems).toEqual([
      {
        index: 0,
        problem:
          'time zone "Europe/Atlantis" (annotation flotilla.io/budget-time-zone) is not an IANA time zone; the budget is taken as active',
      },
    ]);
  });
});

describe('the latest and next firing, against a walk over every minute', () => {
  const MINUTE = 60_000;
  /** Every minute from `from` to `to`, the schedule's firings among them (the plain definition). */
  const firings = (s: ReturnType<typeof schedule>, from: number, to: number, zone: string) => {
    const out: number[] = [];
    for (let m = Math.ceil(from / MINUTE) * MINUTE; m <= to; m += MINUTE)
      if (cronMatches(s, m, zone)) out.push(m);
    return out;
  };

  it.each([
    // Half-hour changes (Lord Howe), hour changes both ways (Berlin, New York), none (Tokyo),
    // and a two-hour change (Troll).
    ['Australia/Lord_Howe', '2026-04-04T12:00:00Z'],
    ['Australia/Lord_Howe', '2026-10-03T12:00:00Z'],
    ['Europe/Berlin', '2026-03-28T12:00:00Z'],
    ['Europe/Berlin', '2026-10-24T12:00:00Z'],
    ['America/New_York', '2026-03-07T18:00:00Z'],
    ['America/New_York', '2026-10-31T18:00:00Z'],
    ['Asia/Tokyo', '2026-06-01T00:00:00Z'],
    ['Antarctica/Troll', '2026-03-28T12:00:00Z'],
    ['Antarctica/Troll', '2026-10-24T12:00:00Z'],
  ])('agree in %s around %s', (zone, around) => {
    const start = at(around);
    const span = 2 * DAY;
    for (const expression of [
      '0 2 * * *',
      '15,45 1-3 * * *',
      '*/20 * * * *',
      '30 2 * * sun',
      '0 0 1 * *',
      '5 23 * * *',
      '30 23 * * sat',
    ]) {
      const s = schedule(expression);
      const all = firings(s, start - span, start + 2 * span, zone);
      for (let now = start; now < start + span; now += 37 * MINUTE) {
        const before = all.filter((f) => f <= now && f >= now - span).at(-1);
        const after = all.find((f) => f > Math.floor(now / MINUTE) * MINUTE && f <= now + span);
        expect([expression, latestFiring(s, now, span, zone)]).toEqual([expression, before]);
        expect([expression, nextFiring(s, now, span, zone)]).toEqual([expression, after]);
      }
    }
  });
});
