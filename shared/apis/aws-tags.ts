// The EC2 and IAM tag keys Flotilla writes and reads. Ownership is decided on them, and the stack's
// IAM conditions name the same keys, so the adapters and infra/ share this one table.

/** The tags Flotilla puts on what it launches (instances, volumes, network interfaces, templates). */
export const Tag = {
  nodePool: 'karpenter.sh/nodepool',
  nodeClaim: 'karpenter.sh/nodeclaim',
  nodeClass: 'karpenter.k8s.aws/ec2nodeclass',
  clusterName: 'eks:eks-cluster-name',
  region: 'topology.kubernetes.io/region',
  name: 'Name',
  /** When a launch template was last used for a launch (garbage collection of templates). */
  lastUsed: 'flotilla.io/last-used',
  cluster: (clusterName: string) => `kubernetes.io/cluster/${clusterName}`,
} as const;
