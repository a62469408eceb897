import { Stack } from 'aws-cdk-lib';
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
  /** ARN of the EKS cluster (eks:DescribeCluster). */
  readonly clusterArn: string;
  /** The node role, the role a launch may pass to EC2 (with `extraNodeRoles`). */
  readonly nodeRole: iam.IRole;
  /** Further node roles a launch may pass, by name or ARN. @default none */
  readonly extraNodeRoles?: readonly string[];
  /** ARN of the state table. */
  readonly stateTableArn: string;
  /** ARN of the cluster's summary object in the summary bucket (summary-bucket.ts). */
  readonly summaryObjectArn: string;
  readonly queues: Readonly<Record<QueueName, sqs.IQueue>>;
  /** SSM parameter names or prefixes ending in `*` that EC2NodeClasses may name. @default none */
  readonly amiParameterPaths?: readonly string[];
  /**
   * Give each role with the `kubernetes` bundle an EKS access entry to `controllerGroup`.
   * @default true
   */
  readonly accessEntries?: boolean;
  /** Kubernetes group of the access entries. */
  readonly controllerGroup: string;
  /** Karpenter's ISOLATED_VPC: no role may call the Pricing API. @default false */
  readonly isolatedVPC?: boolean;
}

/**
 * The permission bundles of infra/functions.ts (`Permission`): one managed policy per EC2/EKS
 * bundle, built whether or not a Lambda uses it yet, and `grant`, which gives a Lambda's role its
 * row's bundles. Built into `scope` (see construct-kit.ts): `<Name>Policy`, and
 * `<role id>AccessEntry` for roles that get `kubernetes`.
 */
export class ControllerPolicies {
  readonly policies: Readonly<Record<ControllerPolicyName, iam.ManagedPolicy>>;

  constructor(
    private readonly scope: Construct,
    private readonly props: ControllerPoliciesProps,
  ) {
    const { clusterName } = props;
    const policy = (id: string, description: string, statements: iam.PolicyStatement[]) =>
      new iam.ManagedPolicy(scope, id, {
        description: `Flotilla ${clusterName}: ${description}`,
        statements,
      });
    this.policies = {
      instanceRead: policy(
        'InstanceReadPolicy',
        'describe instances in this region',
        instanceReadStatements(),
      ),
      instanceStatusRead: policy(
        'InstanceStatusReadPolicy',
        'instance status checks in this region',
        instanceStatusReadStatements(),
      ),
      capacityReservationRead: policy(
        'CapacityReservationReadPolicy',
        'capacity reservations in this region',
        capacityReservationReadStatements(),
      ),
      nodeClassRead: policy(
        'NodeClassReadPolicy',
        'subnets, security groups, images and public AMI parameters',
        nodeClassReadStatements(props.amiParameterPaths),
      ),
      catalogRead: policy(
        'CatalogReadPolicy',
        'instance types, offerings, zones and prices',
        catalogReadStatements({ isolatedVPC: props.isolatedVPC === true }),
      ),
      nodeLaunch: policy(
        'NodeLaunchPolicy',
        'launch and tag nodes owned by this cluster',
        nodeLaunchStatements(clusterName, props.nodeRole, props.extraNodeRoles),
      ),
      launchTemplateCleanup: policy(
        'LaunchTemplateCleanupPolicy',
        'delete launch templates owned by this cluster',
        launchTemplateCleanupStatements(clusterName),
      ),
      nodeTermination: policy(
        'NodeTerminationPolicy',
        'terminate nodes owned by this cluster',
        nodeTerminationStatements(clusterName),
      ),
      instanceProfiles: policy(
        'InstanceProfilePolicy',
        'instance profiles for EC2NodeClasses with spec.role',
        instanceProfileStatements(clusterName),
      ),
      clusterAccess: policy('ClusterAccessPolicy', 'find the API server endpoint', [
        new iam.PolicyStatement({
          sid: 'AllowAPIServerEndpointDiscovery',
          actions: ['eks:DescribeCluster'],
          resources: [props.clusterArn],
        }),
      ]),
    };
    this.acknowledgeFindings();
  }

  /** Gives `role` the bundles of its row (each once). */
  grant(role: iam.Role, permissions: readonly Permission[]): void {
    const { policies, props } = this;
    for (const permission of new Set(permissions)) {
      switch (permission) {
        case 'describeInstances':
          role.addManagedPolicy(policies.instanceRead);
          break;
        case 'describeInstanceStatus':
          role.addManagedPolicy(policies.instanceStatusRead);
          break;
        case 'describeCapacityReservations':
          role.addManagedPolicy(policies.capacityReservationRead);
          break;
        case 'resolveNodeClasses':
          role.addManagedPolicy(policies.nodeClassRead);
          break;
        case 'describeCatalog':
          role.addManagedPolicy(policies.catalogRead);
          break;
        case 'launch':
          role.addManagedPolicy(policies.nodeLaunch);
          break;
        case 'cleanLaunchTemplates':
          role.addManagedPolicy(policies.launchTemplateCleanup);
          break;
        case 'manageInstanceProfiles':
          role.addManagedPolicy(policies.instanceProfiles);
          break;
        case 'terminate':
          role.addManagedPolicy(policies.nodeTermination);
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
              resources: [props.summaryObjectArn],
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
              resources: [props.queues.termination.queueArn],
            }),
          );
          break;
        case 'sendPodEvents':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowProvisionerFollowUps',
              actions: ['sqs:SendMessage'],
              resources: [props.queues.podEvents.queueArn],
            }),
          );
          break;
        case 'sendDisruptionPasses':
          role.addToPrincipalPolicy(
            new iam.PolicyStatement({
              sid: 'AllowDisruptionPasses',
              actions: ['sqs:SendMessage'],
              resources: [props.queues.disruptionPasses.queueArn],
            }),
          );
          break;
        case 'kubernetes':
          role.addManagedPolicy(policies.clusterAccess);
          if (props.accessEntries ?? true) {
            new eks.CfnAccessEntry(this.scope, `${role.node.id}AccessEntry`, {
              clusterName: props.clusterName,
              principalArn: role.roleArn,
              type: 'STANDARD',
              kubernetesGroups: [props.controllerGroup],
            });
          }
          break;
        default:
          assertNever(permission);
      }
    }
  }

  /** Why the wildcards cdk-nag finds in these policies are there. */
  private acknowledgeFindings(): void {
    const { policies } = this;
    for (const policy of [
      policies.instanceRead,
      policies.instanceStatusRead,
      policies.capacityReservationRead,
      policies.nodeClassRead,
      policies.catalogRead,
      policies.nodeLaunch,
      policies.launchTemplateCleanup,
    ]) {
      acknowledge(
        policy,
        ['AwsSolutions-IAM5[Resource::*]'],
        'EC2 Describe* and pricing:GetProducts support no resource-level permissions, so their resource must be *; the Describe calls are limited to this region by aws:RequestedRegion.',
      );
    }
    for (const path of (this.props.amiParameterPaths ?? []).filter((p) => p.endsWith('*'))) {
      acknowledge(
        policies.nodeClassRead,
        [
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/${path.replace(/^\//, '')}]`,
        ],
        'AMI id parameters under a path the stack was given (amiParameterPaths); which ones depends on the EC2NodeClasses at run time.',
      );
    }
    acknowledge(
      policies.nodeClassRead,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>::parameter/aws/service/*]'],
      'Only the public AWS parameters under /aws/service/ (EKS-optimized AMI aliases) can be read; which ones depends on the EC2NodeClass at run time.',
    );
    acknowledge(
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
    acknowledge(
      policies.nodeLaunch,
      ['fleet', 'instance', 'volume', 'network-interface', 'launch-template', 'spot-instances-request'].map(
        (type) =>
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:${type}/*]`,
      ),
      'Instances, volumes, fleets, network interfaces, spot requests and launch templates do not exist before the call that creates them, so their ARNs are wildcards; every statement on them requires this cluster’s ownership tags (aws:RequestTag at creation, aws:ResourceTag afterwards), and tagging afterwards is limited to the last-use tag of launch templates.',
    );
    acknowledge(
      policies.launchTemplateCleanup,
      [
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:launch-template/*]',
      ],
      'Which launch templates Flotilla created is known only at run time; DeleteLaunchTemplate is allowed only on templates tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
    acknowledge(
      policies.instanceProfiles,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile/*]'],
      'Instance profiles are created per EC2NodeClass at run time, so their ARNs are wildcards; creating, tagging, changing and deleting them requires this cluster’s ownership, region and ec2nodeclass tags. GetInstanceProfile is read-only.',
    );
    acknowledge(
      policies.nodeTermination,
      ['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*]'],
      'Which instances Flotilla launched is known only at run time; TerminateInstances is allowed only on instances tagged kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag.',
    );
  }
}
