import { CustomResource, Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

// The clean-up Lambda's two triggers (functions.ts `stackDeleted`, `clusterDeleted`): a custom
// resource of the stack that invokes it when it is deleted, and an EventBridge rule on EKS's
// DeleteCluster of this cluster. EventBridge gets that call only where a CloudTrail trail records
// the account's management events (the README says so).

/**
 * The custom resource whose deletion with the stack (`cdk destroy`) runs the clean-up. It is always
 * there: `cleanUpOnDestroy: false` sets its `onDelete` to `keep` instead of removing it, as
 * removing it in an update would delete it, and the Lambda tells a stack's deletion from an
 * update's or a rollback's by the stack's status.
 */
export function onStackDeleted(
  scope: Construct,
  id: string,
  fn: lambda.IFunction,
  clusterName: string,
  cleanUp: boolean,
): CustomResource {
  return new CustomResource(scope, `${id}OnStackDelete`, {
    serviceToken: fn.functionArn,
    resourceType: 'Custom::FlotillaClusterCleanup',
    properties: { cluster: clusterName, onDelete: cleanUp ? 'cleanUp' : 'keep' },
  });
}

/** The rule that runs the clean-up when EKS deletes the cluster (a call that succeeded). */
export function onClusterDeleted(
  scope: Construct,
  id: string,
  fn: lambda.IFunction,
  clusterName: string,
  deadLetterQueue: sqs.IQueue,
): events.Rule {
  return new events.Rule(scope, `${id}OnClusterDelete`, {
    description: `Flotilla: clean up when EKS deletes cluster ${clusterName}`,
    eventPattern: {
      source: ['aws.eks'],
      detailType: ['AWS API Call via CloudTrail'],
      detail: {
        eventSource: ['eks.amazonaws.com'],
        eventName: ['DeleteCluster'],
        requestParameters: { name: [clusterName] },
      },
    },
    targets: [
      new targets.LambdaFunction(fn, { deadLetterQueue, retryAttempts: 2, maxEventAge: Duration.hours(1) }),
    ],
  });
}
