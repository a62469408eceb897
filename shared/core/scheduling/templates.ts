// NodePool templates: the instance types each pool can launch with DaemonSet overhead applied,
// and the checks of a pod against a template that do not depend on what is already planned.
import type { DaemonSet } from '../cluster.ts';
import { computeAllocatable } from '../instance-type.ts';
import { INSTANCE_TYPE_LABEL_KEYS, Label, OFFERING_LABEL_KEYS } from '../labels.ts';
import { nodePoolRequirements, orderNodePools } from '../node-pool.ts';
import {
  admitsNewNode,
  computePodRequests,
  formatMatchFields,
  hostPortsConflict,
  podHostPorts,
} from '../pod.ts';
import { formatQuantity } from '../quantity.ts';
import { Requirements } from '../requirements.ts';
import type { SolveInput } from '../scheduling-types.ts';
import { firstUntolerated, formatTaint } from '../taints.ts';
import {
  COST_KEY,
  type CostContext,
  costContext,
  costLimited,
  maxOfferingMicros,
  RemainingLimits,
  toMicros,
} from './cost-limits.ts';
import {
  mergeRequirements,
  offeringAllowed,
  offeringValue,
  type TType,
  typeFilterOf,
  typeMatches,
} from './instance-type-filter.ts';
import {
  type CompiledDaemonSet,
  compareStrings,
  type Effective,
  type StaticNew,
  type Template,
} from './model.ts';
import { selectorToRequirements } from './pod-order.ts';
import { addInto, type Dims, fits, formatList } from './vectors.ts';

/**
 * How a NodePool's reason begins when its requirements leave no instance type with an available
 * offering (Karpenter's NoCompatibleInstanceTypes).
 */
export const NO_COMPATIBLE_INSTANCE_TYPES =
  'no instance type with an available offering matches the nodePool requirements';

/**
 * Compiles every NodePool (weight order) against its NodeClass's instance types: offerings the
 * pool allows, DaemonSet overhead per type, cheapest first.
 */
export function buildTemplates(
  input: SolveInput,
  dims: Dims,
  daemonSets: readonly CompiledDaemonSet[],
): { templates: Template[]; anyPreferNoSchedule: boolean; cost: CostContext | undefined } {
  const templates: Template[] = [];
  let anyPreferNoSchedule = false;
  const cost = costContext(input);
  orderNodePools(input.nodePools).forEach((pool, order) => {
    const byCost = costLimited(pool, cost);
    const reqs = nodePoolRequirements(pool);
    const taints = pool.taints ?? [];
    if (taints.some((t) => t.effect === 'PreferNoSchedule')) anyPreferNoSchedule = true;
    const f = typeFilterOf(reqs);
    const daemonPorts: string[] = [];
    const applicable = daemonSets.filter((ds) => {
      if (firstUntolerated(taints, ds.tolerations, true) !== undefined) return false;
      return ds.alternatives.some((alt) => mergeRequirements(reqs, alt, 'nodePool').ok);
    });
    for (const ds of applicable) daemonPorts.push(...ds.hostPorts);
    // A DaemonSet with a node-affinity alternative that asks nothing runs on every type of the
    // pool: only the others need the type's requirements (built per type, the costly part).
    const onEveryType = applicable.map((ds) =>
      ds.alternatives.some((alt) => [...alt.values()].every((r) => r.isAny())),
    );
    const types: TType[] = [];
    const raw = input.poolInstanceTypes?.get(pool.name) ?? input.instanceTypes.get(pool.nodeClassName) ?? [];
    for (const it of raw) {
      const offerings = it.offerings.filter((o) => offeringAllowed(o, f));
      if (offerings.length === 0) continue;
      const labels = it.labels;
      let ok = true;
      for (const r of f.labelReqs) {
        if (!r.admits(labels[r.key])) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      const daemon = new Float64Array(dims.names.length);
      let typeReqs: Requirements | undefined;
      applicable.forEach((ds, i) => {
        if (onEveryType[i] !== true) {
          typeReqs ??= reqs.intersect(Requirements.fromLabels(labels));
          const on = typeReqs;
          if (!ds.alternatives.some((alt) => mergeRequirements(on, alt, 'node').ok)) return;
        }
        addInto(daemon, ds.vec);
      });
      const alloc = dims.vec(computeAllocatable(it));
      for (let i = 0; i < alloc.length; i++) alloc[i] = (alloc[i] as number) - (daemon[i] as number);
      let basePrice = Number.POSITIVE_INFINITY;
      for (const o of offerings) basePrice = Math.min(basePrice, o.priceUsdPerHour);
      // Under a dollar limit a type also "holds" the highest price it may launch at.
      const capacity = byCost ? { ...it.capacity, [COST_KEY]: maxOfferingMicros(offerings) } : it.capacity;
      types.push({ it, labels, alloc, daemon, capacity, offerings, basePrice });
    }
    types.sort((a, b) => a.basePrice - b.basePrice || compareStrings(a.it.name, b.it.name));
    const own = Object.entries(pool.limits ?? {});
    const poolCost =
      pool.costLimit !== undefined && 'usdPerHour' in pool.costLimit ? pool.costLimit : undefined;
    if (poolCost !== undefined) own.push([COST_KEY, toMicros(poolCost.usdPerHour)]);
    const remaining = byCost
      ? new RemainingLimits(own, cost?.cluster)
      : pool.limits === undefined
        ? undefined
        : new Map(own);
    const costProblem =
      pool.costLimit !== undefined && 'problem' in pool.costLimit ? pool.costLimit.problem : undefined;
    templates.push({
      pool,
      order,
      reqs,
      taints,
      startupTaints: pool.startupTaints ?? [],
      types,
      daemonPorts,
      remaining,
      domainCache: new Map(),
      unavailableReason:
        costProblem !== undefined
          ? costProblem
          : raw.length === 0
            ? `no instance types for nodeClass "${pool.nodeClassName}"`
            : types.length === 0
              ? `${NO_COMPATIBLE_INSTANCE_TYPES} (${reqs.without(Label.nodePool)})`
              : undefined,
    });
  });
  return { templates, anyPreferNoSchedule, cost };
}

/** A DaemonSet's pod template: requests, tolerations, node affinity alternatives, host ports. */
export function compileDaemonSet(ds: DaemonSet, dims: Dims): CompiledDaemonSet {
  const pod = ds.template;
  const object = `daemonSet "${ds.namespace}/${ds.name}"`;
  const base = Requirements.parse(selectorToRequirements(pod.nodeSelector), {
    object,
    field: 'spec.template.spec.nodeSelector',
  });
  const terms =
    pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  // A term that asks for node names (matchFields In) never holds on a new node.
  const alternatives =
    terms.length === 0
      ? [base]
      : terms.flatMap((t, i) =>
          admitsNewNode(t)
            ? [
                base.intersect(
                  Requirements.parse(t.matchExpressions ?? [], {
                    object,
                    field: `spec.template.spec.affinity.nodeAffinity.required.nodeSelectorTerms[${i}]`,
                  }),
                ),
              ]
            : [],
        );
  return {
    namespace: ds.namespace,
    name: ds.name,
    vec: dims.vec(computePodRequests(pod)),
    tolerations: pod.tolerations ?? [],
    alternatives,
    hostPorts: podHostPorts(pod),
  };
}

/** Domains a template can offer for a key (zones, capacity types and partitions from offerings). */
export function templateDomains(t: Template, key: string): readonly string[] {
  const cached = t.domainCache.get(key);
  if (cached !== undefined) return cached;
  const values = new Set<string>();
  if (OFFERING_LABEL_KEYS.has(key)) {
    for (const tt of t.types)
      for (const o of tt.offerings) {
        const v = offeringValue(o, key);
        if (v !== undefined) values.add(v);
      }
  } else {
    const r = t.reqs.get(key);
    const finite = r?.finiteValues();
    if (finite !== undefined) for (const v of finite) values.add(v);
    else if (INSTANCE_TYPE_LABEL_KEYS.has(key)) {
      for (const tt of t.types) {
        const v = tt.labels[key];
        if (v !== undefined && (r === undefined || r.has(v))) values.add(v);
      }
    }
  }
  const out = [...values].sort();
  t.domainCache.set(key, out);
  return out;
}

/**
 * The parts of a new-claim check that depend only on the pod's constraints and the pool: taints
 * (unless `checkTaints` is false), requirements, DaemonSet host ports, and instance types that
 * fit the pod alone. A failure carries the reason reported for this NodePool.
 */
export function computeStaticNew(ec: Effective, t: Template, dims: Dims, checkTaints = true): StaticNew {
  if (t.unavailableReason !== undefined) return { ok: false, reason: t.unavailableReason };
  if (ec.nodeFields !== undefined && !admitsNewNode(ec.nodeFields)) {
    return {
      ok: false,
      reason: `node affinity matchFields ${formatMatchFields(ec.nodeFields)} admits only existing nodes`,
    };
  }
  const taint = checkTaints
    ? firstUntolerated(t.taints, ec.shape.pod.tolerations ?? [], ec.ignorePreferNoSchedule)
    : undefined;
  if (taint !== undefined) return { ok: false, reason: `taint ${formatTaint(taint)} not tolerated` };
  const m = mergeRequirements(t.reqs, ec.reqs, 'nodePool');
  if (!m.ok) return { ok: false, reason: m.reason };
  const port = portsConflict(ec.shape.hostPorts, t.daemonPorts);
  if (port !== undefined) return { ok: false, reason: `host port ${port} is taken by a DaemonSet` };
  const f = typeFilterOf(m.reqs);
  const req = ec.shape.vec;
  const zero = new Float64Array(req.length);
  // The pool's types all match its own requirements (see buildTemplates).
  const compatible = m.reqs === t.reqs ? t.types : t.types.filter((tt) => typeMatches(tt, f));
  const types = compatible.filter((tt) => fits(zero, req, tt.alloc));
  if (types.length > 0) return { ok: true, reqs: m.reqs, types };
  if (compatible.length === 0) {
    const instanceReqs = [...m.reqs.values()].filter(
      (r) => INSTANCE_TYPE_LABEL_KEYS.has(r.key) && !r.isAny(),
    );
    return {
      ok: false,
      reason: `no instance type matches ${instanceReqs.map((r) => r.toString()).join(', ') || 'the requirements'}`,
    };
  }
  for (let i = 0; i < req.length; i++) {
    const need = req[i] as number;
    if (need <= 0) continue;
    if (!compatible.some((tt) => (tt.alloc[i] as number) >= need)) {
      const name = dims.names[i] as string;
      return { ok: false, reason: `no instance type has ${formatQuantity(name, need)} ${name}` };
    }
  }
  return {
    ok: false,
    reason: `no instance type has ${formatList(dims, req)} together (after DaemonSet overhead)`,
  };
}

/** The first of `a` that conflicts with a host port in `b`. */
export function portsConflict(a: readonly string[], b: readonly string[]): string | undefined {
  for (const x of a) for (const y of b) if (hostPortsConflict(x, y)) return x;
  return undefined;
}
