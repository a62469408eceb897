import { describeWindow, NodePoolConditionType, openWindows } from '../../core/index.ts';
import type { ClusterNodePool, ConditionUpdate } from '../../ports/cluster.ts';

// The NodePool condition that says which of its schedules (`flotilla.io/schedules`) holds it now and
// until when. Its message changes only when a window opens or closes, so the status is written then
// and not at every pass. Pure.

/** The `ScheduleHolds` condition the pool should have at `nowMs`, or undefined to leave it alone. */
export function scheduleCondition(pool: ClusterNodePool, nowMs: number): ConditionUpdate | undefined {
  const type = NodePoolConditionType.scheduleHolds;
  const schedules = pool.schedules;
  const had = pool.conditions.some((c) => c.type === type);
  if (schedules?.kind === 'invalid') {
    return { type, status: 'True', reason: 'SchedulesInvalid', message: schedules.problem };
  }
  const open = schedules === undefined ? [] : openWindows(schedules.schedules, nowMs);
  if (open.length > 0) {
    return { type, status: 'True', reason: 'WindowOpen', message: open.map(describeWindow).join('; ') };
  }
  if (!had) return undefined;
  return {
    type,
    status: 'False',
    reason: 'NoWindowOpen',
    message:
      schedules === undefined ? 'the NodePool names no schedule' : 'no schedule holds the NodePool now',
  };
}
