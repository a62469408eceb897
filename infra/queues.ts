import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ClusterAlarms } from './alarms.ts';
import { acknowledge, pascal } from './construct-kit.ts';
import type { QueueName } from './functions.ts';
import { NAME_PREFIX, queuesOf, type StackMode } from './stack-mode.ts';

/** Settings of one work queue. The consumer's timeout must fit in the visibility timeout. */
export interface QueueSpec {
  readonly description: string;
  readonly visibilityTimeout: Duration;
  readonly retentionPeriod: Duration;
  readonly maxReceiveCount: number;
}

/** The work queues of a cluster, one row each. */
export const QUEUES: Readonly<Record<QueueName, QueueSpec>> = {
  podEvents: {
    description: 'pod events from the in-cluster shim',
    visibilityTimeout: Duration.minutes(2),
    // The pending-pod poll covers anything older; stale events only cost a no-op decision.
    retentionPeriod: Duration.hours(1),
    maxReceiveCount: 5,
  },
  interruption: {
    description: 'EC2 interruption and AWS Health events',
    visibilityTimeout: Duration.minutes(1),
    // Karpenter keeps 5 minutes (a spot warning is 2 minutes ahead); 15 leaves room for three
    // receives before the dead-letter queue instead of expiring failures silently.
    retentionPeriod: Duration.minutes(15),
    maxReceiveCount: 3,
  },
  termination: {
    description: 'delayed termination steps (cordon, evict, wait, terminate)',
    visibilityTimeout: Duration.minutes(5),
    retentionPeriod: Duration.days(4),
    maxReceiveCount: 5,
  },
  disruptionPasses: {
    description: 'disruption passes between the disruption schedule ticks',
    // The disruption Lambda's 2-minute timeout, and a minute more.
    visibilityTimeout: Duration.minutes(3),
    // A pass is worth running only before the next tick's own.
    retentionPeriod: Duration.minutes(5),
    // A pass that failed is not tried again (the next tick runs one); its message stays in the
    // dead-letter queue, whose alarm says passes are failing.
    maxReceiveCount: 1,
  },
};

/**
 * The pod-event queue's name, fixed so the shim's manifest can name its URL:
 * `flotilla-<cluster>-pod-events`, `flotilla-shadow-<cluster>-pod-events` in a shadow stack.
 */
export function podEventQueueName(clusterName: string, mode: StackMode = 'live'): string {
  return `${NAME_PREFIX[mode].kebab}-${clusterName}-pod-events`.slice(0, 80);
}

/** Queues by work queue: the pod-event queue in every stack, the others in a live stack only. */
export type QueueSet<Q> = { readonly podEvents: Q } & { readonly [K in QueueName]?: Q };

/**
 * A dead-letter queue (SSE, TLS only, 14 days), with cdk-nag told why it has no dead-letter queue
 * of its own. `what` says what ends up in it.
 */
export function makeDeadLetterQueue(scope: Construct, id: string, what: string): sqs.Queue {
  const queue = new sqs.Queue(scope, id, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  acknowledge(
    queue,
    ['AwsSolutions-SQS3'],
    `A dead-letter queue (${what}) has no dead-letter queue of its own.`,
  );
  return queue;
}

export interface ClusterQueuesProps {
  readonly clusterName: string;
  /** A shadow stack has the pod-event queue only (stack-mode.ts). @default 'live' */
  readonly mode?: StackMode;
  /** Where the alarms on the dead-letter queues go. */
  readonly alarms: ClusterAlarms;
}

/**
 * The work queues of `QUEUES` a stack of its mode has (SSE, TLS only), each with its dead-letter
 * queue, the dead-letter queue of EventBridge deliveries, and an alarm on every dead-letter queue.
 * Built into `scope` (see construct-kit.ts): `<Name>Queue`, `<Name>DeadLetterQueue`,
 * `EventsDeadLetterQueue` and `<Name>DeadLetterAlarm`, `EventsDeadLetterAlarm`.
 */
export class ClusterQueues {
  readonly queues: QueueSet<sqs.Queue>;
  readonly deadLetterQueues: QueueSet<sqs.Queue>;
  /** Where EventBridge puts events it could not deliver to a target. */
  readonly eventsDeadLetterQueue: sqs.Queue;

  constructor(scope: Construct, props: ClusterQueuesProps) {
    const mode = props.mode ?? 'live';
    const queues: { [K in QueueName]?: sqs.Queue } = {};
    const deadLetterQueues: { [K in QueueName]?: sqs.Queue } = {};
    for (const name of queuesOf(mode, Object.keys(QUEUES) as QueueName[])) {
      const spec = QUEUES[name];
      const id = pascal(name);
      const dlq = makeDeadLetterQueue(
        scope,
        `${id}DeadLetterQueue`,
        `${spec.description} that failed ${spec.maxReceiveCount} times`,
      );
      deadLetterQueues[name] = dlq;
      queues[name] = new sqs.Queue(scope, `${id}Queue`, {
        // The shim's Deployment names the pod-event queue, so its name must be known at synth time.
        ...(name === 'podEvents' ? { queueName: podEventQueueName(props.clusterName, mode) } : {}),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: spec.visibilityTimeout,
        retentionPeriod: spec.retentionPeriod,
        deadLetterQueue: { queue: dlq, maxReceiveCount: spec.maxReceiveCount },
      });
    }
    if (queues.podEvents === undefined || deadLetterQueues.podEvents === undefined) {
      throw new Error('every stack has the pod-event queue: the shim sends to it');
    }
    this.queues = { ...queues, podEvents: queues.podEvents };
    this.deadLetterQueues = { ...deadLetterQueues, podEvents: deadLetterQueues.podEvents };
    this.eventsDeadLetterQueue = makeDeadLetterQueue(
      scope,
      'EventsDeadLetterQueue',
      'events EventBridge could not deliver to a queue or Lambda',
    );

    for (const [name, dlq] of Object.entries(deadLetterQueues)) {
      props.alarms.onQueueDepth(dlq, `${pascal(name)}DeadLetterAlarm`);
    }
    props.alarms.onQueueDepth(this.eventsDeadLetterQueue, 'EventsDeadLetterAlarm');
  }
}
