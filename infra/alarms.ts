import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface ClusterAlarmsProps {
  readonly clusterName: string;
  /**
   * Topic the alarms notify on alarm and on recovery.
   * @default alarms have no actions
   */
  readonly alarmTopic?: sns.ITopic;
}

/**
 * The alarms of one cluster (messages in a dead-letter queue, Lambda errors), created in `scope`
 * and collected in `alarms`, each notifying the alarm topic if there is one.
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
    return this.add(
      queue
        .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' })
        .createAlarm(this.scope, id, {
          alarmDescription: `Flotilla ${this.props.clusterName}: messages in a dead-letter queue; inspect and redrive them`,
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
  }

  /** Alarms when the Lambda `name` fails. */
  onErrors(fn: lambda.IFunction, id: string, name: string): cloudwatch.Alarm {
    return this.add(
      fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }).createAlarm(this.scope, id, {
        alarmDescription: `Flotilla ${this.props.clusterName}: the ${name} Lambda failed; see its log group`,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
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
