import { createHash } from 'node:crypto';
import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

// What the provisioner's NodePool wake-ups need (shared/adapters/aws/wake-ups.ts): an EventBridge
// Scheduler group of the stack's own, where the provisioner keeps one one-time schedule per
// NodePool whose `flotilla.io/schedules` change what they hold next, and the role Scheduler sends
// their message to the pod-event queue as. Deleting the stack deletes the group and its schedules.

/** Scheduler's longest group name. */
const MAX_GROUP_NAME = 64;

/** The stack's schedule group: `flotilla-<cluster>`, or a prefix of it and a hash when that is too long. */
export function wakeUpGroupNameFor(clusterName: string): string {
  const name = `flotilla-${clusterName}`;
  if (name.length <= MAX_GROUP_NAME) return name;
  const hash = createHash('sha256').update(clusterName).digest('hex').slice(0, 12);
  return `${name.slice(0, MAX_GROUP_NAME - hash.length - 1)}-${hash}`;
}

export interface WakeUpProps {
  readonly clusterName: string;
  /** The pod-event queue the wake-ups go to. */
  readonly queue: sqs.IQueue;
}

/** Built into `scope`: `WakeUpGroup` and `WakeUpRole`. */
export class WakeUpTargets {
  readonly groupName: string;
  readonly groupArn: string;
  readonly role: iam.Role;

  constructor(scope: Construct, props: WakeUpProps) {
    this.groupName = wakeUpGroupNameFor(props.clusterName);
    const group = new scheduler.CfnScheduleGroup(scope, 'WakeUpGroup', { name: this.groupName });
    this.groupArn = group.attrArn;
    this.role = new iam.Role(scope, 'WakeUpRole', {
      description: `Flotilla ${props.clusterName}: EventBridge Scheduler sends NodePool wake-ups to the pod-event queue`,
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'AllowWakeUps',
        actions: ['sqs:SendMessage'],
        resources: [props.queue.queueArn],
      }),
    );
  }
}
