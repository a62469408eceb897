import { createHash } from 'node:crypto';
import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { acknowledge } from './construct-kit.ts';

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
      // Only for the schedules of this group, in this account.
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          ArnLike: { 'aws:SourceArn': schedulesArn(this.groupName) },
        },
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

/** The ARNs of the schedules of the group `groupName`. */
function schedulesArn(groupName: string): string {
  return `arn:${Aws.PARTITION}:scheduler:${Aws.REGION}:${Aws.ACCOUNT_ID}:schedule/${groupName}/*`;
}

/**
 * The provisioner's `armWakeUps` bundle: create, change and delete the schedules of the stack's
 * group, list schedules (ListSchedules has no resource type; it is asked with the group), and pass
 * the wake-up role, only to Scheduler.
 */
export function grantWakeUps(
  role: iam.Role,
  wakeUps: { readonly groupName: string; readonly roleArn: string },
): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'AllowWakeUpSchedules',
      actions: ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'],
      resources: [schedulesArn(wakeUps.groupName)],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'AllowWakeUpList',
      actions: ['scheduler:ListSchedules'],
      resources: ['*'],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'AllowWakeUpRolePass',
      actions: ['iam:PassRole'],
      resources: [wakeUps.roleArn],
      conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    }),
  );
  acknowledge(
    role,
    [
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${wakeUps.groupName}/*]`,
      'AwsSolutions-IAM5[Resource::*]',
    ],
    "Which NodePools have schedules is known only at run time: the schedules are those of the stack's own group; ListSchedules has no resource type and reads only names.",
  );
}
