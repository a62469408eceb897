import * as eks from 'aws-cdk-lib/aws-eks';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { acknowledge } from './construct-kit.ts';

/** The AWS managed policies of an EKS node (kubelet, VPC CNI, image pulls, SSM agent). */
const NODE_MANAGED_POLICIES = [
  'AmazonEKSWorkerNodePolicy',
  'AmazonEKS_CNI_Policy',
  'AmazonEC2ContainerRegistryPullOnly',
  'AmazonSSMManagedInstanceCore',
] as const;

export interface NodeIdentityProps {
  readonly clusterName: string;
  /**
   * Create the EKS access entry (node role → EC2_LINUX).
   * @default true
   */
  readonly accessEntry?: boolean;
}

/**
 * What the nodes Flotilla launches run as: the node role, its instance profile (the default of
 * EC2NodeClasses) and the EKS access entry that lets the nodes join. Built into `scope` (see
 * construct-kit.ts): `NodeRole`, `InstanceProfile`, `NodeAccessEntry`.
 */
export class NodeIdentity {
  readonly role: iam.Role;
  readonly instanceProfile: iam.InstanceProfile;

  constructor(scope: Construct, props: NodeIdentityProps) {
    this.role = new iam.Role(scope, 'NodeRole', {
      description: `Nodes Flotilla launches for EKS cluster ${props.clusterName}`,
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      managedPolicies: NODE_MANAGED_POLICIES.map((name) => iam.ManagedPolicy.fromAwsManagedPolicyName(name)),
    });
    this.instanceProfile = new iam.InstanceProfile(scope, 'InstanceProfile', { role: this.role });
    if (props.accessEntry ?? true) {
      new eks.CfnAccessEntry(scope, 'NodeAccessEntry', {
        clusterName: props.clusterName,
        principalArn: this.role.roleArn,
        type: 'EC2_LINUX',
      });
    }
    acknowledge(
      this.role,
      NODE_MANAGED_POLICIES.map(
        (name) => `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${name}]`,
      ),
      'EKS nodes need exactly these AWS managed policies (kubelet, VPC CNI, image pulls, SSM agent), as in the EKS and Karpenter node role.',
    );
  }
}
