import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { clusterMetric } from './flotilla-metrics.ts';

export interface ClusterAlarmsProps {
  readonly clusterName: string;
  /**
   * Topic the alarms notify on alarm and on recovery.
   * @default alarms have no actions
   */
  readonly alarmTopic?: sns.ITopic;
}

/** How long a pod may wait for capacity before the pending-pod alarm pages. */
export const DEFAULT_PENDING_POD_ALARM_AFTER = Duration.minutes(10);

const FIVE_MINUTES = Duration.minutes(5);

/**
 * The alarms of one cluster an operator pages on (messages in a dead-letter queue, Lambda errors
 * and throttles, pods pending too long, launches failing, the runaway guard pausing a NodePool),
 * created in `scope` and collected in `alarms`, each notifying the alarm topic if there is one.
 */
export class ClusterAlarms {
  /** Every alarm made so far, in the order made. */
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(
    private readonly scope: Construct,
    private readonly props: ClusterAlarmsProps,
  ) {}

  /** Alarms when a dead-letter (or failure) queue holds a message. */
  onQueueDepth(queue: sqs.IQueue, id: string): cloudwatch.Alarm {
    return this.make(
      queue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
      id,
      'messages in a dead-letter queue; inspect and redrive them',
    );
  }

  /** Alarms when the Lambda `name` fails. */
  onErrors(fn: lambda.IFunction, id: string, name: string): cloudwatch.Alarm {
    return this.make(
      fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
      id,
      `the ${name} Lambda failed; see its log group`,
    );
  }

  /**
   * Alarms when the Lambda `name` is throttled: for a Lambda without reserved concurrency, the
   * account's concurrency ran out.
   */
  onThrottles(fn: lambda.IFunction, id: string, name: string): cloudwatch.Alarm {
    return this.make(
      fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
      id,
      `the ${name} Lambda was throttled; the account's Lambda concurrency is used up, see ConcurrentExecutions`,
    );
  }

  /**
   * Alarms when a provisioning run in the last 5 minutes saw a pod that could be provisioned for
   * waiting longer than `after` (karpenter_pods_unbound_time_seconds, Maximum).
   */
  onPendingPods(after: Duration): cloudwatch.Alarm {
    return this.make(
      clusterMetric(this.props.clusterName, 'karpenter_pods_unbound_time_seconds', 'Maximum', FIVE_MINUTES),
      'PendingPodsAlarm',
      `a pod has waited for a node for more than ${after.toHumanString()}; run \`flotilla explain pod <namespace>/<name>\` and see the dashboard's pending pods and launch failures`,
      {
        threshold: after.toSeconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      },
    );
  }

  /**
   * Alarms when launches failed in each of the last three 5-minute periods
   * (karpenter_cloudprovider_instance_launch_failures_total, Sum): one insufficient-capacity failure is
   * routine, failures that go on are not.
   */
  onLaunchFailures(): cloudwatch.Alarm {
    return this.make(
      clusterMetric(
        this.props.clusterName,
        'karpenter_cloudprovider_instance_launch_failures_total',
        'Sum',
        FIVE_MINUTES,
      ),
      'LaunchFailuresAlarm',
      "node launches have failed for 15 minutes; see the dashboard's launch failures by reason and the provisioner's log",
      { evaluationPeriods: 3, datapointsToAlarm: 3 },
    );
  }

  /** Alarms when the runaway guard paused a NodePool's launches (nodepools_launch_backoff_started_total, Sum). */
  onLaunchBackoff(): cloudwatch.Alarm {
    return this.make(
      clusterMetric(this.props.clusterName, 'nodepools_launch_backoff_started_total', 'Sum', FIVE_MINUTES),
      'LaunchBackoffAlarm',
      "the runaway guard paused a NodePool's launches (nodes kept failing to join); see the NodePool's Events and the dashboard",
    );
  }

  /** An alarm on `metric` reaching 1 in one period (unless `options` say otherwise); no data is not a breach. */
  private make(
    metric: cloudwatch.Metric,
    id: string,
    what: string,
    options: Partial<cloudwatch.CreateAlarmOptions> = {},
  ): cloudwatch.Alarm {
    return this.add(
      metric.createAlarm(this.scope, id, {
        alarmDescription: `Flotilla ${this.props.clusterName}: ${what}`,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
      }),
    );
  }

  private add(alarm: cloudwatch.Alarm): cloudwatch.Alarm {
    this.alarms.push(alarm);
    if (this.props.alarmTopic !== undefined) {
      const action = new cloudwatchActions.SnsAction(this.props.alarmTopic);
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
    return alarm;
  }
}
