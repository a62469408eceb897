import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allowedDisruptions,
  budgetActive,
  budgetNodes,
  cronMatches,
  cronWindowOpen,
  type DisruptionBudget,
  type DisruptionReason,
  parseCron,
} from '../../../shared/core/index.ts';

const at = (iso: string) => Date.parse(iso);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function schedule(expression: string) {
  const parsed = parseCron(expression);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return parsed;
}

describe('cron schedules (UTC)', () => {
  it.each([
    ['0 9 * * mon-fri', '2026-11-23T09:00:00Z', true], // a Monday
    ['0 9 * * mon-fri', '2026-11-22T09:00:00Z', false], // a Sunday
    ['0 9 * * 1-5', '2026-11-27T09:00:00Z', true], // Friday
    ['*/15 * * * *', '2026-11-23T10:45:00Z', true],
    ['*/15 * * * *', '2026-11-23T10:50:00Z', false],
    ['5/20 * * * *', '2026-11-23T10:45:00Z', true],
    ['0 0 1 jan *', '2027-01-01T00:00:00Z', true],
    ['0 0 * * 7', '2026-11-22T00:00:00Z', true], // 7 is Sunday
    ['0 0 1,15 * *', '2026-11-15T00:00:00Z', true],
    // Both day fields restricted: either may match (the 13th, or any Friday).
    ['0 0 13 * 5', '2026-11-13T00:00:00Z', true],
    ['0 0 13 * 5', '2026-11-20T00:00:00Z', true],
    ['0 0 13 * 5', '2026-11-19T00:00:00Z', false],
    // One restricted, the other `*` or `?`: the restricted one decides.
    ['0 0 13 * ?', '2026-11-20T00:00:00Z', false],
    ['@daily', '2026-11-23T00:00:00Z', true],
    ['@hourly', '2026-11-23T07:00:00Z', true],
    ['@weekly', '2026-11-22T00:00:00Z', true],
    ['@monthly', '2026-12-01T00:00:00Z', true],
    ['@yearly', '2026-12-01T00:00:00Z', false],
  ] as const)('%s fires at %s: %s', (expression, iso, fires) => {
    expect(cronMatches(schedule(expression), at(iso))).toBe(fires);
  });

  it.each([
    ['* * * *', /five fields/],
    ['60 * * * *', /minute: 60 is outside 0-59/],
    ['0 24 * * *', /hour: 24 is outside 0-23/],
    ['0 0 0 * *', /day of month: 0 is outside 1-31/],
    ['0 0 * foo *', /month: "foo" is not a number or a name/],
    ['0 0 * * 1-8', /day of week: 8 is outside 0-7/],
    ['*/0 * * * *', /step "0" is not a positive number/],
    ['0 10-2 * * *', /range 10-2 runs backwards/],
    ['@fortnightly', /five fields/],
  ])('refuses %s', (expression, problem) => {
    const parsed = parseCron(expression);
    expect('problem' in parsed ? parsed.problem : 'parsed').toMatch(problem);
  });

  it('opens a window at each firing for its duration, across midnight', () => {
    const nightly = schedule('0 22 * * *');
    expect(cronWindowOpen(nightly, 4 * HOUR, at('2026-11-23T21:59:00Z'))).toBe(false);
    expect(cronWindowOpen(nightly, 4 * HOUR, at('2026-11-23T22:00:00Z'))).toBe(true);
    expect(cronWindowOpen(nightly, 4 * HOUR, at('2026-11-24T01:59:59Z'))).toBe(true);
    expect(cronWindowOpen(nightly, 4 * HOUR, at('2026-11-24T02:00:00Z'))).toBe(false);
  });
});

describe('budget nodes', () => {
  it.each([
    ['10%', 10, 1],
    ['10%', 11, 2], // rounds up
    ['5%', 10, 1],
    ['0%', 50, 0],
    ['100%', 7, 7],
    ['3', 100, 3],
    ['0', 5, 0],
    ['101%', 10, undefined],
    ['-1', 10, undefined],
    ['ten', 10, undefined],
    ['1.5', 10, undefined],
  ] as const)('%s of %i nodes is %s', (nodes, total, expected) => {
    expect(budgetNodes(nodes, total)).toBe(expected);
  });
});

describe('allowed disruptions', () => {
  const counts = { nodes: 20, disrupting: 0 };
  const monday9 = at('2026-11-23T09:30:00Z');
  const sunday9 = at('2026-11-22T09:30:00Z');
  const businessHoursFreeze: DisruptionBudget = {
    nodes: '0',
    schedule: '0 9 * * mon-fri',
    duration: '8h',
  };

  it('uses the most restrictive active budget that applies to the reason', () => {
    const budgets: DisruptionBudget[] = [{ nodes: '20%' }, { nodes: '2', reasons: ['Drifted'] }];
    expect(allowedDisruptions(budgets, 'Drifted', counts, monday9)).toEqual({
      allowed: 2,
      limitedBy: 1,
      problems: [],
    });
    expect(allowedDisruptions(budgets, 'Empty', counts, monday9)).toEqual({
      allowed: 4,
      limitedBy: 0,
      problems: [],
    });
  });

  it('subtracts the nodes already being disrupted, never below zero', () => {
    expect(allowedDisruptions([{ nodes: '3' }], 'Empty', { nodes: 20, disrupting: 2 }, monday9).allowed).toBe(
      1,
    );
    expect(allowedDisruptions([{ nodes: '3' }], 'Empty', { nodes: 20, disrupting: 5 }, monday9).allowed).toBe(
      0,
    );
  });

  it('blocks during a scheduled window of 0 and not outside it', () => {
    const budgets = [{ nodes: '10%' }, businessHoursFreeze];
    expect(allowedDisruptions(budgets, 'Underutilized', counts, monday9).allowed).toBe(0);
    expect(allowedDisruptions(budgets, 'Underutilized', counts, at('2026-11-23T17:00:00Z')).allowed).toBe(2);
    expect(allowedDisruptions(budgets, 'Underutilized', counts, sunday9).allowed).toBe(2);
  });

  it('is unlimited for a reason no active budget names', () => {
    const budgets: DisruptionBudget[] = [{ nodes: '0', reasons: ['Underutilized'] }];
    expect(allowedDisruptions(budgets, 'Drifted', counts, monday9).allowed).toBe(Number.POSITIVE_INFINITY);
  });

  // Karpenter v1.15: node repair's reason counts budgets that list no reasons or list Unhealthy;
  // the disruption methods' reasons leave an Unhealthy-only budget out.
  it.each([
    ['no reasons', undefined, { Empty: 0, Drifted: 0, Underutilized: 0, Unhealthy: 0 }],
    ['Unhealthy only', ['Unhealthy'], { Empty: 4, Drifted: 4, Underutilized: 4, Unhealthy: 0 }],
    [
      'the three methods, not Unhealthy',
      ['Underutilized', 'Empty', 'Drifted'],
      { Empty: 0, Drifted: 0, Underutilized: 0, Unhealthy: 4 },
    ],
    [
      'Drifted and Unhealthy',
      ['Drifted', 'Unhealthy'],
      { Empty: 4, Drifted: 0, Underutilized: 4, Unhealthy: 0 },
    ],
  ] as const)('a budget of 0 for %s, beside one of 20%%', (_, reasons, allowed) => {
    const budgets: DisruptionBudget[] = [{ nodes: '20%' }, { nodes: '0', ...(reasons ? { reasons } : {}) }];
    for (const [reason, n] of Object.entries(allowed)) {
      expect(allowedDisruptions(budgets, reason as DisruptionReason, counts, monday9).allowed).toBe(n);
    }
  });

  it('leaves a malformed budget out with its problem; the others still hold', () => {
    const budgets: DisruptionBudget[] = [
      { nodes: '2' },
      { nodes: '0', schedule: 'every weekday', duration: '8h' },
      { nodes: '150%' },
      { nodes: '0', schedule: '0 9 * * *' },
      { nodes: '0', schedule: '0 9 * * *', duration: '1d' },
    ];
    const result = allowedDisruptions(budgets, 'Empty', counts, monday9);
    expect(result.allowed).toBe(2);
    expect(result.problems.map((p) => p.index)).toEqual([1, 2, 3, 4]);
    expect(result.problems[0]?.problem).toMatch(/five fields/);
    expect(result.problems[1]?.problem).toMatch(/neither a count nor a percentage/);
    expect(result.problems[2]?.problem).toMatch(/schedule and duration must be set together/);
    expect(result.problems[3]?.problem).toMatch(/not hours and minutes/);
  });

  it('falls back to the default 10% when every budget is malformed, never to no limit', () => {
    const result = allowedDisruptions([{ nodes: 'all' }], 'Empty', counts, monday9);
    expect(result.allowed).toBe(2);
    expect(result.problems).toHaveLength(1);
  });

  it('judges activity by the schedule and duration only', () => {
    expect(budgetActive({ nodes: '0' }, monday9)).toBe(true);
    expect(budgetActive(businessHoursFreeze, monday9)).toBe(true);
    expect(budgetActive(businessHoursFreeze, sunday9)).toBe(false);
    expect(budgetActive({ ...businessHoursFreeze, duration: '1h30m' }, at('2026-11-23T10:29:00Z'))).toBe(
      true,
    );
    expect(budgetActive({ ...businessHoursFreeze, duration: '1h30m' }, at('2026-11-23T10:30:00Z'))).toBe(
      false,
    );
  });

  const reasons: DisruptionReason[] = ['Empty', 'Drifted', 'Underutilized', 'Unhealthy'];
  const budgetArb = fc.record(
    {
      nodes: fc.oneof(
        fc.integer({ min: 0, max: 30 }).map(String),
        fc.integer({ min: 0, max: 100 }).map((n) => `${n}%`),
      ),
      schedule: fc.constantFrom('0 9 * * mon-fri', '*/30 * * * *', '0 22 * * *', '@daily'),
      duration: fc.constantFrom('1h', '8h', '30m', '2h30m'),
      reasons: fc.subarray(reasons, { minLength: 1 }),
    },
    { requiredKeys: ['nodes'] },
  );

  it('never allows more than any active budget that applies, whatever the mix', () => {
    fc.assert(
      fc.property(
        fc.array(budgetArb, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(...reasons),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: at('2026-11-01T00:00:00Z'), max: at('2026-12-01T00:00:00Z') }),
        (raw, reason, nodes, disrupting, nowMs) => {
          // schedule and duration come together, as the CRD requires.
          const budgets: DisruptionBudget[] = raw
            .map((b) => (b.schedule !== undefined && b.duration === undefined ? { ...b, duration: '1h' } : b))
            .map((b) =>
              b.duration !== undefined && b.schedule === undefined ? { ...b, schedule: '@daily' } : b,
            );
          const { allowed, problems } = allowedDisruptions(budgets, reason, { nodes, disrupting }, nowMs);
          expect(problems).toEqual([]);
          expect(allowed).toBeGreaterThanOrEqual(0);
          for (const budget of budgets) {
            const applies =
              budgetActive(budget, nowMs) === true &&
              (budget.reasons === undefined || budget.reasons.includes(reason));
            if (applies) {
              expect(allowed).toBeLessThanOrEqual(
                Math.max(0, (budgetNodes(budget.nodes, nodes) ?? 0) - disrupting),
              );
            }
          }
        },
      ),
    );
  });
});
