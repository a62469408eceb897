import { describe, expect, it } from 'vitest';
import { explainBudget } from '../../../../shared/usecases/explain/node.ts';

// `flotilla explain node` names the window of the budget that holds a node: in the time zone the
// NodePool's flotilla.io/budget-time-zone gives its budgets, UTC without it.

const at = (iso: string) => Date.parse(iso);

describe('the window explain shows for a scheduled budget', () => {
  const budget = { nodes: '0', schedule: '0 9 * * *', duration: '1h' };

  it('opens at the local firing in the budget time zone', () => {
    // 09:00 CEST is 07:00 UTC on 30 March 2026.
    const berlin = [{ ...budget, timeZone: 'Europe/Berlin' }];
    expect(explainBudget('web', 'Drifted', 0, berlin, 0, at('2026-03-30T07:30:00Z')).window).toEqual({
      openedAt: '2026-03-30T07:00:00.000Z',
      closesAt: '2026-03-30T08:00:00.000Z',
    });
    expect(explainBudget('web', 'Drifted', 0, berlin, 0, at('2026-03-30T09:30:00Z')).window).toBeUndefined();
  });

  it('reads the schedule in UTC without one', () => {
    expect(explainBudget('web', 'Drifted', 0, [budget], 0, at('2026-03-30T09:30:00Z')).window).toEqual({
      openedAt: '2026-03-30T09:00:00.000Z',
      closesAt: '2026-03-30T10:00:00.000Z',
    });
  });
});
