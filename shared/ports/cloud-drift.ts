import { InvalidRequirementError, type Labels, Requirements } from '../core/index.ts';
import type { CloudDriftReason, CloudInstance } from './cloud.ts';
import type { AmiStatus, EC2NodeClass } from './ec2nodeclass.ts';

// The cloud side of drift, decided the same way by both Cloud adapters: an instance has drifted
// from its EC2NodeClass when the class's resolved status no longer describes what it runs on.

/**
 * Whether a node running `imageId` has drifted from the class's AMIs. With the node's labels (its
 * instance type's: architecture, GPU and accelerator counts), only the AMIs whose requirements
 * those labels satisfy count, as Karpenter maps each AMI to the instance types it serves: a
 * standard node still running the image the class now keeps for GPU types has drifted. An AMI
 * whose requirements cannot be read is counted for every node (never a drift on a guess).
 */
export function amiDrifted(imageId: string, amis: readonly AmiStatus[], labels?: Labels): boolean {
  if (amis.length === 0) return false;
  const serving = labels === undefined ? amis : amis.filter((ami) => serves(ami, labels));
  return !serving.some((ami) => ami.id === imageId);
}

function serves(ami: AmiStatus, labels: Labels): boolean {
  try {
    return Requirements.parse(ami.requirements, {
      object: 'EC2NodeClass',
      field: 'status.amis.requirements',
    }).matchesLabels(labels);
  } catch (error) {
    if (error instanceof InvalidRequirementError) return true;
    throw error;
  }
}

/**
 * Why the instance no longer matches the EC2NodeClass's status, in Karpenter's order: its image is
 * not among the class's AMIs (`AMIDrift`), its subnet not among the class's subnets
 * (`SubnetDrift`), its security groups differ from the class's (`SecurityGroupDrift`), it runs
 * in a capacity reservation that is not among the class's (`CapacityReservationDrift`), or its
 * placement group is not the class's (`PlacementGroupDrift`).
 * Undefined when it matches, or when the class or the instance lacks what the check needs.
 */
export function cloudDrift(instance: CloudInstance, nodeClass: EC2NodeClass): CloudDriftReason | undefined {
  const status = nodeClass.status;
  if (status === undefined) return undefined;
  if (instance.imageId !== undefined && amiDrifted(instance.imageId, status.amis)) return 'AMIDrift';
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
  // A node in a capacity reservation the class no longer selects (or that ended) is replaced.
  if (
    instance.capacityReservationId !== undefined &&
    !(status.capacityReservations ?? []).some((r) => r.id === instance.capacityReservationId)
  ) {
    return 'CapacityReservationDrift';
  }
  return placementGroupDrifted(instance, nodeClass) ? 'PlacementGroupDrift' : undefined;
}

/**
 * Whether the instance's placement group is not the class's: it runs outside the group the class
 * resolved, or in a group while the class selects none. A selector not resolved (yet) judges nothing.
 */
export function placementGroupDrifted(instance: CloudInstance, nodeClass: EC2NodeClass): boolean {
  const selector = nodeClass.spec.placementGroupSelector;
  const placed = instance.placementGroup;
  if (selector === undefined) return placed !== undefined;
  const group = nodeClass.status?.placementGroups?.[0];
  if (group === undefined) return false;
  if (placed === undefined) return true;
  // EC2 names the group of an instance; the id where it gives one.
  return placed.id !== undefined ? placed.id !== group.id : placed.name !== group.name;
}
