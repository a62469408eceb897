import { InvalidRequirementError } from '../errors.ts';
import type { Labels } from '../labels.ts';
import { type NodeSelectorRequirement, Requirement } from '../requirements.ts';

// Drift a NodeClaim shows against its NodePool, decided from objects alone (the cloud's part,
// AMI/subnet/security groups, is the Cloud port's): the template hash, and requirements the
// NodeClaim's labels no longer satisfy.

/** Why a NodeClaim is drifted, as Karpenter names the reasons (the cloud's reasons included). */
export type DriftReason =
  | 'NodePoolDrifted'
  | 'RequirementsDrifted'
  | 'NodeClassDrift'
  | 'AMIDrift'
  | 'SubnetDrift'
  | 'SecurityGroupDrift'
  | 'PlacementGroupDrift'
  | 'CapacityReservationDrift'
  | 'InstanceTypeNotFound';

export interface Drift {
  readonly reason: DriftReason;
  readonly message: string;
}

/** A hash and its version, as `karpenter.sh/nodepool-hash` and `-hash-version` carry them. */
export interface VersionedHash {
  readonly hash: string | undefined;
  readonly version: string | undefined;
}

/**
 * Template drift: the hash the NodeClaim was made with differs from the template's hash now.
 * Hashes of different versions (or a NodeClaim without one, such as one another tool made) are
 * never compared.
 */
export function hashDrift(
  reason: 'NodePoolDrifted' | 'NodeClassDrift',
  claim: VersionedHash,
  current: VersionedHash,
): Drift | undefined {
  if (claim.hash === undefined || current.hash === undefined) return undefined;
  if (claim.version === undefined || claim.version !== current.version) return undefined;
  if (claim.hash === current.hash) return undefined;
  const what = reason === 'NodePoolDrifted' ? 'NodePool template' : 'EC2NodeClass';
  return {
    reason,
    message: `the ${what} changed since the NodeClaim was made (hash ${claim.hash} → ${current.hash})`,
  };
}

/**
 * Requirements drift: a NodePool requirement that the NodeClaim's label for the same key no longer
 * satisfies. Keys the NodeClaim has no label for are not judged (the labels a launch adds are
 * what is known of the node), so a requirement on an unknown key never drifts every node.
 * Malformed requirements are not judged either (the NodePool's own status reports them).
 */
export function requirementsDrift(
  requirements: readonly NodeSelectorRequirement[],
  labels: Labels,
): Drift | undefined {
  for (const raw of requirements) {
    const value = labels[raw.key];
    if (value === undefined) continue;
    let requirement: Requirement;
    try {
      requirement = Requirement.parse(raw, { object: 'NodePool', field: 'spec.template.spec.requirements' });
    } catch (error) {
      if (error instanceof InvalidRequirementError) continue;
      throw error;
    }
    if (!requirement.admits(value)) {
      return {
        reason: 'RequirementsDrifted',
        message: `label ${raw.key}=${value} no longer satisfies the NodePool requirement ${requirement.toString()}`,
      };
    }
  }
  return undefined;
}
