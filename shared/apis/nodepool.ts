import { z } from 'zod';
import {
  Annotation,
  isConditionTrue,
  NodePoolConditionType,
  OPERATORS,
  ValidationError,
} from '../core/index.ts';
import type { Condition } from '../ports/cloud.ts';
import {
  type ClusterNodePool,
  DEFAULT_NODEPOOL_DISRUPTION,
  type NodePoolDisruption,
} from '../ports/cluster.ts';
import { parseCostLimit } from './cost-limit.ts';
import { optional, toNodeSelectorRequirements, toTaint } from './fields.ts';
import {
  condition,
  metadata,
  nodeClaimSpecFields,
  parseWith,
  quantities,
  resources,
  stringMap,
} from './karpenter.ts';
import { parseSchedules } from './schedules.ts';

// Karpenter's v1 NodePool: parsed into the port's ClusterNodePool, with the CRD's defaults and its
// rules for static NodePools. Pure.

const nodePoolSchema = z.object({
  metadata,
  spec: z
    .object({
      template: z.object({
        metadata: z
          .object({ labels: stringMap.exactOptional(), annotations: stringMap.exactOptional() })
          .loose()
          .exactOptional(),
        spec: z.object(nodeClaimSpecFields).loose(),
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
                  reasons: z
                    .array(z.enum(['Empty', 'Drifted', 'Underutilized', 'Unhealthy']))
                    .exactOptional(),
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
      ...optional('costLimit', parseCostLimit(annotations, np.spec.replicas !== undefined)),
      ...optional('replicas', np.spec.replicas),
    },
    uid: np.metadata.uid,
    ...optional('generation', np.metadata.generation),
    nodeClassRef: t.spec.nodeClassRef,
    templateAnnotations: t.metadata?.annotations ?? {},
    annotations,
    expireAfter: t.spec.expireAfter ?? '720h',
    ...optional('terminationGracePeriod', t.spec.terminationGracePeriod),
    disruption: toNodePoolDisruption(np.spec.disruption, annotations),
    ...optional('schedules', parseSchedules(annotations, np.metadata.name, np.spec.replicas !== undefined)),
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

/** Flotilla's own: the NodePool annotation naming the IANA time zone its budget schedules are read in. */
export const BUDGET_TIME_ZONE_ANNOTATION = 'flotilla.io/budget-time-zone';

/**
 * `spec.disruption` with the CRD's defaults where the object (as a client may hold it) lacks them;
 * each budget with a schedule carries the time zone the NodePool's annotation names, if any.
 */
function toNodePoolDisruption(
  raw: z.infer<typeof nodePoolSchema>['spec']['disruption'],
  annotations: Readonly<Record<string, string>>,
): NodePoolDisruption {
  const defaults = DEFAULT_NODEPOOL_DISRUPTION;
  const timeZone = annotations[BUDGET_TIME_ZONE_ANNOTATION]?.trim();
  return {
    consolidationPolicy: raw?.consolidationPolicy ?? defaults.consolidationPolicy,
    consolidateAfter: raw?.consolidateAfter ?? defaults.consolidateAfter,
    budgets:
      raw?.budgets === undefined
        ? defaults.budgets
        : raw.budgets.map((b) => ({
            nodes: b.nodes ?? '10%',
            ...optional('schedule', b.schedule),
            ...(b.schedule === undefined || timeZone === undefined ? {} : { timeZone }),
            ...optional('duration', b.duration),
            ...optional('reasons', b.reasons),
          })),
  };
}
