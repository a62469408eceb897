import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { pascal } from './construct-kit.ts';
import type { ScheduleName } from './functions.ts';

export interface ClusterSchedulesProps {
  readonly clusterName: string;
  /** @default 1 minute */
  readonly pendingPodPollInterval?: Duration;
  /** @default 1 hour */
  readonly catalogRefreshInterval?: Duration;
  /** @default 2 minutes (Karpenter's) */
  readonly garbageCollectionInterval?: Duration;
  /** @default 1 minute */
  readonly disruptionInterval?: Duration;
}

/**
 * One EventBridge schedule per `ScheduleName` (`<Name>Schedule`, built into `scope`; see
 * construct-kit.ts), without targets: each Lambda whose row names a schedule adds itself.
 */
export function addSchedules(
  scope: Construct,
  props: ClusterSchedulesProps,
): Record<ScheduleName, events.Rule> {
  const specs: Record<ScheduleName, { rate: Duration; what: string }> = {
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
    disruption: { rate: props.disruptionInterval ?? Duration.minutes(1), what: 'evaluate disruption' },
  };
  const schedules = {} as Record<ScheduleName, events.Rule>;
  for (const [name, spec] of Object.entries(specs) as [ScheduleName, { rate: Duration; what: string }][]) {
    schedules[name] = new events.Rule(scope, `${pascal(name)}Schedule`, {
      description: `Flotilla ${props.clusterName}: ${spec.what} every ${spec.rate.toHumanString()}`,
      schedule: events.Schedule.rate(spec.rate),
    });
  }
  return schedules;
}
