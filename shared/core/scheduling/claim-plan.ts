// A planned bin as the NodeClaim to create.
import { Label, type Labels } from '../labels.ts';
import { type NodeSelectorRequirement, Requirement } from '../requirements.ts';
import type { LaunchCandidate, NodeClaimPlan } from '../scheduling-types.ts';
import { cheapestPrice, type TType, truncate, typeFilterOf } from './instance-type-filter.ts';
import { withinReservation } from './limits.ts';
import { type Bin, compareStrings, type Template } from './model.ts';
import { addInto, type Dims } from './vectors.ts';

/**
 * The NodeClaim for a planned bin: its candidate types priced at their cheapest allowed offering,
 * within the limits reservation, cheapest first and truncated to `maxTypes` (minValues kept);
 * requests include the cheapest candidate's DaemonSet overhead.
 */
export function planNodeClaim(bin: Bin, dims: Dims, maxTypes: number, cache?: PlanCache): NodeClaimPlan {
  const template = bin.template as Template;
  const key = cache?.keyOf(bin);
  const chosen = chooseTypes(bin, maxTypes, cache, key);
  let described = key === undefined ? undefined : cache?.described.get(chosen)?.get(key);
  if (described === undefined) {
    described = describe(bin, template, chosen);
    if (cache !== undefined && key !== undefined) {
      let byKey = cache.described.get(chosen);
      if (byKey === undefined) {
        byKey = new Map();
        cache.described.set(chosen, byKey);
      }
      byKey.set(key, described);
    }
  }
  const requests = new Float64Array(bin.used);
  const cheapest = chosen[0]?.t;
  if (cheapest !== undefined) addInto(requests, cheapest.daemon);
  return {
    name: bin.name,
    nodePoolName: template.pool.name,
    nodeClassName: template.pool.nodeClassName,
    labels: described.labels,
    requirements: described.requirements,
    taints: template.taints,
    startupTaints: template.startupTaints,
    pods: bin.placed,
    requests: dims.list(requests),
    instanceTypes: described.candidates,
    minValuesRelaxed: bin.minValuesRelaxed,
  };
}

type Priced = { readonly t: TType; readonly price: number };

/** What a NodeClaim's candidates make of its requirements and labels. */
interface Described {
  readonly candidates: readonly LaunchCandidate[];
  readonly requirements: readonly NodeSelectorRequirement[];
  readonly labels: Labels;
}

function describe(bin: Bin, template: Template, chosen: readonly Priced[]): Described {
  const candidates: LaunchCandidate[] = chosen.map((x) => ({
    name: x.t.it.name,
    priceUsdPerHour: x.price,
  }));
  const reqs = bin.reqs.without(Label.hostname).replacing([
    Requirement.in(
      Label.instanceType,
      candidates.map((c) => c.name),
    ),
  ]);
  const labels: Labels = { ...(template.pool.labels ?? {}), ...reqs.singleValuedLabels() };
  return { candidates, requirements: reqs.toSelectors(), labels };
}

/**
 * What the NodeClaims of one solve share once planned. Claims whose requirements are the same
 * objects, their hostnames apart, in the same NodePool and with the same
 * reservation against its limits (claims re-packed alike, claims opened for one pod spec) get
 * the same candidate list, per candidate-type list; and with the same candidate list, the same
 * requirements and labels.
 */
export class PlanCache {
  readonly chosen = new WeakMap<readonly TType[], Map<string, readonly Priced[]>>();
  readonly described = new WeakMap<readonly Priced[], Map<string, Described>>();
  private readonly ids = new WeakMap<Requirement, number>();
  private nextId = 0;

  /** Every type of a NodePool priced and sorted as `priceAndSort` would, per key without the reservation. */
  private readonly sortedAll = new Map<string, readonly Priced[]>();

  /**
   * `priceAndSort(bin)` taken from the NodePool's types priced and sorted once per requirements:
   * the claim's types, in that order. Undefined when one of them is not the NodePool's.
   */
  fromSorted(bin: Bin, key: string): Priced[] | undefined {
    const template = bin.template as Template;
    const reqsKey = key.split(';', 1)[0] as string;
    let all = this.sortedAll.get(reqsKey);
    if (all === undefined) {
      all = priceAndSort(bin, template.types, false);
      this.sortedAll.set(reqsKey, all);
    }
    const mine = new Set(bin.types);
    const out: Priced[] = [];
    let seen = 0;
    for (const x of all) {
      if (!mine.has(x.t)) continue;
      seen += 1;
      if (Number.isFinite(x.price) && withinReservation(bin, x.t)) out.push(x);
    }
    return seen === mine.size ? out : undefined;
  }

  /** The claim's NodePool, requirement objects (its hostname apart) and reservation. */
  keyOf(bin: Bin): string {
    let key = `${(bin.template as Template).order}`;
    for (const r of bin.reqs.values()) {
      if (r.key === Label.hostname) continue;
      let id = this.ids.get(r);
      if (id === undefined) {
        id = this.nextId++;
        this.ids.set(r, id);
      }
      key += `,${id}`;
    }
    if (bin.reserve !== undefined) for (const [k, v] of bin.reserve) key += `;${k}=${v}`;
    return key;
  }
}

/** The claim's candidate types that have an allowed offering and fit its reservation, cheapest first. */
function priceAndSort(bin: Bin, types: readonly TType[] = bin.types, keep = true): Priced[] {
  const f = typeFilterOf(bin.reqs);
  return types
    .map((t) => ({ t, price: cheapestPrice(t, f) }))
    .filter((x) => !keep || (Number.isFinite(x.price) && withinReservation(bin, x.t)))
    .sort((a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name));
}

function chooseTypes(
  bin: Bin,
  maxTypes: number,
  cache: PlanCache | undefined,
  key: string | undefined,
): readonly Priced[] {
  // Everything the choice reads besides the candidate-type list is in the key.
  const byKey = cache?.chosen.get(bin.types);
  const hit = key === undefined ? undefined : byKey?.get(key);
  if (hit !== undefined) return hit;
  const priced =
    (cache === undefined || key === undefined ? undefined : cache.fromSorted(bin, key)) ?? priceAndSort(bin);
  const chosen = truncate(priced, bin.reqs, maxTypes);
  if (cache !== undefined && key !== undefined) {
    if (byKey === undefined) cache.chosen.set(bin.types, new Map([[key, chosen]]));
    else byKey.set(key, chosen);
  }
  return chosen;
}
