import type * as events from 'aws-cdk-lib/aws-events';
import {
  type ActionableInterruptionKind,
  interruptionRulePatterns,
} from '../shared/messages/interruption-kinds.ts';

/** One EventBridge rule feeding the interruption queue: the stack's `<id>Rule`. */
export interface InterruptionRule {
  readonly id: string;
  /** The kinds its events parse to (rows of shared/messages/interruption-kinds.ts). */
  readonly kinds: readonly ActionableInterruptionKind[];
  readonly pattern: events.EventPattern;
}

/**
 * The EventBridge rules that feed the interruption queue (Karpenter's, §6), derived from the
 * interruption kinds table: one per `rule` of its rows.
 */
export const INTERRUPTION_RULES: readonly InterruptionRule[] = interruptionRulePatterns().map((rule) => ({
  id: rule.rule,
  kinds: rule.kinds,
  pattern: {
    source: [rule.source],
    detailType: [rule.detailType],
    ...(rule.detail === undefined ? {} : { detail: rule.detail }),
  },
}));
