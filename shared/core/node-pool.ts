import { ValidationError } from './errors.ts';
import { Label, type Labels } from './labels.ts';
import { type NodeSelectorRequirement, Requirement, Requirements } from './requirements.ts';
import type { ResourceList } from './resources.ts';
import type { Taint } from './taints.ts';

/** A NodePool as the scheduler sees it (`karpenter.sh/v1` `spec`, quantities already integers). */
export interface NodePool {
  readonly name: string;
  /** 0..100; higher is tried first, ties by name descending. @default 0 */
  readonly weight?: number;
  /** Name of the NodeClass; selects the instance types (SolveInput.instanceTypes). */
  readonly nodeClassName: string;
  /** `spec.template.metadata.labels`, put on every node. */
  readonly labels?: Labels;
  readonly requirements: readonly NodeSelectorRequirement[];
  /** Pods must tolerate these. */
  readonly taints?: readonly Taint[];
  /** Removed by another actor after start-up; pods need not tolerate them. */
  readonly startupTaints?: readonly Taint[];
  /**
   * Upper bounds on the summed capacity of the pool's nodes, including in-flight ones
   * (`cpu` millicores, `memory` bytes, `nodes` count, any extended resource).
   */
  readonly limits?: ResourceList;
  /**
   * Flotilla's own dollar limit (the annotation `flotilla.io/max-cost-per-hour`): the most the
   * pool's NodeClaims may cost together, in USD per hour; or why the annotation cannot be read
   * (the pool then launches nothing for pods).
   */
  readonly costLimit?: { readonly usdPerHour: number } | { readonly problem: string };
  /**
   * What lowered `limits` below `spec.limits` (a schedule window, Flotilla's own), said beside a
   * limit in the reason a pod is told.
   */
  readonly limitsHeldBy?: string;
  /**
   * `spec.replicas`: a static NodePool (Karpenter's alpha static capacity) keeps exactly this many
   * nodes whatever the pods; the provisioner never launches for pods on it and voluntary disruption
   * leaves its nodes alone. Unset for a dynamic pool.
   */
  readonly replicas?: number;
  /** What set `replicas` in place of `spec.replicas` (a schedule window, Flotilla's own). */
  readonly replicasHeldBy?: string;
}

/** Whether a NodePool is static (`spec.replicas` set): its size follows replicas, not pods. */
export function isStaticNodePool(pool: Pick<NodePool, 'replicas'>): boolean {
  return pool.replicas !== undefined;
}

/** NodePools in the order the scheduler tries them: weight descending, then name descending. */
export function orderNodePools<T extends Pick<NodePool, 'name' | 'weight'>>(pools: readonly T[]): T[] {
  return [...pools].sort(
    (a, b) => (b.weight ?? 0) - (a.weight ?? 0) || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0),
  );
}

/**
 * The requirements every node of the pool satisfies: the pool's requirements, its template
 * labels as `In [value]`, and `karpenter.sh/nodepool In [name]`.
 * @throws InvalidRequirementError for a malformed or self-contradictory requirement.
 * @throws ValidationError when a template label contradicts the requirements or the weight is
 *   out of range.
 */
export function nodePoolRequirements(pool: NodePool): Requirements {
  const object = `nodePool "${pool.name}"`;
  if (pool.weight !== undefined && (!Number.isInteger(pool.weight) || pool.weight < 0 || pool.weight > 100)) {
    throw new ValidationError(object, 'spec.weight', `${pool.weight} must be an integer from 0 to 100`);
  }
  let reqs = Requirements.parse(
    pool.requirements,
    { object, field: 'spec.template.spec.requirements' },
    true,
  );
  for (const [key, value] of Object.entries(pool.labels ?? {})) {
    if (key === Label.nodePool || key === Label.hostname) {
      throw new ValidationError(object, `spec.template.metadata.labels.${key}`, 'this label is restricted');
    }
    const merged = reqs.with(Requirement.in(key, [value]));
    if (merged.get(key)?.isEmpty()) {
      throw new ValidationError(
        object,
        `spec.template.metadata.labels.${key}`,
        `label ${key}=${value} contradicts requirement ${reqs.get(key)}`,
      );
    }
    reqs = merged;
  }
  return reqs.with(Requirement.in(Label.nodePool, [pool.name]));
}
