import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { pascal } from './construct-kit.ts';
import type { ScheduleName } from './functions.ts';
import { type StackMode, schedulesOf } from './stack-mode.ts';

/**
 * Passes every 30 s: EventBridge fires the disruption schedule once a minute, and each tick asks
 * for the pass half a minute later (lambdas/disruption/run.ts), so a command starts within about
 * half a minute and a pass's time of it becoming valid.
 */
export const DEFAULT_DISRUPTION_INTERVAL = Duration.seconds(30);

export interface ClusterSchedulesProps {
  readonly clusterName: string;
  /** A shadow stack has no garbage-collection schedule (stack-mode.ts). @default 'live' */
  readonly mode?: StackMode;
  /** @default 1 minute */
  readonly pendingPodPollInterval?: Duration;
  /** @default 1 hour */
  readonly catalogRefreshInterval?: Duration;
  /** @default 2 minutes (Karpenter's) */
  readonly garbageCollectionInterval?: Duration;
  /** Under a minute, the schedule fires every minute and the ticks ask for the passes between. @default 30 seconds */
  readonly disruptionInterval?: Duration;
}

/**
 * One EventBridge schedule per `ScheduleName` a stack of its mode has (`<Name>Schedule`, built into
 * `scope`; see construct-kit.ts), without targets: each Lambda whose row names a schedule adds itself.
 */
export function addSchedules(
  scope: Construct,
  props: ClusterSchedulesProps,
): { readonly [K in ScheduleName]?: events.Rule } {
  const specs: Record<ScheduleName, { rate: Duration; what: string; schedule?: events.Schedule }> = {
    pendingPods: {
      rate: props.pendingPodPollInterval ?? Duration.minutes(1),
      what: 'poll for pending pods',
    },
    catalogRefresh: {
      rate: props.catalogRefreshInterval ?? Duration.hours(1),
      what: 'refresh the offering cache',
    },
    garbageCollection: {
      rate: props.garbageCollectionInterval ?? Duration.minutes(2),
      what: 'collect orphaned instances and NodeClaims and sweep terminating NodeClaims',
    },
    disruption: {
      rate: scheduleRate(props.disruptionInterval ?? DEFAULT_DISRUPTION_INTERVAL),
      what: 'evaluate disruption',
    },
    // Karpenter's instance status controller polls once a minute.
    instanceStatus: {
      rate: Duration.minutes(1),
      what: 'poll EC2 status checks and scheduled events',
    },
    // Twenty minutes after midnight UTC: the last lines of the day have reached CloudWatch Logs.
    shadowReport: {
      rate: Duration.days(1),
      what: 'compare the day before (00:20 UTC)',
      schedule: events.Schedule.cron({ minute: '20', hour: '0' }),
    },
  };
  const schedules: { [K in ScheduleName]?: events.Rule } = {};
  for (const name of schedulesOf(props.mode ?? 'live', Object.keys(specs) as ScheduleName[])) {
    const spec = specs[name];
    schedules[name] = new events.Rule(scope, `${pascal(name)}Schedule`, {
      description: `Flotilla ${props.clusterName}: ${spec.what} every ${spec.rate.toHumanString()}`,
      schedule: spec.schedule ?? events.Schedule.rate(spec.rate),
    });
  }
  return schedules;
}

/** The rate of a schedule for passes every `interval`: EventBridge's shortest is a minute. */
function scheduleRate(interval: Duration): Duration {
  return interval.toSeconds() < 60 ? Duration.minutes(1) : interval;
}
