import type { CloudDriftReason, CloudInstance, EC2NodeClass } from './cloud.ts';

// The cloud side of drift, decided the same way by both Cloud adapters: an instance has drifted
// from its EC2NodeClass when the class's resolved status no longer describes what it runs on.

/**
 * Why the instance no longer matches the EC2NodeClass's status, in Karpenter's order: its image is
 * not among the class's AMIs (`AMIDrift`), its subnet not among the class's subnets
 * (`SubnetDrift`), or its security groups differ from the class's (`SecurityGroupDrift`).
 * Undefined when it matches, or when the class or the instance lacks what the check needs.
 */
export function cloudDrift(instance: CloudInstance, nodeClass: EC2NodeClass): CloudDriftReason | undefined {
  const status = nodeClass.status;
  if (status === undefined) return undefined;
  if (instance.imageId !== undefined && status.amis.length > 0) {
    if (!status.amis.some((ami) => ami.id === instance.imageId)) return 'AMIDrift';
  }
  if (instance.subnetId !== undefined && status.subnets.length > 0) {
    if (!status.subnets.some((subnet) => subnet.id === instance.subnetId)) return 'SubnetDrift';
  }
  // Every VPC instance has at least one group; an empty list says nothing about drift.
  if (
    instance.securityGroupIds !== undefined &&
    instance.securityGroupIds.length > 0 &&
    status.securityGroups.length > 0
  ) {
    const want = new Set(status.securityGroups.map((g) => g.id));
    const have = new Set(instance.securityGroupIds);
    if (want.size !== have.size || [...want].some((id) => !have.has(id))) return 'SecurityGroupDrift';
  }
  return undefined;
}
