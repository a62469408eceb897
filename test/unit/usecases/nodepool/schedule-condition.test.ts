import { describe, expect, it } from 'vitest';
import { toClusterNodePool } from '../../../../shared/apis/index.ts';
import type { Condition } from '../../../../shared/ports/cloud.ts';
import { scheduleCondition } from '../../../../shared/usecases/nodepool/schedule-condition.ts';
import { nodePoolManifest } from '../../../fixtures/builders.ts';

// The NodePool's ScheduleHolds condition: which schedule holds it and until when.

const pool = (annotations: Record<string, string>, conditions: Condition[] = []) => ({
  ...toClusterNodePool(nodePoolManifest('web', { annotations })),
  conditions,
});
const nightly = {
  'flotilla.io/schedules': JSON.stringify([
    { name: 'nightly', start: '0 20 * * *', end: '0 7 * * *', timeZone: 'Europe/Berlin', noNewNodes: true },
  ]),
};
const night = Date.parse('2026-03-28T22:00:00Z');
const day = Date.parse('2026-03-29T09:00:00Z');
const holding: Condition = {
  type: 'ScheduleHolds',
  status: 'True',
  reason: 'WindowOpen',
  message: 'x',
  lastTransitionTime: '2026-03-28T19:00:00Z',
};

describe('the ScheduleHolds condition', () => {
  it('is True while a window is open, naming it and until when', () => {
    expect(scheduleCondition(pool(nightly), night)).toEqual({
      type: 'ScheduleHolds',
      status: 'True',
      reason: 'WindowOpen',
      message: 'schedule "nightly" holds no new nodes until 2026-03-29T05:00:00Z (07:00 Europe/Berlin)',
    });
  });

  it('is not written before any window held the pool, and turns False once none does', () => {
    expect(scheduleCondition(pool(nightly), day)).toBeUndefined();
    expect(scheduleCondition(pool(nightly, [holding]), day)).toEqual({
      type: 'ScheduleHolds',
      status: 'False',
      reason: 'NoWindowOpen',
      message: 'no schedule holds the NodePool now',
    });
    expect(scheduleCondition(pool({}, [holding]), day)).toMatchObject({
      status: 'False',
      reason: 'NoWindowOpen',
    });
  });

  it('is True with the problem when the annotation does not read', () => {
    expect(scheduleCondition(pool({ 'flotilla.io/schedules': 'nope' }), day)).toMatchObject({
      status: 'True',
      reason: 'SchedulesInvalid',
      message: expect.stringContaining('is not JSON'),
    });
  });
});
