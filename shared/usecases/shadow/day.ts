import type { ShadowLineSource } from '../../ports/log-lines.ts';
import type { Logger } from '../../runtime/logger.ts';
import {
  type CompareDecision,
  type ComparedSide,
  DECISION_SAMPLE_SIZE,
  type DecisionOutput,
  writeDecision,
} from '../decisions/decision.ts';
import { compareLines, DIFFERENCE_KINDS, type PercentileSummary, type ShadowComparison } from './compare.ts';
import { parseLogLines, SHADOW_DECISION_KINDS, shadowLines } from './lines.ts';

// A shadow stack's day in figures: once a day its shadow-report Lambda reads the lines of its
// deciding Lambdas and compares the day as `flotilla shadow report` does (compare.ts), then writes
// the comparison as one decision, whose metrics (the two sides' cost per hour, what each kind of
// difference saves, pod wait on both sides) are dated in the day's last minute, so the dashboard
// shows one figure per day. The day before is read too (LOOKBACK_MS): what was launched or
// proposed then and still differs today is paired from its own lines and priced for its part of
// the day, instead of being cut at midnight.

const DAY_MS = 86_400_000;

/** How far before the day its lines are read for what they pair. */
export const LOOKBACK_MS = DAY_MS;

/** A UTC day: its date and its bounds (epoch ms, `toMs` exclusive). */
export interface ShadowDay {
  readonly day: string;
  readonly fromMs: number;
  readonly toMs: number;
}

/** The UTC day before the one `ms` falls in: the day a run just after midnight reports. */
export function utcDayBefore(ms: number): ShadowDay {
  const fromMs = Math.floor(ms / DAY_MS) * DAY_MS - DAY_MS;
  return { day: new Date(fromMs).toISOString().slice(0, 10), fromMs, toMs: fromMs + DAY_MS };
}

/** The UTC day `day` names (YYYY-MM-DD); undefined when it names none. */
export function utcDay(day: string): ShadowDay | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const fromMs = Date.parse(`${day}T00:00:00.000Z`);
  if (Number.isNaN(fromMs) || new Date(fromMs).toISOString().slice(0, 10) !== day) return undefined;
  return { day, fromMs, toMs: fromMs + DAY_MS };
}

/**
 * The decision of a day's comparison: `no observation` when the day held none (`comparison`
 * undefined) or its lines span no time, which gives nothing to average over.
 */
export function compareDecisionOf(
  day: ShadowDay,
  comparison: ShadowComparison | undefined,
  lines: { readonly read: number; readonly unreadable: number },
): CompareDecision {
  const counts = { lines: lines.read, unreadableLines: lines.unreadable };
  if (comparison === undefined || comparison.hours === 0) {
    return { kind: 'compare', reason: 'no observation', day: day.day, hours: 0, ...counts };
  }
  const side = (
    c: { readonly averagePricePerHour: number; readonly dollars: number },
    wait: PercentileSummary,
  ): ComparedSide => ({
    pricePerHour: c.averagePricePerHour,
    dollars: c.dollars,
    ...(wait.p50 === undefined ? {} : { podWaitP50Seconds: wait.p50 }),
    ...(wait.p90 === undefined ? {} : { podWaitP90Seconds: wait.p90 }),
  });
  const savingsPerHour = Object.fromEntries(
    DIFFERENCE_KINDS.map((kind) => {
      const dollars = comparison.differences
        .filter((d) => d.kind === kind)
        .reduce((sum, d) => sum + d.dollars, 0);
      return [kind, comparison.hours === 0 ? 0 : round(dollars / comparison.hours)];
    }),
  );
  return {
    kind: 'compare',
    reason: 'compared',
    day: day.day,
    from: comparison.from,
    to: comparison.to,
    hours: comparison.hours,
    live: side(comparison.live, comparison.live.podStartupSeconds),
    flotilla: side(comparison.flotilla, comparison.flotilla.decisionWaitSeconds),
    savingsPerHour,
    differences: comparison.differences
      .slice(0, DECISION_SAMPLE_SIZE)
      .map(({ kind, nodePool, dollars, from, until, why }) => ({
        kind,
        nodePool,
        dollars,
        from,
        until,
        why,
      })),
    differenceCount: comparison.differences.length,
    ...counts,
  };
}

export interface CompareShadowDayDeps {
  readonly lines: ShadowLineSource;
  readonly output: DecisionOutput;
  /** Hears progress while the day's lines are read (a large cluster's day is many pages). */
  readonly logger: Logger;
}

/** Lines read between two progress lines. */
const PROGRESS_EVERY = 5_000;

/** Reads the day's shadow lines, compares them and writes the decision (its line and metrics). */
export async function compareShadowDay(deps: CompareShadowDayDeps, day: ShadowDay): Promise<CompareDecision> {
  let told = 0;
  const texts = await deps.lines.read(
    { fromMs: day.fromMs - LOOKBACK_MS, toMs: day.toMs, decisions: SHADOW_DECISION_KINDS },
    (count) => {
      if (count - told < PROGRESS_EVERY) return;
      told = count;
      deps.logger.info('reading shadow lines', { day: day.day, lines: count });
    },
  );
  const read = parseLogLines(texts.join('\n'));
  const lines = shadowLines(read.records);
  const observed = lines.observations.some((o) => o.atMs >= day.fromMs && o.atMs < day.toMs);
  const comparison = observed ? compareLines(lines, day) : undefined;
  const decision = compareDecisionOf(day, comparison, {
    read: read.records.length,
    unreadable: lines.unreadable + read.skipped,
  });
  writeDecision(deps.output, decision);
  return decision;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;
