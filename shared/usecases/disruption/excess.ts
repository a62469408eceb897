import {
  computeAllocatable,
  computePodRequests,
  INSTANCE_TYPE_LABEL_KEYS,
  type InstanceType,
  Label,
  type NodePool,
  nodePoolRequirements,
  type Pod,
  type Requirements,
  ValidationError,
} from '../../core/index.ts';
import type { DisruptionCandidate, MethodContext } from './method.ts';

// What a node pays beyond what its pods need, priced on the instance types its NodePool may
// launch. A pod's fair cost is the least share of one node it could take: over those types, the
// price times the largest fraction of the type's allocatable (cpu, memory, pods, any other
// resource) it requests. A node's excess is its price less its pods' fair costs. A node filled to
// the brim in one resource can still be wasteful: a memory-optimised type holding cpu-bound pods
// pays for memory nothing uses, which the largest-fraction utilization does not show. DaemonSet
// pods are not among a candidate's reschedulable pods: the room they take counts as excess, more on
// small nodes, which is room fewer, larger nodes do save. Pure.

/** The $/hour of the cheapest offering of `type` the NodePool's requirements allow. */
function allowedPrice(type: InstanceType, reqs: Requirements): number {
  for (const r of reqs.values()) {
    if (r.key === Label.zone || r.key === Label.capacityType || !INSTANCE_TYPE_LABEL_KEYS.has(r.key))
      continue;
    if (!r.admits(type.labels[r.key])) return Number.POSITIVE_INFINITY;
  }
  const zone = reqs.get(Label.zone);
  const capacityType = reqs.get(Label.capacityType);
  let best = Number.POSITIVE_INFINITY;
  for (const o of type.offerings) {
    if (!o.available || o.priceUsdPerHour >= best) continue;
    if (zone !== undefined && !zone.admits(o.zone)) continue;
    if (capacityType !== undefined && !capacityType.admits(o.capacityType)) continue;
    best = o.priceUsdPerHour;
  }
  return best;
}

/**
 * The NodePool's requirements, or undefined when they do not read: such a pool launches nothing
 * (the provisioner reports it), so its pods have no fair cost and its nodes no excess.
 */
function poolRequirements(pool: NodePool): Requirements | undefined {
  try {
    return nodePoolRequirements(pool);
  } catch (error) {
    if (error instanceof ValidationError) return undefined;
    throw error;
  }
}

interface PricedType {
  readonly price: number;
  readonly allocatable: Readonly<Record<string, number>>;
}

/**
 * The least $/hour a pod requesting `requests` costs as a share of one node of `types`: the price
 * times the largest fraction of allocatable it takes (`computePodRequests` counts the pod itself
 * against the node's `pods`). Infinite when no type holds it.
 */
export function fairPodCost(
  requests: Readonly<Record<string, number>>,
  types: readonly PricedType[],
): number {
  let best = Number.POSITIVE_INFINITY;
  for (const t of types) {
    let share = 0;
    for (const [resource, amount] of Object.entries(requests)) {
      if (amount <= 0) continue;
      const have = t.allocatable[resource] ?? 0;
      share = have <= 0 ? Number.POSITIVE_INFINITY : Math.max(share, amount / have);
    }
    if (share <= 1) best = Math.min(best, t.price * share);
  }
  return best;
}

/**
 * The share of each candidate's $/hour that its pods do not need: (price − the pods' fair costs) /
 * price, 0 when there is no price or a pod has no fair cost (nothing to compare with). The
 * instance types of each NodePool, and each pod shape's fair cost, are priced once per call.
 */
export function makeExcessShare(context: MethodContext): (candidate: DisruptionCandidate) => number {
  const typesByPool = new Map<string, PricedType[]>();
  const costByShape = new Map<string, number>();
  const shares = new Map<string, number>();
  const typesOf = (c: DisruptionCandidate): readonly PricedType[] => {
    const pool = c.nodePool.pool;
    let types = typesByPool.get(pool.name);
    if (types === undefined) {
      const reqs = poolRequirements(pool);
      types =
        reqs === undefined
          ? []
          : context.instanceTypes(pool.name, pool.nodeClassName).flatMap((t) => {
              const price = allowedPrice(t, reqs);
              return Number.isFinite(price) ? [{ price, allocatable: computeAllocatable(t) }] : [];
            });
      typesByPool.set(pool.name, types);
    }
    return types;
  };
  const podCost = (c: DisruptionCandidate, pod: Pod): number => {
    const requests = computePodRequests(pod);
    const key = `${c.nodePool.pool.name}\n${JSON.stringify(Object.entries(requests).sort(([a], [b]) => a.localeCompare(b)))}`;
    let cost = costByShape.get(key);
    if (cost === undefined) {
      cost = fairPodCost(requests, typesOf(c));
      costByShape.set(key, cost);
    }
    return cost;
  };
  return (c) => {
    const known = shares.get(c.nodeClaim.name);
    if (known !== undefined) return known;
    const price = c.pricePerHour ?? 0;
    let fair = 0;
    for (const pod of c.reschedulablePods) fair += podCost(c, pod);
    const share = price > 0 && Number.isFinite(fair) ? Math.max(0, price - fair) / price : 0;
    shares.set(c.nodeClaim.name, share);
    return share;
  };
}
