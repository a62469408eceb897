import { Aws, Stack } from 'aws-cdk-lib';
import * as eks from 'aws-cdk-lib/aws-eks';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { acknowledge, assertNever } from './construct-kit.ts';
import type { Permission, QueueName } from './functions.ts';
import {
  capacityReservationReadStatements,
  catalogReadStatements,
  instanceProfileStatements,
  instanceReadStatements,
  instanceStatusReadStatements,
  launchTemplateCleanupStatements,
  nodeClassReadStatements,
  nodeLaunchStatements,
  nodeTerminationStatements,
} from './policies.ts';
import type { QueueSet } from './queues.ts';
import { isPermitted, type StackMode, withheldInShadow } from './stack-mode.ts';
import { grantWakeUps } from './wake-ups.ts';

/** The managed policies of the EC2/EKS permission bundles. */
export type ControllerPolicyName =
  | 'instanceRead'
  | 'instanceStatusRead'
  | 'capacityReservationRead'
  | 'nodeClassRead'
  | 'catalogRead'
  | 'nodeLaunch'
  | 'launchTemplateCleanup'
  | 'nodeTermination'
  | 'instanceProfiles'
  | 'clusterAccess';

export interface ControllerPoliciesProps {
  readonly clusterName: string;
  /** A shadow stack's roles get only the bundles stack-mode.ts keeps. @default 'live' */
  readonly mode?: StackMode;
  /** ARN of the EKS cluster (eks:DescribeCluster). */
  readonly clusterArn: string;
  /**
   * The node role, the role a launch may pass to EC2 (with `extraNodeRoles`); a live stack's only.
   * @default none (a shadow stack launches nothing)
   */
  readonly nodeRole?: iam.IRole;
  /** Further node roles a launch may pass, by name or ARN. @default none */
  readonly extraNodeRoles?: readonly string[];
  /** ARN of the state table. */
  readonly stateTableArn: string;
  /** ARNs of the cluster's summary objects in the summary bucket (summary-bucket.ts). */
  readonly summaryObjectArns: readonly string[];
  readonly queues: QueueSet<sqs.IQueue>;
  /** ARN of the stack's decision bus (each decision also as an event there). */
  readonly decisionBusArn: string;
  /** SSM parameter names or prefixes ending in `*` that EC2NodeClasses may name. @default none */
  readonly amiParameterPaths?: readonly string[];
  /**
   * Give each role with the `kubernetes` bundle an EKS access entry to `controllerGroup`.
   * @default true
   */
  readonly accessEntries?: boolean;
  /** Kubernetes group of the access entries. */
  readonly controllerGroup: string;
  /** The stack's wake-up schedule group and role (wake-ups.ts); a live stack's only. @default none */
  readonly wakeUps?: { readonly groupName: string; readonly roleArn: string };
  /** Karpenter's ISOLATED_VPC: no role may call the Pricing API. @default false */
  readonly isolatedVPC?: boolean;
}

/** A managed policy of the stack: the bundle it serves, its construct id, what it allows. */
interface PolicySpec {
  readonly bundle: Permission;
  readonly id: string;
  readonly description: string;
  readonly statements: () => iam.PolicyStatement[];
}

/**
 * The permission bundles of infra/functions.ts (`Permission`): one managed policy per EC2/EKS
 * bundle a stack of its mode may grant, built whether or not a Lambda uses it yet, and `grant`,
 * which gives a Lambda's role its row's bundles. Built into `scope` (see construct-kit.ts):
 * `<Name>Policy`, and `<role id>AccessEntry` for roles that get `kubernetes`.
 */
export class ControllerPolicies {
  /** The managed policies, by name; a shadow stack has only those of the bundles it keeps. */
  readonly policies: { readonly [K in ControllerPolicyName]?: iam.ManagedPolicy };
  private readonly mode: StackMode;

  constructor(
    private readonly scope: Construct,
    private readonly props: ControllerPoliciesProps,
  ) {
    const { clusterName } = props;
    this.mode = props.mode ?? 'live';
    const specs: Record<ControllerPolicyName, PolicySpec> = {
      instanceRead: {
        bundle: 'describeInstances',
        id: 'InstanceReadPolicy',
        description: 'describe instances in this region',
        statements: instanceReadStatements,
      },
      instanceStatusRead: {
        bundle: 'describeInstanceStatus',
        id: 'InstanceStatusReadPolicy',
        description: 'instance status checks in this region',
        statements: instanceStatusReadStatements,
      },
      capacityReservationRead: {
        bundle: 'describeCapacityReservations',
        id: 'CapacityReservationReadPolicy',
        description: 'capacity reservations in this region',
        statements: capacityReservationReadStatements,
      },
      nodeClassRead: {
        bundle: 'resolveNodeClasses',
        id: 'NodeClassReadPolicy',
        description: 'subnets, security groups, images and public AMI parameters',
        statements: () => nodeClassReadStatements(props.amiParameterPaths),
      },
      catalogRead: {
        bundle: 'describeCatalog',
        id: 'CatalogReadPolicy',
        description: 'instance types, offerings, zones and prices',
        statements: () => catalogReadStatements({ isolatedVPC: props.isolatedVPC === true }),
      },
      nodeLaunch: {
        bundle: 'launch',
        id: 'NodeLaunchPolicy',
        description: 'launch and tag nodes owned by this cluster',
        statements: () => {
          if (props.nodeRole === undefined) throw new Error('the launch bundle needs the node role');
          return nodeLaunchStatements(clusterName, props.nodeRole, props.extraNodeRoles);
        },
      },
      launchTemplateCleanup: {
        bundle: 'cleanLaunchTemplates',
        id: 'LaunchTemplateCleanupPolicy',
        description: 'delete launch templates owned by this cluster',
        statements: () => launchTemplateCleanupStatements(clusterName),
      },
      nodeTermination: {
        bundle: 'terminate',
        id: 'NodeTerminationPolicy',
        description: 'terminate nodes owned by this cluster',
        statements: () => nodeTerminationStatements(clusterName),
      },
      instanceProfiles: {
        bundle: 'manageInstanceProfiles',
        id: 'InstanceProfilePolicy',
        description: 'instance profiles for EC2NodeClasses with spec.role',
        statements: () => instanceProfileStatements(clusterName),
      },
      clusterAccess: {
        bundle: 'kubernetes',
        id: 'ClusterAccessPolicy',
        description: 'find the API server endpoint',
        statements: () => [
          new iam.PolicyStatement({
            sid: 'AllowAPIServerEndpointDiscovery',
            actions: ['eks:DescribeCluster'],
            resources: [props.clusterArn],
          }),
        ],
      },
    };
    const policies: { [K in ControllerPolicyName]?: iam.ManagedPolicy } = {};
    for (const [name, spec] of Object.entries(specs) as [ControllerPolicyName, PolicySpec][]) {
      if (!isPermitted(this.mode, spec.bundle)) continue;
      policies[name] = new iam.ManagedPolicy(scope, spec.id, {
        description: `Flotilla ${clusterName}: ${spec.description}`,
        statements: spec.statements(),
      });
    }
    this.policies = policies;
    this.acknowledgeFindings();
  }

  /** Gives `role` the bundles of its row (each once). */
  grant(role: iam.Role, permissions: readonly Permission[]): void {
    const { props } = this;
    const policy = (name: ControllerPolicyName) => {
      const built = this.policies[name];
      if (built === undefined) throw new Error(`the ${name} policy is not built in a ${this.mode} stack`);
      return built;
    };
    const queueArn = (name: QueueName) => {
      const queue = props.queues[name];
      if (queue === undefined) throw new Error(`the ${name} queue is not built in a ${this.mode} stack`);
      return queue.queueArn;
    };
    for (const permission of new Set(permissions)) {
      // Defence in depth: stack-mode.ts already takes withheld bundles off a shadow stack's rows.
      const withheld = this.mode === 'shadow' ? withheldInShadow(permission) : undefined;
      if (withheld !== undefined) {
        throw new Error(`${role.node.id}: a shadow Lambda never gets the ${permission} bundle: ${withheld}`);
      }
      switch (permission) {
        case 'describeInstances':
          role.addManagedPolicy(policy('instanceRead'));
          break;
        case 'describeInstanceStatus':
          role.addManagedPolicy(policy('instanceStatusRead'));
          break;
        case 'describeCapacityReservations':
          role.addManagedPolicy(policy('capacityReservationRead'));
          break;
        case 'resolveNodeClasses':
          role.addManagedPolicy(policy('nodeClassRead'));
          break;
        case 'describeCatalog':
          role.addManagedPolicy(policy('catalogRead'));
          break;
        case 'launch':
          role.addManagedPolicy(policy('nodeLaunch'));
          break;
        case 'cleanLaunchTemplates':
          role.addManagedPolicy(policy('launchTemplateCleanup'));
          break;
        case 'manageInstanceProfiles':
          role.addManagedPolicy(policy('instanceProfiles'));
          break;
        case 'terminate':
          role.addManagedPolicy(policy('nodeTermination'));
          break;
        case 'stateRead':
          // Only what the adapters call (CDK's grantReadData adds Scan, streams and more).
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowStateTableReads',
              actions: ['dynamodb:GetItem', 'dynamodb:Query'],
              resources: [props.stateTableArn],
            }),
          );
          break;
        case 'stateWrite':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowStateTableWrites',
              actions: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
              resources: [props.stateTableArn],
            }),
          );
          break;
        case 'readSummary':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowClusterSummaryRead',
              actions: ['s3:GetObject'],
              resources: [...props.summaryObjectArns],
              // The bucket's name is predictable: never read a bucket of that name in another account.
              conditions: { StringEquals: { 'aws:ResourceAccount': Stack.of(this.scope).account } },
            }),
          );
          break;
        case 'sendTermination':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowTerminationRequests',
              actions: ['sqs:SendMessage'],
              resources: [queueArn('termination')],
            }),
          );
          break;
        case 'sendPodEvents':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowProvisionerFollowUps',
              actions: ['sqs:SendMessage'],
              resources: [queueArn('podEvents')],
            }),
          );
          break;
        case 'sendDisruptionPasses':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowDisruptionPasses',
              actions: ['sqs:SendMessage'],
              resources: [queueArn('disruptionPasses')],
            }),
          );
          break;
        case 'kubernetes':
          role.addManagedPolicy(policy('clusterAccess'));
          if (props.accessEntries ?? true) {
            new eks.CfnAccessEntry(this.scope, `${role.node.id}AccessEntry`, {
              clusterName: props.clusterName,
              principalArn: role.roleArn,
              type: 'STANDARD',
              kubernetesGroups: [props.controllerGroup],
            });
          }
          break;
        case 'publishDecisions':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowDecisionEvents',
              actions: ['events:PutEvents'],
              resources: [props.decisionBusArn],
            }),
          );
          break;
        case 'readAlarms':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowRolloutAlarmsRead',
              actions: ['cloudwatch:DescribeAlarms'],
              resources: [`arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*`],
            }),
          );
          acknowledge(
            role,
            [
              'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:*]',
            ],
            'Which alarms a NodePool names (flotilla.io/rollout-alarms) is known only at run time; DescribeAlarms only reads their state, in this account and region.',
          );
          break;
        case 'armWakeUps': {
          if (props.wakeUps === undefined)
            throw new Error(`${role.node.id}: armWakeUps needs the stack's wake-ups`);
          grantWakeUps(role, props.wakeUps);
          break;
        }
        case 'readOwnStack':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowOwnStackRead',
              actions: ['cloudformation:DescribeStacks'],
              resources: [Aws.STACK_ID],
            }),
          );
          break;
        case 'readShadowLines':
          throw new Error(
            `${role.node.id}: readShadowLines is granted with the stack's log groups (ClusterFunctions)`,
          );
        default:
          assertNever(permission);
      }
    }
  }

  /** Why the wildcards cdk-nag finds in these policies are there. */
  private acknowledgeFindings(): void {
    const { policies } = this;
    // A shadow stack builds only the policies of the bundles it keeps.
    const ack = (policy: iam.ManagedPolicy | undefined, ids: readonly string[], reason: string) => {
      if (policy !== undefined) acknowledge(policy, ids, reason);
    };
    for (const policy of [
      policies.instanceRead,
      policies.instanceStatusRead,
      policies.capacityReservationRead,
      policies.nodeClassRead,
      policies.catalogRead,
      policies.nodeLaunch,
      policies.launchTemplateCleanup,
    ]) {
      ack(
        policy,
        ['AwsSolutions-IAM5[Resource::*]'],
        'EC2 Describe* and pricing:GetProducts support no resource-level permissions, so their resource must be *; the Describe calls are limited to this region by aws:RequestedRegion.',
      );
    }
    for (const path of (this.props.amiParameterPaths ?? []).filter((p) => p.endsWith('*'))) {
      ack(
        policies.nodeClassRead,
        [
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/${path.replace(/^\//, '')}]`,
        ],
        'AMI id parameters under a path the stack was given (amiParameterPaths); which ones depends on the EC2NodeClasses at run time.',
      );
    }
    ack(
      policies.nodeClassRead,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/aws/service/*]'],
      'Only the public AWS parameters under /aws/service/ (EKS-optimized AMI aliases) can be read; which ones depends on the EC2NodeClass at run time.',
    );
    ack(
      policies.nodeLaunch,
      [
        ['', 'image'],
        ['', 'snapshot'],
        ['*', 'security-group'],
        ['*', 'subnet'],
        ['*', 'capacity-reservation'],
        ['*', 'placement-group'],
      ].map(
        ([account, type]) =>
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:${account}:${type}/*]`,
      ),
      'The images, snapshots, subnets, security groups, capacity reservations and placement groups a launch uses are chosen by the EC2NodeClass at run time (subnets of a shared VPC belong to another account); the launch itself is only allowed with this cluster’s ownership tags on what it creates.',
    );
    ack(
      policies.nodeLaunch,
      ['fleet', 'instance', 'volume', 'network-interface', 'launch-template', 'spot-instances-request'].map(
        (type) =>
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:${type}/*]`,
      ),
      'Instances, volumes, fleets, network interfaces, spot requests and launch templates do not exist before the call that creates them, so their ARNs are wildcards; every statement on them requires this cluster’s ownership tags (aws:RequestTag at creation, aws:ResourceTag afterwards), and tagging afterwards is limited to the last-use tag of launch templates and the Name tag of instances.',
    );
    ack(
      policies.launchTemplateCleanup,
      [
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:launch-template/*]',
      ],
      'Which launch templates Flotilla created is known only at run time; DeleteLaunchTemplate is allowed only on templates tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
    ack(
      policies.instanceProfiles,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile/*]'],
      'Instance profiles are created per EC2NodeClass at run time, so their ARNs are wildcards; creating, tagging, changing and deleting them requires this cluster’s ownership, region and ec2nodeclass tags. GetInstanceProfile is read-only.',
    );
    ack(
      policies.nodeTermination,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*]'],
      'Which instances Flotilla launched is known only at run time; TerminateInstances is allowed only on instances tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
  }
}
