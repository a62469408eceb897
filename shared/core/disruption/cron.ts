// Standard five-field cron schedules (minute, hour, day of month, month, day of week) and the
// `@hourly`-style macros, evaluated in UTC, as disruption budget schedules are, or in a named IANA
// time zone (Flotilla's own): a schedule fires at each instant whose local wall-clock minute it
// matches, so a time a daylight-saving change skips never fires that day, and one it repeats fires
// twice. Day of month and day of week combine as in Vixie cron: when both are restricted, either
// may match.

/** A parsed schedule: the allowed values of each field. */
export interface CronSchedule {
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly daysOfWeek: ReadonlySet<number>;
  /** Day of month or day of week was `*` or `?`: the days then have to match both. */
  readonly anyDay: boolean;
}

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names for values, the first naming `min`. */
  readonly names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  // 7 is Sunday too.
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES },
];

function value(text: string, spec: FieldSpec): number | string {
  const named = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return spec.min + named;
  if (!/^\d+$/.test(text)) return `"${text}" is not a number${spec.names ? ' or a name' : ''}`;
  const n = Number(text);
  return n < spec.min || n > spec.max ? `${n} is outside ${spec.min}-${spec.max}` : n;
}

/** The values one field allows, or the problem. */
function parseField(text: string, spec: FieldSpec): Set<number> | string {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1)
      return `${spec.name}: step "${stepText}" is not a positive number`;
    let low: number;
    let high: number;
    if (range === '*' || range === '?') {
      low = spec.min;
      high = spec.max;
    } else {
      const [first = '', last] = range.split('-');
      const from = value(first, spec);
      if (typeof from === 'string') return `${spec.name}: ${from}`;
      const to = last === undefined ? (stepText === undefined ? from : spec.max) : value(last, spec);
      if (typeof to === 'string') return `${spec.name}: ${to}`;
      if (to < from) return `${spec.name}: range ${range} runs backwards`;
      low = from;
      high = to;
    }
    for (let v = low; v <= high; v += step) out.add(v);
  }
  return out;
}

/** Parses a schedule, or says what is wrong with it. */
export function parseCron(expression: string): CronSchedule | { readonly problem: string } {
  const text = MACROS[expression.trim().toLowerCase()] ?? expression.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5) {
    return { problem: `"${expression}" needs five fields (minute hour day-of-month month day-of-week)` };
  }
  const sets: Set<number>[] = [];
  for (const [i, spec] of FIELDS.entries()) {
    const parsed = parseField(parts[i] ?? '', spec);
    if (typeof parsed === 'string') return { problem: `"${expression}": ${parsed}` };
    sets.push(parsed);
  }
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = sets as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  if (daysOfWeek.delete(7)) daysOfWeek.add(0);
  const star = (field: string | undefined) => field !== undefined && /^[*?](\/1)?$/.test(field);
  return { minutes, hours, daysOfMonth, months, daysOfWeek, anyDay: star(parts[2]) || star(parts[4]) };
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** Whether `timeZone` names an IANA time zone this runtime knows (`UTC` included). */
export function isTimeZone(timeZone: string): boolean {
  try {
    zoneFormat(timeZone);
    return true;
  } catch {
    return false;
  }
}

function zoneFormat(timeZone: string): Intl.DateTimeFormat {
  let format = zoneFormats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    zoneFormats.set(timeZone, format);
  }
  return format;
}

/**
 * `ms` shifted by the zone's offset at that instant: its UTC fields (getUTCHours, …) read as the
 * zone's wall clock. @throws RangeError for an unknown time zone.
 */
export function wallClockMs(ms: number, timeZone: string | undefined): number {
  if (timeZone === undefined || timeZone === 'UTC') return ms;
  // A zone's offset holds for a quarter of an hour that it holds at both ends of (transitions
  // fall on whole quarters): known once per quarter, as the evaluators ask for the same hours
  // again and again.
  const quarter = Math.floor(ms / QUARTER_MS);
  let offsets = OFFSETS.get(timeZone);
  if (offsets === undefined || offsets.size >= MAX_QUARTERS) {
    offsets = new Map();
    OFFSETS.set(timeZone, offsets);
  }
  let offset = offsets.get(quarter);
  if (offset === undefined) {
    const start = quarter * QUARTER_MS;
    const atStart = formattedWallMs(start, timeZone) - start;
    const end = start + QUARTER_MS - 1000;
    const atEnd = formattedWallMs(end, timeZone) - end;
    if (atStart !== atEnd) return formattedWallMs(ms, timeZone) + (ms - Math.floor(ms / 1000) * 1000);
    offset = atStart;
    offsets.set(quarter, offset);
  }
  return ms + offset;
}

const QUARTER_MS = 15 * 60_000;
/** Quarters of an hour remembered per zone before the memory starts again (a month of them). */
const MAX_QUARTERS = 3_000;
const OFFSETS = new Map<string, Map<number, number>>();

/** The zone's wall clock at `ms`, to the second, as its formatter gives it. */
function formattedWallMs(ms: number, timeZone: string): number {
  const f: Record<string, number> = {};
  for (const p of zoneFormat(timeZone).formatToParts(ms))
    if (p.type !== 'literal') f[p.type] = Number(p.value);
  return Date.UTC(
    f['year'] ?? 0,
    (f['month'] ?? 1) - 1,
    f['day'] ?? 1,
    f['hour'] ?? 0,
    f['minute'] ?? 0,
    f['second'] ?? 0,
  );
}

/** Whether the schedule fires at the minute of `ms`, read in `timeZone` (UTC when unset). */
export function cronMatches(schedule: CronSchedule, ms: number, timeZone?: string): boolean {
  const at = new Date(wallClockMs(ms, timeZone));
  if (!schedule.minutes.has(at.getUTCMinutes())) return false;
  if (!schedule.hours.has(at.getUTCHours())) return false;
  if (!schedule.months.has(at.getUTCMonth() + 1)) return false;
  const dom = schedule.daysOfMonth.has(at.getUTCDate());
  const dow = schedule.daysOfWeek.has(at.getUTCDay());
  return schedule.anyDay ? dom && dow : dom || dow;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** More than any zone's daylight-saving shift, in minutes. */
const DAY_MARGIN_MINUTES = 180;

/**
 * Whether a window that opens at each firing and lasts `durationMs` is open at `nowMs`: some
 * firing `f` has `nowMs - durationMs < f <= nowMs` (firings fall on whole minutes; the duration is
 * elapsed time, whatever the zone's clock does meanwhile).
 */
export function cronWindowOpen(
  schedule: CronSchedule,
  durationMs: number,
  nowMs: number,
  timeZone?: string,
): boolean {
  const firing = latestFiring(schedule, nowMs, durationMs, timeZone);
  return firing !== undefined && firing > nowMs - durationMs;
}

/**
 * The latest firing at or before `nowMs` within `horizonMs`, or undefined. It walks back an hour
 * at a time through hours the schedule cannot fire in (by the zone's wall clock), and within an
 * hour that can, goes straight to its latest minute that fires.
 */
export function latestFiring(
  schedule: CronSchedule,
  nowMs: number,
  horizonMs: number,
  timeZone?: string,
): number | undefined {
  const earliest = nowMs - horizonMs;
  for (let m = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS; m >= earliest; ) {
    const wall = new Date(wallClockMs(m, timeZone));
    const intoDay = wall.getUTCHours() * 60 + wall.getUTCMinutes();
    if (!dayMayFire(schedule, wall)) {
      // Back to the day before, landing short of it by more than any daylight-saving shift (Troll's
      // is two hours), so a shortened day never makes the walk skip the previous day's last hours.
      m -= Math.max(wall.getUTCMinutes() + 1, intoDay + 1 - DAY_MARGIN_MINUTES) * MINUTE_MS;
      continue;
    }
    if (!schedule.hours.has(wall.getUTCHours())) {
      m -= (wall.getUTCMinutes() + 1) * MINUTE_MS;
      continue;
    }
    // Within one wall-clock hour the zone's offset mostly holds: go straight to the minute that
    // fires, and check it (a half-hour change within the hour makes the walk go minute by minute).
    const minute = wall.getUTCMinutes();
    let fire = -1;
    for (const f of schedule.minutes) if (f <= minute && f > fire) fire = f;
    if (fire < 0) {
      m -= (minute + 1) * MINUTE_MS;
      continue;
    }
    const at = m - (minute - fire) * MINUTE_MS;
    if (at < earliest) return undefined;
    if (cronMatches(schedule, at, timeZone)) return at;
    m -= MINUTE_MS;
  }
  return undefined;
}

/** The first firing after `nowMs` within `horizonMs`, or undefined. */
export function nextFiring(
  schedule: CronSchedule,
  nowMs: number,
  horizonMs: number,
  timeZone?: string,
): number | undefined {
  const latest = nowMs + horizonMs;
  for (let m = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS; m <= latest; ) {
    const wall = new Date(wallClockMs(m, timeZone));
    const intoDay = wall.getUTCHours() * 60 + wall.getUTCMinutes();
    if (!dayMayFire(schedule, wall)) {
      // On to the next day, landing short of it (see latestFiring).
      m += Math.max(60 - wall.getUTCMinutes(), 24 * 60 - intoDay - DAY_MARGIN_MINUTES) * MINUTE_MS;
      continue;
    }
    if (!schedule.hours.has(wall.getUTCHours())) {
      m += (60 - wall.getUTCMinutes()) * MINUTE_MS;
      continue;
    }
    const minute = wall.getUTCMinutes();
    let fire = 60;
    for (const f of schedule.minutes) if (f >= minute && f < fire) fire = f;
    if (fire === 60) {
      m += (60 - minute) * MINUTE_MS;
      continue;
    }
    const at = m + (fire - minute) * MINUTE_MS;
    if (at > latest) return undefined;
    if (cronMatches(schedule, at, timeZone)) return at;
    m += MINUTE_MS;
  }
  return undefined;
}

/**
 * The instants in (`fromMs`, `toMs`] at which the zone's clock jumps forward over a wall-clock
 * minute the schedule fires at (a spring daylight-saving change): what a window's start or end
 * there means takes effect when the clock jumps, as cron daemons run a job the change skips.
 */
export function skippedFirings(
  schedule: CronSchedule,
  fromMs: number,
  toMs: number,
  timeZone: string | undefined,
): number[] {
  if (timeZone === undefined || timeZone === 'UTC' || toMs <= fromMs) return [];
  const offset = (ms: number) => wallClockMs(ms, timeZone) - ms;
  const out: number[] = [];
  let a = Math.floor(fromMs / MINUTE_MS) * MINUTE_MS;
  let before = offset(a);
  while (a < toMs) {
    const b = Math.min(a + DAY_MS, Math.ceil(toMs / MINUTE_MS) * MINUTE_MS);
    const after = offset(b);
    if (after > before) {
      // The first minute on the new offset.
      let lo = a;
      let hi = b;
      while (hi - lo > MINUTE_MS) {
        const mid = Math.floor((lo + hi) / 2 / MINUTE_MS) * MINUTE_MS;
        if (offset(mid) === before) lo = mid;
        else hi = mid;
      }
      const skippedFrom = wallClockMs(hi - MINUTE_MS, timeZone) + MINUTE_MS;
      const skippedTo = wallClockMs(hi, timeZone);
      let fires = false;
      for (let w = skippedFrom; w < skippedTo && !fires; w += MINUTE_MS) fires = cronMatches(schedule, w);
      if (fires && hi > fromMs && hi <= toMs) out.push(hi);
    }
    before = after;
    a = b;
  }
  return out;
}

/** Whether the schedule may fire on the wall-clock day of `wall` (its month and day match). */
function dayMayFire(schedule: CronSchedule, wall: Date): boolean {
  if (!schedule.months.has(wall.getUTCMonth() + 1)) return false;
  const dom = schedule.daysOfMonth.has(wall.getUTCDate());
  const dow = schedule.daysOfWeek.has(wall.getUTCDay());
  return schedule.anyDay ? dom && dow : dom || dow;
}
