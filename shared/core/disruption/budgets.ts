import { parseGoDurationMs } from '../duration.ts';
import { cronWindowOpen, isTimeZone, parseCron } from './cron.ts';

// Disruption budget arithmetic, as Karpenter v1 computes it per NodePool and reason: each budget
// that applies to the reason and is active now allows `nodes` (a count, or a percentage of the
// NodePool's nodes rounded up) minus the nodes already being disrupted; the most restrictive
// active budget wins. A budget that is malformed (the CRD lets some through) is left out with a
// problem the caller reports, instead of blocking all disruption or none.

/**
 * Why Karpenter disrupts a node voluntarily; budgets may name them. `Unhealthy` (Karpenter v1.15)
 * is node repair's: it paces repairs, and no disruption method uses it. `Scheduled` is Flotilla's
 * own (a schedule's window that holds a NodePool below what it runs): no budget can name it, so
 * only the budgets that name no reason apply to it.
 */
export type DisruptionReason = 'Empty' | 'Drifted' | 'Underutilized' | 'Unhealthy' | 'Scheduled';

/** The reasons the disruption controller's methods disrupt for: every one but node repair's. */
export type MethodDisruptionReason = Exclude<DisruptionReason, 'Unhealthy'>;

/** One entry of a NodePool's `spec.disruption.budgets`. */
export interface DisruptionBudget {
  /** A node count (`"5"`) or a percentage of the NodePool's nodes (`"10%"`). */
  readonly nodes: string;
  /** Cron schedule (UTC, or `timeZone`) at which the budget becomes active; with `duration`. */
  readonly schedule?: string;
  /**
   * Flotilla's own: the IANA time zone `schedule` is read in (the NodePool annotation
   * `flotilla.io/budget-time-zone`). @default UTC, as Karpenter reads it
   */
  readonly timeZone?: string;
  /** How long the budget stays active after each schedule hit (hours and minutes). */
  readonly duration?: string;
  /** Reasons the budget limits; unset means every reason. */
  readonly reasons?: readonly DisruptionReason[];
}

/** What the CRD fills in when a NodePool names no budget. */
export const DEFAULT_BUDGET: DisruptionBudget = { nodes: '10%' };

/** A budget left out of the arithmetic, and why. */
export interface BudgetProblem {
  /** Index in `spec.disruption.budgets`. */
  readonly index: number;
  readonly problem: string;
}

export interface BudgetCounts {
  /** The NodePool's nodes that count (managed, initialized, not terminating). */
  readonly nodes: number;
  /** Those already being disrupted (deleting, in a command, or NotReady but for `Unhealthy`). */
  readonly disrupting: number;
}

export interface AllowedDisruptions {
  /** How many more of the NodePool's nodes may be disrupted now for the reason. */
  readonly allowed: number;
  /** The index of the budget that set `allowed`, when one did. */
  readonly limitedBy?: number;
  readonly problems: readonly BudgetProblem[];
}

const NODES = /^((100|[0-9]{1,2})%|[0-9]+)$/;

/** `nodes` of a budget for a NodePool of `total` nodes; percentages round up. */
export function budgetNodes(nodes: string, total: number): number | undefined {
  if (!NODES.test(nodes)) return undefined;
  if (!nodes.endsWith('%')) return Number(nodes);
  return Math.ceil((Number(nodes.slice(0, -1)) * total) / 100);
}

/**
 * Whether the budget is active at `nowMs`, or why it cannot be judged. A schedule in a time zone
 * this runtime does not know `holds`: it is taken as active (the stricter reading) and reported.
 */
export function budgetActive(
  budget: DisruptionBudget,
  nowMs: number,
): boolean | { readonly problem: string; readonly holds?: true } {
  if (budget.schedule === undefined && budget.duration === undefined) return true;
  if (budget.schedule === undefined || budget.duration === undefined) {
    return { problem: 'schedule and duration must be set together' };
  }
  const schedule = parseCron(budget.schedule);
  if ('problem' in schedule) return { problem: `schedule ${schedule.problem}` };
  const durationMs = /^((\d+[hm])|(\d+h\d+m))(0s)?$/.test(budget.duration)
    ? parseGoDurationMs(budget.duration)
    : undefined;
  if (durationMs === undefined) {
    return { problem: `duration "${budget.duration}" is not hours and minutes such as 8h or 1h30m` };
  }
  if (budget.timeZone !== undefined && !isTimeZone(budget.timeZone)) {
    return {
      problem: `time zone "${budget.timeZone}" (annotation flotilla.io/budget-time-zone) is not an IANA time zone; the budget is taken as active`,
      holds: true,
    };
  }
  return cronWindowOpen(schedule, durationMs, nowMs, budget.timeZone);
}

/**
 * How many more nodes of a NodePool may be disrupted for `reason` at `nowMs`: the minimum over the
 * active budgets that apply to the reason of `nodes - disrupting` (never below 0). With no valid
 * budget at all, the CRD's default budget applies, so a malformed entry never lifts every limit.
 * Without any active budget for the reason, nothing limits it (`Infinity`).
 */
export function allowedDisruptions(
  budgets: readonly DisruptionBudget[],
  reason: DisruptionReason,
  counts: BudgetCounts,
  nowMs: number,
): AllowedDisruptions {
  const problems: BudgetProblem[] = [];
  let valid = 0;
  let allowed = Number.POSITIVE_INFINITY;
  let limitedBy: number | undefined;
  budgets.forEach((budget, index) => {
    const nodes = budgetNodes(budget.nodes, counts.nodes);
    if (nodes === undefined) {
      problems.push({ index, problem: `nodes "${budget.nodes}" is neither a count nor a percentage 0-100%` });
      return;
    }
    const judged = budgetActive(budget, nowMs);
    if (typeof judged !== 'boolean') {
      problems.push({ index, problem: judged.problem });
      if (judged.holds !== true) return;
    }
    const active = typeof judged === 'boolean' ? judged : true;
    valid += 1;
    if (!active || (budget.reasons !== undefined && !budget.reasons.includes(reason))) return;
    const left = Math.max(0, nodes - counts.disrupting);
    if (left < allowed) {
      allowed = left;
      limitedBy = index;
    }
  });
  if (valid === 0 && budgets.length > 0) {
    const fallback = budgetNodes(DEFAULT_BUDGET.nodes, counts.nodes) ?? 0;
    return { allowed: Math.max(0, fallback - counts.disrupting), problems };
  }
  return { allowed, ...(limitedBy === undefined ? {} : { limitedBy }), problems };
}
