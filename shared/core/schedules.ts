// NodePool schedules (Flotilla's own): windows that open at one cron and close at another, both
// read in a named IANA time zone, each holding the NodePool to lower limits or to no new nodes while
// it is open. A window is open from the latest firing of its start until the first firing of its end
// after that (by the zone's wall clock, so "20:00 to 07:00" stays 20:00 to 07:00 local across a
// daylight-saving change). Pure: the annotation is read in shared/apis/schedules.ts, and the
// provisioner's NodePool selection applies what holds (shared/usecases/state/eligibility.ts).
import { type CronSchedule, latestFiring, nextFiring, wallClockMs } from './disruption/cron.ts';
import type { NodePool } from './node-pool.ts';
import { formatQuantity } from './quantity.ts';
import type { ResourceList } from './resources.ts';

/** What a schedule holds its NodePool to while its window is open. */
export type ScheduleHold =
  | { readonly kind: 'limits'; readonly limits: ResourceList }
  | { readonly kind: 'noNewNodes' };

/** One schedule of a NodePool. */
export interface PoolSchedule {
  readonly name: string;
  /** The cron (in `timeZone`) that opens the window, as written, and parsed. */
  readonly start: string;
  readonly startCron: CronSchedule;
  /** The cron that closes it. */
  readonly end: string;
  readonly endCron: CronSchedule;
  readonly timeZone: string;
  readonly hold: ScheduleHold;
}

/** A NodePool's schedules as its annotation gives them, or why they cannot be read. */
export type PoolSchedules =
  | { readonly kind: 'schedules'; readonly schedules: readonly PoolSchedule[] }
  | { readonly kind: 'invalid'; readonly problem: string };

/** A schedule whose window is open now. */
export interface OpenWindow {
  readonly schedule: PoolSchedule;
  /** When the window opened (its start's latest firing), epoch ms. */
  readonly sinceMs: number;
  /** When it closes (its end's next firing), epoch ms; undefined when that is over 35 days away. */
  readonly untilMs: number | undefined;
}

const DAY_MS = 86_400_000;
/** How far back a window's start and ahead its end are looked for: a monthly window fits. */
export const SCHEDULE_HORIZON_MS = 35 * DAY_MS;

/** The window of `schedule` open at `nowMs`, or undefined when it is closed. */
export function openWindow(schedule: PoolSchedule, nowMs: number): OpenWindow | undefined {
  const { startCron, endCron, timeZone } = schedule;
  const sinceMs = latestFiring(startCron, nowMs, SCHEDULE_HORIZON_MS, timeZone);
  if (sinceMs === undefined) return undefined;
  // An end at or after the start (the same minute included) closed it.
  const ended = latestFiring(endCron, nowMs, nowMs - sinceMs, timeZone);
  if (ended !== undefined) return undefined;
  return { schedule, sinceMs, untilMs: nextFiring(endCron, nowMs, SCHEDULE_HORIZON_MS, timeZone) };
}

/** The windows of `schedules` open at `nowMs`, in the annotation's order. */
export function openWindows(schedules: readonly PoolSchedule[], nowMs: number): OpenWindow[] {
  return schedules.flatMap((s) => {
    const open = openWindow(s, nowMs);
    return open === undefined ? [] : [open];
  });
}

/** The pool as the open windows hold it: each limited resource at the lowest limit any sets. */
export function heldPool(pool: NodePool, windows: readonly OpenWindow[]): NodePool {
  let limits: Record<string, number> | undefined;
  for (const w of windows) {
    if (w.schedule.hold.kind !== 'limits') continue;
    limits ??= { ...(pool.limits ?? {}) };
    for (const [k, v] of Object.entries(w.schedule.hold.limits)) limits[k] = Math.min(limits[k] ?? v, v);
  }
  return limits === undefined ? pool : { ...pool, limits };
}

/** `2026-03-30T05:00:00Z (07:00 Europe/Berlin)`: an instant, and the zone's wall clock at it. */
export function formatInZone(ms: number, timeZone: string): string {
  const wall = new Date(wallClockMs(ms, timeZone));
  const hhmm = `${String(wall.getUTCHours()).padStart(2, '0')}:${String(wall.getUTCMinutes()).padStart(2, '0')}`;
  return `${new Date(ms).toISOString().replace('.000Z', 'Z')} (${hhmm} ${timeZone})`;
}

/** What an open window holds, for a reason or a condition message. */
export function describeWindow(w: OpenWindow): string {
  const { schedule } = w;
  const what =
    schedule.hold.kind === 'noNewNodes'
      ? 'no new nodes'
      : `limits ${Object.entries(schedule.hold.limits)
          .map(([k, v]) => `${k} ${formatQuantity(k, v)}`)
          .join(', ')}`;
  const until = w.untilMs === undefined ? 'beyond 35 days' : formatInZone(w.untilMs, schedule.timeZone);
  return `schedule "${schedule.name}" holds ${what} until ${until}`;
}
