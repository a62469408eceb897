import { createHash } from 'node:crypto';
import {
  Annotation,
  consolidatable,
  type Drift,
  findCondition,
  hashDrift,
  isConditionTrue,
  isReschedulable,
  Label,
  NodeClaimConditionType,
  requirementsDrift,
  trueSinceMs,
} from '../../core/index.ts';
import type { CloudDriftReason, CloudInstance, EC2NodeClass, InstanceType } from '../../ports/cloud.ts';
import { amiDrifted, cloudDrift } from '../../ports/cloud-drift.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  Condition,
  MetadataPatch,
  NodeClaimStatusPatch,
} from '../../ports/cluster.ts';
import {
  NODECLASS_HASH_ANNOTATION,
  NODECLASS_HASH_VERSION,
  NODECLASS_HASH_VERSION_ANNOTATION,
  NODEPOOL_HASH_VERSION,
  nodeClassHash,
  nodePoolHash,
} from '../state/new-nodeclaim.ts';
import { parseMinSavings } from './min-savings.ts';

// The NodeClaim conditions disruption reads, kept as Karpenter v1 keeps them: `Drifted` (with the
// drift reason) and `Consolidatable` (consolidateAfter has passed since the last pod event), plus
// `status.lastPodEventTime`. Pure: each NodeClaim's changes are computed here and applied by the
// controller; unchanged NodeClaims produce no write.

/** On a NodeClaim: a digest of the pods on its node when last seen, to notice pod events. */
export const POD_SET_ANNOTATION = 'flotilla.io/pod-set';

export interface ConditionInput {
  readonly claim: ClusterNodeClaim;
  readonly node: ClusterNode | undefined;
  readonly pool: ClusterNodePool | undefined;
  readonly nodeClass: EC2NodeClass | undefined;
  /** The claim's instance as EC2 describes it, when listed. */
  readonly instance: CloudInstance | undefined;
  /** The instance types of the claim's EC2NodeClass now; undefined when not known (not judged). */
  readonly instanceTypes?: readonly InstanceType[];
  readonly nowMs: number;
}

export interface ClaimChanges {
  readonly status?: NodeClaimStatusPatch;
  readonly metadata?: MetadataPatch;
  /** Set when the claim became drifted in this pass. */
  readonly drifted?: Drift;
  /** Set when the claim's hashes, of another version, are replaced by Flotilla's in this pass. */
  readonly adopted?: { readonly previous: string };
  /** The claim as it reads after the changes. */
  readonly view: ClusterNodeClaim;
  /** A problem to report (an unparsable consolidateAfter). */
  readonly problem?: string;
}

/** The digest of the reschedulable pods on a node (`empty` when there are none). */
export function podSetDigest(node: ClusterNode): string {
  const uids = node.pods
    .filter(isReschedulable)
    .map((p) => p.uid)
    .sort();
  if (uids.length === 0) return 'empty';
  return createHash('sha256').update(uids.join('\n')).digest('hex').slice(0, 16);
}

/** Why the claim is drifted now, in Karpenter's order; undefined when it is not. */
export function driftOf(input: ConditionInput): Drift | undefined {
  const { claim, pool, nodeClass, instance } = input;
  if (pool !== undefined) {
    const poolDrift =
      hashDrift(
        'NodePoolDrifted',
        {
          hash: claim.annotations[Annotation.nodePoolHash],
          version: claim.annotations[Annotation.nodePoolHashVersion],
        },
        { hash: nodePoolHash(pool), version: NODEPOOL_HASH_VERSION },
      ) ?? requirementsDrift(pool.pool.requirements, claim.labels);
    if (poolDrift !== undefined) return poolDrift;
  }
  const notFound = instanceTypeNotFound(input);
  if (notFound !== undefined) return notFound;
  if (nodeClass === undefined) return undefined;
  const classDrift = hashDrift(
    'NodeClassDrift',
    {
      hash: claim.annotations[NODECLASS_HASH_ANNOTATION],
      version: claim.annotations[NODECLASS_HASH_VERSION_ANNOTATION],
    },
    { hash: nodeClassHash(nodeClass), version: NODECLASS_HASH_VERSION },
  );
  if (classDrift !== undefined) return classDrift;
  const amis = nodeClass.status?.amis ?? [];
  const imageId = claim.status.imageId ?? instance?.imageId;
  // The claim's labels say which AMIs serve it when they carry its instance type's (architecture
  // first of all); without them any of the class's AMIs will do.
  const typeLabels = claim.labels[Label.arch] === undefined ? undefined : claim.labels;
  if (imageId !== undefined && amiDrifted(imageId, amis, typeLabels)) {
    const type = claim.labels[Label.instanceType];
    return {
      reason: 'AMIDrift',
      message: `image ${imageId} is no longer among the EC2NodeClass's AMIs${type === undefined ? '' : ` for ${type}`}`,
    };
  }
  // The image was judged above from the NodeClaim; the instance adds its subnet and groups.
  const cloud: CloudDriftReason | undefined =
    instance === undefined ? undefined : cloudDrift(withoutImage(instance), nodeClass);

  if (cloud === 'SubnetDrift') {
    return {
      reason: cloud,
      message: `subnet ${instance?.subnetId} is no longer selected by the EC2NodeClass`,
    };
  }
  if (cloud === 'SecurityGroupDrift') {
    return { reason: cloud, message: "the instance's security groups differ from the EC2NodeClass's" };
  }
  if (cloud === 'PlacementGroupDrift') {
    const group = nodeClass.status?.placementGroups?.[0];
    const placed = instance?.placementGroup;
    return {
      reason: cloud,
      message: `the instance runs in placement group ${placed?.id ?? placed?.name ?? '(none)'}, the EC2NodeClass selects ${group === undefined ? 'none' : `${group.name} (${group.id})`}`,
    };
  }
  // A node whose reservation ended runs on as on-demand (the EC2NodeClass controller relabels it):
  // only a node still labelled reserved drifts for its reservation.
  return (
    capacityReservationDrift(claim.labels, nodeClass) ??
    (cloud === 'CapacityReservationDrift' && claim.labels[Label.capacityType] === 'reserved'
      ? {
          reason: cloud,
          message: `capacity reservation ${instance?.capacityReservationId} is no longer selected by the EC2NodeClass`,
        }
      : undefined)
  );
}

/**
 * A NodeClaim launched into a capacity reservation (its `karpenter.k8s.aws/capacity-reservation-id`
 * label) that the class's status no longer lists: the reservation ended, was cancelled or is no
 * longer selected. Only for a class whose status has been resolved.
 */
export function capacityReservationDrift(
  labels: Readonly<Record<string, string>>,
  nodeClass: EC2NodeClass,
): Drift | undefined {
  const id = labels[Label.capacityReservationId];
  const status = nodeClass.status;
  if (id === undefined || status === undefined || labels[Label.capacityType] !== 'reserved') return undefined;
  if ((status.capacityReservations ?? []).some((r) => r.id === id)) return undefined;
  return {
    reason: 'CapacityReservationDrift',
    message: `capacity reservation ${id} is no longer among the EC2NodeClass's (it ended, was cancelled or is no longer selected)`,
  };
}

/** Karpenter looks for a NodeClaim's instance type only once the claim is this old. */
export const INSTANCE_TYPE_NOT_FOUND_AFTER_MS = 60 * 60 * 1000;

/**
 * `InstanceTypeNotFound`: an hour after the claim was made, its instance type is no longer among
 * its EC2NodeClass's, or none of the type's offerings has the claim's zone and capacity type any
 * more (the type left the region's catalog, the class's AMIs or subnets no longer serve it).
 * Judged only when the class's instance types are known and the claim's labels name its type.
 */
export function instanceTypeNotFound(input: ConditionInput): Drift | undefined {
  const { claim, instanceTypes, nowMs } = input;
  const typeName = claim.labels[Label.instanceType];
  if (instanceTypes === undefined || typeName === undefined || claim.createdAtMs === undefined)
    return undefined;
  if (nowMs - claim.createdAtMs < INSTANCE_TYPE_NOT_FOUND_AFTER_MS) return undefined;
  const type = instanceTypes.find((t) => t.name === typeName);
  if (type === undefined) {
    return {
      reason: 'InstanceTypeNotFound',
      message: `instance type ${typeName} is no longer offered for the EC2NodeClass`,
    };
  }
  const zone = claim.labels[Label.zone];
  const capacityType = claim.labels[Label.capacityType];
  const offered = type.offerings.some(
    (o) =>
      (zone === undefined || o.zone === zone) &&
      (capacityType === undefined || o.capacityType === capacityType),
  );
  if (offered) return undefined;
  return {
    reason: 'InstanceTypeNotFound',
    message: `instance type ${typeName} is no longer offered as ${capacityType ?? 'any capacity type'} in ${zone ?? 'any zone'} for the EC2NodeClass`,
  };
}

function withoutImage(instance: CloudInstance): CloudInstance {
  const { imageId: _image, ...rest } = instance;
  return rest;
}

/** The changes a NodeClaim needs now; `view` is the claim as the rest of the pass should see it. */
export function computeClaimChanges(input: ConditionInput): ClaimChanges {
  const { claim, node, pool, nowMs } = input;
  const conditions = claim.status.conditions;
  const now = new Date(nowMs).toISOString();
  const updates: NonNullable<NodeClaimStatusPatch['conditions']>[number][] = [];
  const remove: string[] = [];
  let lastPodEventTime: string | undefined;
  let metadata: MetadataPatch | undefined;
  let problem: string | undefined;

  // Drift: only launched NodeClaims can drift; the condition is cleared otherwise.
  const launched = isConditionTrue(conditions, NodeClaimConditionType.launched);
  const drift = launched ? driftOf(input) : undefined;
  const current = findCondition(conditions, NodeClaimConditionType.drifted);
  let drifted: Drift | undefined;
  if (drift !== undefined) {
    if (current?.status !== 'True' || current.reason !== drift.reason) {
      updates.push({
        type: NodeClaimConditionType.drifted,
        status: 'True',
        reason: drift.reason,
        message: drift.message,
      });
      if (current?.status !== 'True') drifted = drift;
    }
  } else if (current !== undefined) {
    remove.push(NodeClaimConditionType.drifted);
  }

  // Adoption of hashes another version wrote (Karpenter's, or none): see adoptedHashes.
  const adopted = launched && drift === undefined ? adoptedHashes(input) : undefined;
  if (adopted !== undefined) metadata = { annotations: adopted };

  // Pod events: a change in the node's pods moves lastPodEventTime to now.
  let lastPodEventMs = claim.status.lastPodEventMs;
  if (node !== undefined) {
    const digest = podSetDigest(node);
    const seen = claim.annotations[POD_SET_ANNOTATION];
    if (seen !== digest) {
      metadata = { annotations: { ...metadata?.annotations, [POD_SET_ANNOTATION]: digest } };
      // The first look at a node with pods counts as a pod event when they came is not known. A
      // NodeClaim whose lastPodEventTime another controller keeps (Karpenter, before a takeover or
      // beside a shadow stack) has it known: that time stands.
      const known = seen === undefined && claim.status.lastPodEventMs !== undefined;
      if (!known && (seen !== undefined || digest !== 'empty')) {
        lastPodEventTime = now;
        lastPodEventMs = nowMs;
      }
    }
  }

  // Consolidatable.
  const initializedAtMs =
    node === undefined ? undefined : trueSinceMs(conditions, NodeClaimConditionType.initialized);
  const verdict =
    pool === undefined
      ? ({ kind: 'no', why: 'no NodePool' } as const)
      : consolidatable({
          consolidateAfter: pool.disruption.consolidateAfter,
          initializedAtMs,
          lastPodEventMs,
          nowMs,
        });
  if (verdict.kind === 'invalid') problem = verdict.problem;
  const savings = pool === undefined ? undefined : parseMinSavings(pool.annotations);
  if (problem === undefined && savings?.kind === 'invalid') problem = savings.problem;
  const consolidatableNow = findCondition(conditions, NodeClaimConditionType.consolidatable);
  if (verdict.kind === 'consolidatable') {
    if (consolidatableNow?.status !== 'True') {
      updates.push({
        type: NodeClaimConditionType.consolidatable,
        status: 'True',
        reason: NodeClaimConditionType.consolidatable,
        message: '',
      });
    }
  } else if (consolidatableNow !== undefined) {
    remove.push(NodeClaimConditionType.consolidatable);
  }

  const statusChanged = updates.length > 0 || remove.length > 0 || lastPodEventTime !== undefined;
  const status: NodeClaimStatusPatch | undefined = statusChanged
    ? {
        ...(updates.length > 0 ? { conditions: updates } : {}),
        ...(remove.length > 0 ? { removeConditions: remove } : {}),
        ...(lastPodEventTime === undefined ? {} : { lastPodEventTime }),
      }
    : undefined;

  const nextConditions = [
    ...conditions.filter((c) => !remove.includes(c.type) && !updates.some((u) => u.type === c.type)),
    ...updates.map(
      (u): Condition => ({
        ...u,
        lastTransitionTime:
          findCondition(conditions, u.type)?.status === u.status
            ? (findCondition(conditions, u.type)?.lastTransitionTime ?? now)
            : now,
      }),
    ),
  ];
  const view: ClusterNodeClaim = {
    ...claim,
    annotations:
      metadata === undefined
        ? claim.annotations
        : { ...claim.annotations, ...adopted, [POD_SET_ANNOTATION]: podSetDigestOr(claim, node) },
    status: {
      ...claim.status,
      conditions: nextConditions,
      ...(lastPodEventMs === undefined ? {} : { lastPodEventMs }),
    },
  };
  return {
    ...(status === undefined ? {} : { status }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(drifted === undefined ? {} : { drifted }),
    ...(adopted === undefined ? {} : { adopted: { previous: hashVersions(claim) } }),
    view,
    ...(problem === undefined ? {} : { problem }),
  };
}

/**
 * The hash annotations to write on a launched NodeClaim that is not drifted but whose NodePool or
 * EC2NodeClass hash has a version other than Flotilla's (made by Karpenter, or by nothing that
 * stamps one): Flotilla's hashes of the NodePool and EC2NodeClass as they are now, as Karpenter's
 * hash controllers re-stamp NodeClaims when the hash version changes. Without it a NodeClaim taken
 * over from Karpenter could never drift; with it, only a change made after the takeover drifts it.
 */
export function adoptedHashes(input: ConditionInput): Record<string, string> | undefined {
  const { claim, pool, nodeClass } = input;
  const stamps: Record<string, string> = {};
  if (pool !== undefined && claim.annotations[Annotation.nodePoolHashVersion] !== NODEPOOL_HASH_VERSION) {
    stamps[Annotation.nodePoolHash] = nodePoolHash(pool);
    stamps[Annotation.nodePoolHashVersion] = NODEPOOL_HASH_VERSION;
  }
  if (
    nodeClass !== undefined &&
    claim.annotations[NODECLASS_HASH_VERSION_ANNOTATION] !== NODECLASS_HASH_VERSION
  ) {
    stamps[NODECLASS_HASH_ANNOTATION] = nodeClassHash(nodeClass);
    stamps[NODECLASS_HASH_VERSION_ANNOTATION] = NODECLASS_HASH_VERSION;
  }
  return Object.keys(stamps).length === 0 ? undefined : stamps;
}

function hashVersions(claim: ClusterNodeClaim): string {
  const pool = claim.annotations[Annotation.nodePoolHashVersion] ?? 'none';
  const nodeClass = claim.annotations[NODECLASS_HASH_VERSION_ANNOTATION] ?? 'none';
  return `nodepool=${pool} ec2nodeclass=${nodeClass}`;
}

function podSetDigestOr(claim: ClusterNodeClaim, node: ClusterNode | undefined): string {
  return node === undefined ? (claim.annotations[POD_SET_ANNOTATION] ?? '') : podSetDigest(node);
}
