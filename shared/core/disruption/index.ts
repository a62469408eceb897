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
} from './budgets.ts';
export { type CronSchedule, cronMatches, cronWindowOpen, parseCron } from './cron.ts';
export { type ExpirationVerdict, expiration } from './expiration.ts';
