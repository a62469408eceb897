import { z } from 'zod';
import {
  Annotation,
  Finalizer,
  Label,
  OPERATORS,
  requirementProblem,
  ValidationError,
} from '../core/index.ts';
import type { Condition } from '../ports/cloud.ts';
import {
  type ClusterNodeClaim,
  EC2_NODE_CLASS,
  isEC2NodeClassRef,
  type NewNodeClaim,
  type NodeClaimRead,
  type NodeClassRef,
  type UnreadableNodeClaim,
} from '../ports/cluster.ts';
import {
  checkObjectName,
  convertEach,
  isRecord,
  metadataString,
  optional,
  toNodeSelectorRequirements,
  toQuantityMap,
  toTaint,
} from './fields.ts';
import {
  condition,
  KARPENTER_GROUP,
  KARPENTER_VERSION,
  metadata,
  nodeClaimSpecFields,
  parseWith,
  quantities,
  resources,
} from './karpenter.ts';

// Karpenter's v1 NodeClaim: parsed into the port's ClusterNodeClaim (what is known of one that
// cannot be read included), and the object to create for a new one. Pure.

const nodeClaimSchema = z.object({
  metadata,
  spec: z
    .object({
      ...nodeClaimSpecFields,
      resources: z.object({ requests: quantities.exactOptional() }).loose().exactOptional(),
    })
    .loose(),
  status: z
    .object({
      providerID: z.string().exactOptional(),
      imageID: z.string().exactOptional(),
      nodeName: z.string().exactOptional(),
      capacity: quantities.exactOptional(),
      allocatable: quantities.exactOptional(),
      conditions: z.array(condition).default([]),
      lastPodEventTime: z.string().exactOptional(),
    })
    .loose()
    .exactOptional(),
});

/**
 * Converts NodeClaims; for each one that cannot be read, what is known of it (its name and, when
 * they are strings, `status.providerID` and its NodePool label, or that it has no such label), so
 * that garbage collection spares only its instance and node repair counts it in its NodePool's
 * budgets (in none when it is standalone).
 */
export function convertNodeClaims<R>(
  raws: readonly R[],
  convert: (raw: R) => ClusterNodeClaim,
  onProblem?: (problem: ValidationError) => void,
): NodeClaimRead {
  const items: ClusterNodeClaim[] = [];
  const problems: ValidationError[] = [];
  const unreadable: UnreadableNodeClaim[] = [];
  for (const raw of raws) {
    const read = convertEach([raw], convert, onProblem);
    items.push(...read.items);
    for (const problem of read.problems) {
      problems.push(problem);
      const status = isRecord(raw) ? raw['status'] : undefined;
      const providerId = isRecord(status) ? status['providerID'] : undefined;
      const meta = isRecord(raw) ? raw['metadata'] : undefined;
      const labels = isRecord(meta) ? meta['labels'] : undefined;
      const nodePool = isRecord(labels) ? labels[Label.nodePool] : undefined;
      const standalone = (labels === undefined || isRecord(labels)) && nodePool === undefined;
      unreadable.push({
        name: metadataString(raw, 'name') ?? '',
        ...(typeof providerId === 'string' && providerId !== '' ? { providerId } : {}),
        ...(typeof nodePool === 'string' && nodePool !== '' ? { nodePool } : {}),
        ...(standalone ? { standalone: true as const } : {}),
        problem: problem.message,
      });
    }
  }
  return { items, problems, unreadable };
}

/**
 * Parses a `karpenter.sh/v1` NodeClaim.
 * @throws ValidationError naming the NodeClaim and the field.
 */
export function toClusterNodeClaim(raw: unknown): ClusterNodeClaim {
  const nc = parseWith(nodeClaimSchema, raw, 'nodeClaim');
  const object = `nodeClaim "${nc.metadata.name}"`;
  checkObjectName(nc.metadata.name, object, 'metadata.name');
  if (nc.status?.nodeName !== undefined) checkObjectName(nc.status.nodeName, object, 'status.nodeName');
  const labels = nc.metadata.labels ?? {};
  const nodePoolName = labels[Label.nodePool];
  // A NodeClaim a user made outside every NodePool ("standalone") is Flotilla's when its class is.
  if (nodePoolName === undefined && !isEC2NodeClassRef(nc.spec.nodeClassRef)) {
    throw new ValidationError(
      object,
      'spec.nodeClassRef',
      `${nc.spec.nodeClassRef.group}/${nc.spec.nodeClassRef.kind} is not ${EC2_NODE_CLASS.group}/${EC2_NODE_CLASS.kind}: a NodeClaim without a NodePool is left to its own provider`,
    );
  }
  // Each requirement must be one the scheduler can read: a user writes a standalone NodeClaim's.
  for (const [i, r] of nc.spec.requirements.entries()) {
    const problem = requirementProblem(r);
    if (problem !== undefined) throw new ValidationError(object, `spec.requirements[${i}]`, problem);
  }
  const s = nc.status;
  const capacity = resources(s?.capacity, object, 'status.capacity');
  const allocatable = resources(s?.allocatable, object, 'status.allocatable');
  return {
    name: nc.metadata.name,
    uid: nc.metadata.uid,
    ...optional('nodePoolName', nodePoolName),
    nodeClassRef: nc.spec.nodeClassRef,
    labels,
    annotations: nc.metadata.annotations ?? {},
    finalizers: nc.metadata.finalizers ?? [],
    requirements: toNodeSelectorRequirements(
      nc.spec.requirements,
      object,
      'spec.requirements',
      OPERATORS,
    ).map((r, i) => ({
      ...r,
      ...optional('minValues', nc.spec.requirements[i]?.minValues),
    })) as ClusterNodeClaim['requirements'],
    requests: resources(nc.spec.resources?.requests, object, 'spec.resources.requests') ?? {},
    taints: (nc.spec.taints ?? []).map((x, i) => toTaint(x, object, `spec.taints[${i}]`)),
    startupTaints: (nc.spec.startupTaints ?? []).map((x, i) =>
      toTaint(x, object, `spec.startupTaints[${i}]`),
    ),
    ...optional('expireAfter', nc.spec.expireAfter),
    ...optional('terminationGracePeriod', nc.spec.terminationGracePeriod),
    ...optional(
      'createdAtMs',
      nc.metadata.creationTimestamp ? Date.parse(nc.metadata.creationTimestamp) : undefined,
    ),
    deleting: nc.metadata.deletionTimestamp !== undefined,
    ...optional('resourceVersion', nc.metadata.resourceVersion),
    ...optional('generation', nc.metadata.generation),
    ...optional(
      'deletedAtMs',
      nc.metadata.deletionTimestamp ? Date.parse(nc.metadata.deletionTimestamp) : undefined,
    ),
    status: {
      ...optional('providerId', s?.providerID),
      ...optional('imageId', s?.imageID),
      ...optional('nodeName', s?.nodeName),
      ...optional('capacity', capacity),
      ...optional('allocatable', allocatable),
      conditions: (s?.conditions ?? []) as Condition[],
      ...optional(
        'lastPodEventMs',
        s?.lastPodEventTime === undefined || Number.isNaN(Date.parse(s.lastPodEventTime))
          ? undefined
          : Date.parse(s.lastPodEventTime),
      ),
    },
  };
}

/** The NodeClass label a NodeClaim carries: `<group>/<lowercase kind>` (`karpenter.k8s.aws/ec2nodeclass`). */
export function nodeClassLabelKey(ref: NodeClassRef): string {
  return `${ref.group}/${ref.kind.toLowerCase()}`;
}

/** The NodeClaim object to create, in Karpenter's v1 shape. */
export function toNodeClaimManifest(claim: NewNodeClaim): Record<string, unknown> {
  return {
    apiVersion: `${KARPENTER_GROUP}/${KARPENTER_VERSION}`,
    kind: 'NodeClaim',
    metadata: {
      name: claim.name,
      labels: {
        ...claim.labels,
        [Label.nodePool]: claim.nodePool.name,
        [nodeClassLabelKey(claim.nodeClassRef)]: claim.nodeClassRef.name,
      },
      annotations: {
        ...claim.annotations,
        ...(claim.nodePoolHash
          ? {
              [Annotation.nodePoolHash]: claim.nodePoolHash.hash,
              [Annotation.nodePoolHashVersion]: claim.nodePoolHash.version,
            }
          : {}),
      },
      finalizers: [Finalizer.termination],
      ownerReferences: [
        {
          apiVersion: `${KARPENTER_GROUP}/${KARPENTER_VERSION}`,
          kind: 'NodePool',
          name: claim.nodePool.name,
          uid: claim.nodePool.uid,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      requirements: claim.requirements.map((r) => ({
        key: r.key,
        operator: r.operator,
        ...(r.values === undefined ? {} : { values: [...r.values] }),
        ...(r.minValues === undefined ? {} : { minValues: r.minValues }),
      })),
      resources: { requests: toQuantityMap(claim.requests) },
      ...(claim.taints.length > 0 ? { taints: claim.taints } : {}),
      ...(claim.startupTaints.length > 0 ? { startupTaints: claim.startupTaints } : {}),
      nodeClassRef: claim.nodeClassRef,
      ...(claim.expireAfter === undefined ? {} : { expireAfter: claim.expireAfter }),
      ...(claim.terminationGracePeriod === undefined
        ? {}
        : { terminationGracePeriod: claim.terminationGracePeriod }),
    },
  };
}
