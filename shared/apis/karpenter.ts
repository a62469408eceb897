import { z } from 'zod';
import {
  Annotation,
  Finalizer,
  isConditionTrue,
  Label,
  NodePoolConditionType,
  OPERATORS,
  parseResourceList,
  type ResourceList,
  ValidationError,
} from '../core/index.ts';
import type { Condition } from '../ports/cloud.ts';
import {
  type ClusterNodeClaim,
  type ClusterNodePool,
  type ConditionUpdate,
  DEFAULT_NODEPOOL_DISRUPTION,
  type NewNodeClaim,
  type NodeClaimRead,
  type NodeClassRef,
  type NodePoolDisruption,
  type UnreadableNodeClaim,
} from '../ports/cluster.ts';
import { conditionSchema } from './ec2nodeclass.ts';
import {
  checkObjectName,
  convertEach,
  isRecord,
  metadataString,
  objectName,
  optional,
  toNodeSelectorRequirements,
  toQuantityMap,
  toTaint,
} from './fields.ts';

// Karpenter's v1 objects (NodePool, NodeClaim): parsing into port types, building a NodeClaim,
// and condition bookkeeping. Pure.

export const KARPENTER_GROUP = 'karpenter.sh';
export const KARPENTER_VERSION = 'v1';

const stringMap = z.record(z.string(), z.string());
const quantities = z.record(z.string(), z.union([z.string(), z.number()]));
const requirement = z.object({
  key: z.string(),
  operator: z.string(),
  values: z.array(z.string()).exactOptional(),
  minValues: z.number().int().exactOptional(),
});
const taint = z.object({ key: z.string(), value: z.string().exactOptional(), effect: z.string() });
const nodeClassRef = z.object({ group: z.string(), kind: z.string(), name: z.string() });
const condition = conditionSchema;
const metadata = z
  .object({
    name: z.string(),
    uid: z.string(),
    resourceVersion: z.string().exactOptional(),
    generation: z.number().int().exactOptional(),
    creationTimestamp: z.string().exactOptional(),
    deletionTimestamp: z.string().exactOptional(),
    labels: stringMap.exactOptional(),
    annotations: stringMap.exactOptional(),
    finalizers: z.array(z.string()).exactOptional(),
  })
  .loose();

const nodePoolSchema = z.object({
  metadata,
  spec: z
    .object({
      template: z.object({
        metadata: z
          .object({ labels: stringMap.exactOptional(), annotations: stringMap.exactOptional() })
          .loose()
          .exactOptional(),
        spec: z
          .object({
            requirements: z.array(requirement),
            taints: z.array(taint).exactOptional(),
            startupTaints: z.array(taint).exactOptional(),
            expireAfter: z.string().exactOptional(),
            terminationGracePeriod: z.string().exactOptional(),
            nodeClassRef,
          })
          .loose(),
      }),
      limits: quantities.exactOptional(),
      weight: z.number().int().exactOptional(),
      replicas: z.number().int().nonnegative().exactOptional(),
      disruption: z
        .object({
          consolidationPolicy: z.enum(['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']).exactOptional(),
          consolidateAfter: z.string().exactOptional(),
          budgets: z
            .array(
              z
                .object({
                  nodes: z.string().exactOptional(),
                  schedule: z.string().exactOptional(),
                  duration: z.string().exactOptional(),
                  reasons: z.array(z.enum(['Empty', 'Drifted', 'Underutilized'])).exactOptional(),
                })
                .loose(),
            )
            .exactOptional(),
        })
        .loose()
        .exactOptional(),
    })
    .loose(),
  status: z
    .object({
      conditions: z.array(condition).default([]),
      resources: quantities.exactOptional(),
      nodes: z.number().int().exactOptional(),
      nodeClassObservedGeneration: z.number().int().exactOptional(),
    })
    .loose()
    .exactOptional(),
});

const nodeClaimSchema = z.object({
  metadata,
  spec: z
    .object({
      requirements: z.array(requirement),
      resources: z.object({ requests: quantities.exactOptional() }).loose().exactOptional(),
      taints: z.array(taint).exactOptional(),
      startupTaints: z.array(taint).exactOptional(),
      expireAfter: z.string().exactOptional(),
      terminationGracePeriod: z.string().exactOptional(),
      nodeClassRef,
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

function parseWith<T>(schema: z.ZodType<T>, raw: unknown, kind: string): T {
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue?.path.join('.') || '(root)';
    const rest =
      result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more problems)` : '';
    throw new ValidationError(objectName(kind, raw, false), field, `${issue?.message ?? 'invalid'}${rest}`, {
      cause: result.error,
    });
  }
  return result.data;
}

function resources(
  raw: Record<string, string | number> | undefined,
  object: string,
  field: string,
): ResourceList | undefined {
  // The CRDs admit a sign; a negative amount is none.
  return raw === undefined ? undefined : parseResourceList(raw, { object, field, negative: 'zero' });
}

/**
 * Parses a `karpenter.sh/v1` NodePool.
 * @throws ValidationError naming the NodePool and the field.
 */
export function toClusterNodePool(raw: unknown): ClusterNodePool {
  const np = parseWith(nodePoolSchema, raw, 'nodePool');
  const object = `nodePool "${np.metadata.name}"`;
  const t = np.spec.template;
  const taints = (t.spec.taints ?? []).map((x, i) => toTaint(x, object, `spec.template.spec.taints[${i}]`));
  const startupTaints = (t.spec.startupTaints ?? []).map((x, i) =>
    toTaint(x, object, `spec.template.spec.startupTaints[${i}]`),
  );
  const requirements = toNodeSelectorRequirements(
    t.spec.requirements,
    object,
    'spec.template.spec.requirements',
    OPERATORS,
  ).map((r, i) => ({
    ...r,
    ...optional('minValues', t.spec.requirements[i]?.minValues),
  })) as ClusterNodePool['pool']['requirements'];
  const limits = resources(np.spec.limits, object, 'spec.limits');
  checkStaticSpec(np.spec, object);
  const conditions = (np.status?.conditions ?? []) as Condition[];
  const annotations = np.metadata.annotations ?? {};
  const statusResources = resources(np.status?.resources, object, 'status.resources');
  return {
    pool: {
      name: np.metadata.name,
      ...optional('weight', np.spec.weight),
      nodeClassName: t.spec.nodeClassRef.name,
      ...optional('labels', t.metadata?.labels),
      requirements,
      ...(taints.length > 0 ? { taints } : {}),
      ...(startupTaints.length > 0 ? { startupTaints } : {}),
      ...optional('limits', limits),
      ...optional('replicas', np.spec.replicas),
    },
    uid: np.metadata.uid,
    ...optional('generation', np.metadata.generation),
    nodeClassRef: t.spec.nodeClassRef,
    templateAnnotations: t.metadata?.annotations ?? {},
    annotations,
    expireAfter: t.spec.expireAfter ?? '720h',
    ...optional('terminationGracePeriod', t.spec.terminationGracePeriod),
    disruption: toNodePoolDisruption(np.spec.disruption),
    ...optional('hash', annotations[Annotation.nodePoolHash]),
    ...optional('hashVersion', annotations[Annotation.nodePoolHashVersion]),
    conditions,
    ready: isConditionTrue(conditions, NodePoolConditionType.ready),
    deleting: np.metadata.deletionTimestamp !== undefined,
    ...optional('resources', statusResources),
    ...optional('nodes', np.status?.nodes),
    ...optional('nodeClassObservedGeneration', np.status?.nodeClassObservedGeneration),
  };
}

/**
 * The CRD's rules for a static NodePool, for manifests that did not pass through the API server
 * (`flotilla plan`, the simulator): only `limits.nodes`, and no `weight`.
 */
function checkStaticSpec(spec: z.infer<typeof nodePoolSchema>['spec'], object: string): void {
  if (spec.replicas === undefined) return;
  if (spec.weight !== undefined) {
    throw new ValidationError(object, 'spec.weight', "'weight' is not supported on static NodePools");
  }
  const other = Object.keys(spec.limits ?? {}).filter((k) => k !== 'nodes');
  if (other.length > 0) {
    throw new ValidationError(
      object,
      'spec.limits',
      `only 'limits.nodes' is supported on static NodePools (found ${other.join(', ')})`,
    );
  }
}

/** `spec.disruption` with the CRD's defaults where the object (as a client may hold it) lacks them. */
function toNodePoolDisruption(raw: z.infer<typeof nodePoolSchema>['spec']['disruption']): NodePoolDisruption {
  const defaults = DEFAULT_NODEPOOL_DISRUPTION;
  return {
    consolidationPolicy: raw?.consolidationPolicy ?? defaults.consolidationPolicy,
    consolidateAfter: raw?.consolidateAfter ?? defaults.consolidateAfter,
    budgets:
      raw?.budgets === undefined
        ? defaults.budgets
        : raw.budgets.map((b) => ({
            nodes: b.nodes ?? '10%',
            ...optional('schedule', b.schedule),
            ...optional('duration', b.duration),
            ...optional('reasons', b.reasons),
          })),
  };
}

/**
 * Converts NodeClaims; for each one that cannot be read, what is known of it (its name and, when
 * it is a string, `status.providerID`), so that garbage collection spares only its instance.
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
      unreadable.push({
        name: metadataString(raw, 'name') ?? '',
        ...(typeof providerId === 'string' && providerId !== '' ? { providerId } : {}),
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
  if (nodePoolName === undefined) {
    throw new ValidationError(
      object,
      `metadata.labels.${Label.nodePool}`,
      'missing: Flotilla manages only NodeClaims of a NodePool, and leaves this one alone',
    );
  }
  const s = nc.status;
  const capacity = resources(s?.capacity, object, 'status.capacity');
  const allocatable = resources(s?.allocatable, object, 'status.allocatable');
  return {
    name: nc.metadata.name,
    uid: nc.metadata.uid,
    nodePoolName,
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

/**
 * Merges condition updates by type. A condition whose status does not change keeps its
 * lastTransitionTime; one that changes (or is new) gets `now`. Reason and message always follow
 * the update. Conditions not updated are kept as they are.
 */
export function mergeConditions(
  current: readonly Condition[],
  updates: readonly ConditionUpdate[],
  now: Date,
  observedGeneration?: number,
): Condition[] {
  const out = [...current];
  for (const u of updates) {
    const i = out.findIndex((c) => c.type === u.type);
    const previous = i === -1 ? undefined : out[i];
    const next: Condition = {
      type: u.type,
      status: u.status,
      reason: u.reason,
      message: u.message,
      lastTransitionTime:
        previous !== undefined && previous.status === u.status && previous.lastTransitionTime !== ''
          ? previous.lastTransitionTime
          : toRfc3339Seconds(now),
      ...(observedGeneration === undefined ? {} : { observedGeneration }),
    };
    if (i === -1) out.push(next);
    else out[i] = next;
  }
  return out;
}

/** Conditions after removing the given types (as a status patch's `removeConditions` asks). */
export function withoutConditions(
  current: readonly Condition[],
  types: readonly string[] | undefined,
): Condition[] {
  return types === undefined || types.length === 0
    ? [...current]
    : current.filter((c) => !types.includes(c.type));
}

/** RFC 3339 with whole seconds, as Kubernetes writes `metav1.Time`. */
export function toRfc3339Seconds(instant: Date): string {
  return instant.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
