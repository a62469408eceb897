import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
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

export interface InterruptionRulesProps {
  readonly clusterName: string;
  /** The interruption queue, every rule's target. */
  readonly queue: sqs.IQueue;
  /** Where EventBridge puts events it could not deliver after its retries. */
  readonly deadLetterQueue: sqs.IQueue;
}

/**
 * One EventBridge rule per entry of `INTERRUPTION_RULES` (`<id>Rule`, built into `scope`; see
 * construct-kit.ts), each delivering to the interruption queue with retries and a dead-letter
 * queue. Returns the rules in table order.
 */
export function addInterruptionRules(scope: Construct, props: InterruptionRulesProps): events.Rule[] {
  return INTERRUPTION_RULES.map(
    ({ id, pattern }) =>
      new events.Rule(scope, `${id}Rule`, {
        description: `Flotilla ${props.clusterName}: ${pattern.detailType?.join(', ')} → interruption queue`,
        eventPattern: pattern,
        targets: [
          new targets.SqsQueue(props.queue, {
            deadLetterQueue: props.deadLetterQueue,
            retryAttempts: 8,
            maxEventAge: Duration.minutes(5),
          }),
        ],
      }),
  );
}
