import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Tag } from '../shared/apis/aws-tags.ts';

// The EC2 statements of Flotilla's Lambdas: Karpenter's controller policy (same Sids), scoped by
// the tags Flotilla puts on everything it launches (shared/adapters/aws/launch.ts `launchTags`).

/** An EC2 read in this region only (Describe* take no resource-level permissions). */
function regionalReads(sid: string, actions: readonly string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid,
    actions: [...actions],
    resources: ['*'],
    conditions: { StringEquals: { 'aws:RequestedRegion': Aws.REGION } },
  });
}

/** Instance look-ups (cloud.get and list, the launch's idempotency look-up by tag). */
export function instanceReadStatements(): iam.PolicyStatement[] {
  return [regionalReads('AllowInstanceReadActions', ['ec2:DescribeInstances'])];
}

/**
 * Capacity reservations: what the EC2NodeClass's terms select (its resolution), and what each can
 * still take (the `reserved` offerings of provisioning and disruption). Read-only, regional.
 */
export function capacityReservationReadStatements(): iam.PolicyStatement[] {
  return [regionalReads('AllowCapacityReservationReadActions', ['ec2:DescribeCapacityReservations'])];
}

/** EC2's status checks of instances (node repair's impaired instances, the instance status poll); no resource-level permissions. */
export function instanceStatusReadStatements(): iam.PolicyStatement[] {
  return [regionalReads('AllowInstanceStatusReadActions', ['ec2:DescribeInstanceStatus'])];
}

/**
 * What resolving an EC2NodeClass reads: subnets, security groups, placement groups, images, AWS's public AMI
 * parameters, and the account's own parameters under `amiParameterPaths` (for `ssmParameter`
 * AMI selector terms; each path is a parameter name or a prefix ending in `*`).
 */
export function nodeClassReadStatements(amiParameterPaths: readonly string[] = []): iam.PolicyStatement[] {
  const own =
    amiParameterPaths.length === 0
      ? []
      : [
          new iam.PolicyStatement({
            sid: 'AllowAmiParameterReadActions',
            actions: ['ssm:GetParameter'],
            resources: amiParameterPaths.map(
              (p) =>
                `arn:${Aws.PARTITION}:ssm:${Aws.REGION}:${Aws.ACCOUNT_ID}:parameter/${p.replace(/^\//, '')}`,
            ),
          }),
        ];
  return [
    ...own,
    regionalReads('AllowNodeClassReadActions', [
      'ec2:DescribeImages',
      'ec2:DescribePlacementGroups',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
    ]),
    new iam.PolicyStatement({
      sid: 'AllowSSMReadActions',
      actions: ['ssm:GetParameter'],
      resources: [`arn:${Aws.PARTITION}:ssm:${Aws.REGION}::parameter/aws/service/*`],
    }),
  ];
}

/**
 * What the catalog refresh reads: instance types, their offerings, zones, spot and on-demand prices;
 * in an isolated VPC (Karpenter's ISOLATED_VPC) not the Pricing API, which it never calls there.
 */
export function catalogReadStatements(
  options: { readonly isolatedVPC?: boolean } = {},
): iam.PolicyStatement[] {
  return [
    regionalReads('AllowCatalogReadActions', [
      'ec2:DescribeAvailabilityZones',
      'ec2:DescribeInstanceTypeOfferings',
      'ec2:DescribeInstanceTypes',
      'ec2:DescribeSpotPriceHistory',
    ]),
    ...(options.isolatedVPC === true
      ? []
      : [
          new iam.PolicyStatement({
            sid: 'AllowPricingReadActions',
            actions: ['pricing:GetProducts'],
            resources: ['*'],
          }),
        ]),
  ];
}

const ec2Arn = (type: string, account: string = Aws.ACCOUNT_ID) =>
  `arn:${Aws.PARTITION}:ec2:${Aws.REGION}:${account}:${type}/*`;

/** The tags Flotilla puts on everything it launches (shared/adapters/aws/launch.ts `launchTags`). */
function ownedResourceTag(clusterName: string) {
  return {
    StringEquals: { [`aws:ResourceTag/${Tag.cluster(clusterName)}`]: 'owned' },
    StringLike: { [`aws:ResourceTag/${Tag.nodePool}`]: '*' },
  };
}

/** The ARN of a role named by name or ARN (FlotillaClusterProps.extraNodeRoles). */
export function nodeRoleArn(role: string): string {
  return role.startsWith('arn:') ? role : `arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:role/${role}`;
}

export function nodeLaunchStatements(
  clusterName: string,
  nodeRole: iam.IRole,
  extraNodeRoles: readonly string[] = [],
): iam.PolicyStatement[] {
  const created = [
    'fleet',
    'instance',
    'volume',
    'network-interface',
    'launch-template',
    'spot-instances-request',
  ].map((type) => ec2Arn(type));
  const requestTags = {
    StringEquals: {
      [`aws:RequestTag/${Tag.cluster(clusterName)}`]: 'owned',
      [`aws:RequestTag/${Tag.clusterName}`]: clusterName,
    },
    StringLike: { [`aws:RequestTag/${Tag.nodePool}`]: '*' },
  };
  return [
    // The launcher finds or creates the launch template and reads the zones of the chosen subnets.
    regionalReads('AllowLaunchReadActions', ['ec2:DescribeLaunchTemplates', 'ec2:DescribeSubnets']),
    new iam.PolicyStatement({
      sid: 'AllowScopedEC2InstanceAccessActions',
      actions: ['ec2:RunInstances', 'ec2:CreateFleet'],
      resources: [
        `arn:${Aws.PARTITION}:ec2:${Aws.REGION}::image/*`,
        `arn:${Aws.PARTITION}:ec2:${Aws.REGION}::snapshot/*`,
        // Any account: subnets of a shared VPC and shared capacity reservations belong to another.
        ec2Arn('security-group', '*'),
        ec2Arn('subnet', '*'),
        ec2Arn('capacity-reservation', '*'),
        ec2Arn('placement-group', '*'),
      ],
    }),
    new iam.PolicyStatement({
      sid: 'AllowScopedEC2LaunchTemplateAccessActions',
      actions: ['ec2:RunInstances', 'ec2:CreateFleet'],
      resources: [ec2Arn('launch-template')],
      conditions: ownedResourceTag(clusterName),
    }),
    new iam.PolicyStatement({
      sid: 'AllowScopedEC2InstanceActionsWithTags',
      actions: ['ec2:RunInstances', 'ec2:CreateFleet', 'ec2:CreateLaunchTemplate'],
      resources: created,
      conditions: requestTags,
    }),
    new iam.PolicyStatement({
      sid: 'AllowScopedResourceCreationTagging',
      actions: ['ec2:CreateTags'],
      resources: created,
      conditions: {
        StringEquals: {
          ...requestTags.StringEquals,
          'ec2:CreateAction': ['RunInstances', 'CreateFleet', 'CreateLaunchTemplate'],
        },
        StringLike: requestTags.StringLike,
      },
    }),
    new iam.PolicyStatement({
      // lifecycle/instance-names.ts tags a registered node's instance with the node's name.
      sid: 'AllowScopedInstanceNameTagging',
      actions: ['ec2:CreateTags'],
      resources: [ec2Arn('instance')],
      conditions: {
        ...ownedResourceTag(clusterName),
        'ForAllValues:StringEquals': { 'aws:TagKeys': [Tag.name] },
        Null: { 'aws:TagKeys': 'false' },
      },
    }),
    new iam.PolicyStatement({
      // launch-templates.ts marks a reused template with its last use, for its clean-up.
      sid: 'AllowScopedLaunchTemplateTagging',
      actions: ['ec2:CreateTags'],
      resources: [ec2Arn('launch-template')],
      conditions: {
        ...ownedResourceTag(clusterName),
        'ForAllValues:StringEquals': { 'aws:TagKeys': [Tag.lastUsed] },
        Null: { 'aws:TagKeys': 'false' },
      },
    }),
    new iam.PolicyStatement({
      sid: 'AllowPassingInstanceRole',
      actions: ['iam:PassRole'],
      resources: [nodeRole.roleArn, ...extraNodeRoles.map(nodeRoleArn)],
      conditions: { StringEquals: { 'iam:PassedToService': ['ec2.amazonaws.com', 'ec2.amazonaws.com.cn'] } },
    }),
  ];
}

export function launchTemplateCleanupStatements(clusterName: string): iam.PolicyStatement[] {
  return [
    // The clean-up lists the cluster's templates and reads their last-use tags.
    regionalReads('AllowLaunchTemplateReadActions', ['ec2:DescribeLaunchTemplates', 'ec2:DescribeTags']),
    new iam.PolicyStatement({
      sid: 'AllowScopedLaunchTemplateDeletion',
      actions: ['ec2:DeleteLaunchTemplate'],
      resources: [ec2Arn('launch-template')],
      conditions: ownedResourceTag(clusterName),
    }),
  ];
}

export function nodeTerminationStatements(clusterName: string): iam.PolicyStatement[] {
  return [
    new iam.PolicyStatement({
      sid: 'AllowScopedInstanceTermination',
      actions: ['ec2:TerminateInstances'],
      resources: [ec2Arn('instance')],
      conditions: ownedResourceTag(clusterName),
    }),
  ];
}

/**
 * Instance profiles Flotilla manages for EC2NodeClasses with `spec.role`
 * (shared/adapters/aws/instance-profile.ts), as Karpenter's IAM integration policy: created only
 * with this cluster's tags, changed and deleted only when they carry them.
 */
export function instanceProfileStatements(clusterName: string): iam.PolicyStatement[] {
  const profiles = `arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:instance-profile/*`;
  const tags = (prefix: 'aws:RequestTag' | 'aws:ResourceTag', withName: boolean) => ({
    StringEquals: {
      [`${prefix}/${Tag.cluster(clusterName)}`]: 'owned',
      ...(withName ? { [`${prefix}/${Tag.clusterName}`]: clusterName } : {}),
      [`${prefix}/topology.kubernetes.io/region`]: Aws.REGION,
    },
    StringLike: { [`${prefix}/${Tag.nodeClass}`]: '*' },
  });
  const request = tags('aws:RequestTag', true);
  const resource = tags('aws:ResourceTag', false);
  return [
    new iam.PolicyStatement({
      sid: 'AllowScopedInstanceProfileCreationActions',
      actions: ['iam:CreateInstanceProfile'],
      resources: [profiles],
      conditions: request,
    }),
    new iam.PolicyStatement({
      sid: 'AllowScopedInstanceProfileTagActions',
      actions: ['iam:TagInstanceProfile'],
      resources: [profiles],
      conditions: {
        StringEquals: { ...resource.StringEquals, ...request.StringEquals },
        StringLike: { ...resource.StringLike, ...request.StringLike },
      },
    }),
    new iam.PolicyStatement({
      sid: 'AllowScopedInstanceProfileActions',
      actions: [
        'iam:AddRoleToInstanceProfile',
        'iam:RemoveRoleFromInstanceProfile',
        'iam:DeleteInstanceProfile',
      ],
      resources: [profiles],
      conditions: resource,
    }),
    new iam.PolicyStatement({
      sid: 'AllowInstanceProfileReadActions',
      actions: ['iam:GetInstanceProfile'],
      resources: [profiles],
    }),
  ];
}
