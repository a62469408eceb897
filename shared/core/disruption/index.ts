export {
  type AllowedDisruptions,
  allowedDisruptions,
  type BudgetCounts,
  type BudgetProblem,
  budgetActive,
  budgetNodes,
  DEFAULT_BUDGET,
  type DisruptionBudget,
  type DisruptionReason,
  type MethodDisruptionReason,
} from './budgets.ts';
export { type ConsolidatableVerdict, consolidatable } from './consolidatable.ts';
export {
  type CronSchedule,
  cronMatches,
  cronWindowOpen,
  isTimeZone,
  latestFiring,
  nextFiring,
  parseCron,
  wallClockMs,
} from './cron.ts';
export { type Drift, type DriftReason, hashDrift, requirementsDrift, type VersionedHash } from './drift.ts';
export { type ExpirationVerdict, expiration, lifetimeRemaining } from './expiration.ts';
export {
  type DoNotDisruptVerdict,
  disruptionCost,
  doNotDisrupt,
  doNotDisruptValue,
  isReschedulable,
  matchingPdbs,
  nodeDoNotDisrupt,
  type PdbLimit,
  type PodBlocker,
  podBlockers,
  podEvictionCost,
} from './pods.ts';
