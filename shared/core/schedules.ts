// NodePool schedules (Flotilla's own): windows that open at one cron and close at another, both
// read in a named IANA time zone, each holding the NodePool to lower limits or to no new nodes (a
// static NodePool: to other replicas) while it is open. A window is open from the latest firing of its start until the first firing of its end
// after that (by the zone's wall clock, so "20:00 to 07:00" stays 20:00 to 07:00 local across a
// daylight-saving change). Pure: the annotation is read in shared/apis/schedules.ts, and the
// provisioner's NodePool selection applies what holds (shared/usecases/state/eligibility.ts), the
// static pass and disruption the replicas (shared/usecases/state/scheduled-replicas.ts), and
// disruption empties a pool its limits hold below what it runs (disruption/schedule-window.ts).
import {
  type CronSchedule,
  latestFiring,
  nextFiring,
  skippedFirings,
  wallClockMs,
} from './disruption/cron.ts';
import type { NodePool } from './node-pool.ts';
import { formatQuantity } from './quantity.ts';
import type { ResourceList } from './resources.ts';

/** What a schedule holds its NodePool to while its window is open. */
export type ScheduleHold =
  | { readonly kind: 'limits'; readonly limits: ResourceList }
  | { readonly kind: 'noNewNodes' }
  /** A static NodePool's replicas in place of `spec.replicas`. */
  | { readonly kind: 'replicas'; readonly replicas: number };

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
  /** When it closes (its end's next firing), epoch ms; undefined when that is over a year away. */
  readonly untilMs: number | undefined;
}

const DAY_MS = 86_400_000;
/** How far back a window's start and ahead its end are looked for: a yearly window fits. */
export const SCHEDULE_HORIZON_MS = 366 * DAY_MS;

/**
 * The window of `schedule` open at `nowMs`, or undefined when it is closed. A start or end at a
 * time the spring change skips takes effect when the clock jumps over it.
 */
export function openWindow(schedule: PoolSchedule, nowMs: number): OpenWindow | undefined {
  const { startCron, endCron, timeZone } = schedule;
  const started = latestFiring(startCron, nowMs, SCHEDULE_HORIZON_MS, timeZone);
  const jumped = skippedFirings(startCron, started ?? nowMs - SCHEDULE_HORIZON_MS, nowMs, timeZone).at(-1);
  const sinceMs = Math.max(started ?? Number.NEGATIVE_INFINITY, jumped ?? Number.NEGATIVE_INFINITY);
  if (!Number.isFinite(sinceMs)) return undefined;
  // An end at or after the start (the same minute included) closed it.
  if (latestFiring(endCron, nowMs, nowMs - sinceMs, timeZone) !== undefined) return undefined;
  if (skippedFirings(endCron, sinceMs - 1, nowMs, timeZone).length > 0) return undefined;
  return { schedule, sinceMs, untilMs: nextEffect(endCron, nowMs, timeZone) };
}

/**
 * The first instant after `nowMs` at which a window of `schedules` opens or closes (a start or end
 * the spring change skips: when the clocks jump), or undefined when none does within a year: when
 * what the schedules hold changes next, and a provisioning run is worth waking for.
 */
export function nextTransition(schedules: readonly PoolSchedule[], nowMs: number): number | undefined {
  let next = Number.POSITIVE_INFINITY;
  for (const s of schedules) {
    const open = openWindow(s, nowMs);
    const at = open === undefined ? nextEffect(s.startCron, nowMs, s.timeZone) : open.untilMs;
    if (at !== undefined && at < next) next = at;
  }
  return Number.isFinite(next) ? next : undefined;
}

/**
 * When `cron` (a window's start or end) next takes effect after `nowMs`: its next firing, or the
 * spring change's jump over a time it fires at, whichever comes first; undefined past a year.
 */
function nextEffect(cron: CronSchedule, nowMs: number, timeZone: string): number | undefined {
  const fires = nextFiring(cron, nowMs, SCHEDULE_HORIZON_MS, timeZone);
  const jumped = skippedFirings(cron, nowMs, fires ?? nowMs + SCHEDULE_HORIZON_MS, timeZone)[0];
  return jumped !== undefined && (fires === undefined || jumped < fires) ? jumped : fires;
}

/** The windows of `schedules` open at `nowMs`, in the annotation's order. */
export function openWindows(schedules: readonly PoolSchedule[], nowMs: number): OpenWindow[] {
  return schedules.flatMap((s) => {
    const open = openWindow(s, nowMs);
    return open === undefined ? [] : [open];
  });
}

/**
 * The limits the open windows lower below the pool's own (or another window's), by resource: each
 * at the lowest any window sets, with the window that set it.
 */
export function windowLimits(
  pool: NodePool,
  windows: readonly OpenWindow[],
): Map<string, { readonly limit: number; readonly window: OpenWindow }> {
  const limits: Record<string, number> = { ...(pool.limits ?? {}) };
  const by = new Map<string, { limit: number; window: OpenWindow }>();
  for (const w of windows) {
    if (w.schedule.hold.kind !== 'limits') continue;
    for (const [k, v] of Object.entries(w.schedule.hold.limits)) {
      if (v >= (limits[k] ?? Number.POSITIVE_INFINITY)) continue;
      limits[k] = v;
      by.set(k, { limit: v, window: w });
    }
  }
  return by;
}

/**
 * The pool as the open windows hold it: each limited resource at the lowest limit any sets, and
 * `limitsHeldBy` naming the windows that lowered one below what the spec (or another window) has.
 */
export function heldPool(pool: NodePool, windows: readonly OpenWindow[]): NodePool {
  const by = windowLimits(pool, windows);
  if (by.size === 0) return pool;
  const limits: Record<string, number> = { ...(pool.limits ?? {}) };
  for (const [k, { limit }] of by) limits[k] = limit;
  const named = [...new Set([...by.values()].map((b) => b.window))].map(describeWindow).join('; ');
  return { ...pool, limits, limitsHeldBy: named };
}

/**
 * A static pool as the open windows hold it: `replicas` set by the window of replicas that opened
 * last (the first listed of those that opened together), and `replicasHeldBy` naming it.
 */
export function heldReplicas(pool: NodePool, windows: readonly OpenWindow[]): NodePool {
  let latest: { readonly window: OpenWindow; readonly replicas: number } | undefined;
  for (const w of windows) {
    if (w.schedule.hold.kind !== 'replicas') continue;
    if (latest === undefined || w.sinceMs > latest.window.sinceMs) {
      latest = { window: w, replicas: w.schedule.hold.replicas };
    }
  }
  if (latest === undefined || pool.replicas === undefined) return pool;
  return { ...pool, replicas: latest.replicas, replicasHeldBy: describeWindow(latest.window) };
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
  const { hold } = schedule;
  const what =
    hold.kind === 'noNewNodes'
      ? 'no new nodes'
      : hold.kind === 'replicas'
        ? `replicas ${hold.replicas}`
        : `limits ${Object.entries(hold.limits)
            .map(([k, v]) => `${k} ${formatQuantity(k, v)}`)
            .join(', ')}`;
  const until = w.untilMs === undefined ? 'over a year from now' : formatInZone(w.untilMs, schedule.timeZone);
  return `schedule "${schedule.name}" holds ${what} until ${until}`;
}
