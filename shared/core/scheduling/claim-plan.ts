// A planned bin as the NodeClaim to create.
import { Label, type Labels } from '../labels.ts';
import { type NodeSelectorRequirement, Requirement, type Requirements } from '../requirements.ts';
import type { LaunchCandidate, NodeClaimPlan } from '../scheduling-types.ts';
import {
  cheapestPrice,
  relaxMinValues,
  type TType,
  type TypeFilter,
  truncate,
  typeFilterOf,
} from './instance-type-filter.ts';
import { hasMinValues, withinReservation } from './limits.ts';
import { type Bin, compareStrings, type Template } from './model.ts';
import { addInto, type Dims } from './vectors.ts';

/**
 * The NodeClaim for a planned bin: its candidate types priced at their cheapest allowed offering,
 * within the limits reservation, cheapest first and truncated to `maxTypes` (minValues kept);
 * requests include the cheapest candidate's DaemonSet overhead.
 */
export function planNodeClaim(bin: Bin, dims: Dims, maxTypes: number, cache?: PlanCache): NodeClaimPlan {
  const template = bin.template as Template;
  const { chosen, again } = chooseTypes(bin, maxTypes, cache);
  // Only a candidate list an earlier claim was planned with is worth the key.
  const key = again ? cache?.describedKey(bin) : undefined;
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
  const named = bin.reqs.without(Label.hostname).replacing([
    Requirement.in(
      Label.instanceType,
      candidates.map((c) => c.name),
    ),
  ]);
  const reqs = bin.minValuesRelaxed
    ? relaxMinValues(
        named,
        chosen.map((x) => x.t),
      )
    : named;
  const labels: Labels = { ...(template.pool.labels ?? {}), ...reqs.singleValuedLabels() };
  return { candidates, requirements: reqs.toSelectors(), labels };
}

/**
 * What the NodeClaims of one solve share once planned: the candidate lists already chosen, per
 * candidate-type list (claims re-packed alike share one) and then per what else the choice reads
 * (the offerings the requirements allow, the reservation, the minValues requirements); and the
 * requirements and labels per candidate list chosen, for claims whose requirements are the same
 * objects, their hostnames apart.
 */
export class PlanCache {
  readonly chosen = new WeakMap<readonly TType[], Map<string, readonly Priced[]>>();
  /**
   * The lists chosen per candidate list and reservation object, with the requirements they were
   * chosen under. Claims planned alike share these objects (their requirement objects too, their
   * hostnames apart), so most claims find their list without building `choiceKey`.
   */
  readonly chosenAlike = new WeakMap<readonly TType[], Map<object, Alike[]>>();
  readonly described = new WeakMap<readonly Priced[], Map<string, Described>>();
  private readonly ids = new WeakMap<Requirement, number>();
  private nextId = 0;

  /** The claim's NodePool and requirement objects, its hostname apart. */
  describedKey(bin: Bin): string {
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
    return key;
  }
}

/** A candidate list chosen for a claim with these requirements. */
interface Alike {
  readonly reqs: Requirements;
  readonly chosen: readonly Priced[];
}

const NO_RESERVE = {};
const ALIKE_KEPT = 8;

/**
 * True when `a` and `b` hold the same requirement objects, hostnames apart. A hostname requirement
 * with minValues counts (the choice reads it), so claims with one never match here.
 */
function sameObjects(a: Requirements, b: Requirements): boolean {
  if (a.size !== b.size) return false;
  if (a.get(Label.hostname)?.minValues !== undefined || b.get(Label.hostname)?.minValues !== undefined) {
    return false;
  }
  for (const r of a.values()) if (r.key !== Label.hostname && b.get(r.key) !== r) return false;
  for (const r of b.values()) if (r.key !== Label.hostname && a.get(r.key) !== r) return false;
  return true;
}

/** The claim's candidates; `again` when an earlier claim of the solve was given the same list. */
function chooseTypes(
  bin: Bin,
  maxTypes: number,
  cache: PlanCache | undefined,
): { chosen: readonly Priced[]; again: boolean } {
  let alike: Alike[] | undefined;
  if (cache !== undefined) {
    let byReserve = cache.chosenAlike.get(bin.types);
    if (byReserve === undefined) {
      byReserve = new Map();
      cache.chosenAlike.set(bin.types, byReserve);
    }
    const reserve = bin.reserve ?? NO_RESERVE;
    alike = byReserve.get(reserve);
    if (alike === undefined) {
      alike = [];
      byReserve.set(reserve, alike);
    }
    for (const a of alike) if (sameObjects(a.reqs, bin.reqs)) return { chosen: a.chosen, again: true };
    // Only the first few requirement sets are kept per list and reservation: claims that differ
    // more than that take the key.
    if (alike.length >= ALIKE_KEPT) alike = undefined;
  }
  const f = typeFilterOf(bin.reqs);
  let byKey: Map<string, readonly Priced[]> | undefined;
  let key = '';
  if (cache !== undefined) {
    key = choiceKey(bin, f);
    byKey = cache.chosen.get(bin.types);
    const hit = byKey?.get(key);
    if (hit !== undefined) {
      alike?.push({ reqs: bin.reqs, chosen: hit });
      return { chosen: hit, again: true };
    }
  }
  const priced = pricedCandidates(bin, f, hasMinValues(bin) ? Number.POSITIVE_INFINITY : maxTypes).sort(
    (a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name),
  );
  const chosen = truncate(priced, bin.reqs, maxTypes);
  if (cache !== undefined) {
    if (byKey === undefined) {
      byKey = new Map();
      cache.chosen.set(bin.types, byKey);
    }
    byKey.set(key, chosen);
    alike?.push({ reqs: bin.reqs, chosen });
  }
  return { chosen, again: false };
}

/**
 * The claim's candidates that launch within its reservation, each at its cheapest allowed
 * offering, in list order: every one that may rank among the `enough` cheapest (ties included),
 * and perhaps some that do not. No offering costs less than its type's base price, so the walk
 * stops where no type left in the list has a base price up to the `enough`-th lowest price found.
 */
function pricedCandidates(bin: Bin, f: TypeFilter, enough: number): Priced[] {
  const types = bin.types;
  const out: Priced[] = [];
  if (types.length <= enough || !(enough >= 1)) {
    for (const t of types) {
      const price = cheapestPrice(t, f);
      if (Number.isFinite(price) && withinReservation(bin, t)) out.push({ t, price });
    }
    return out;
  }
  // The lowest base price from each position on.
  const floor = new Float64Array(types.length + 1).fill(Number.POSITIVE_INFINITY);
  for (let i = types.length - 1; i >= 0; i--) {
    floor[i] = Math.min(floor[i + 1] as number, (types[i] as TType).basePrice);
  }
  // The `enough` lowest prices so far, ascending.
  const lowest: number[] = [];
  for (let i = 0; i < types.length; i++) {
    if (lowest.length === enough && (floor[i] as number) > (lowest[enough - 1] as number)) break;
    const t = types[i] as TType;
    const price = cheapestPrice(t, f);
    if (!Number.isFinite(price) || !withinReservation(bin, t)) continue;
    out.push({ t, price });
    if (lowest.length === enough && price >= (lowest[enough - 1] as number)) continue;
    let at = lowest.length === enough ? enough - 1 : lowest.length;
    while (at > 0 && (lowest[at - 1] as number) > price) {
      lowest[at] = lowest[at - 1] as number;
      at--;
    }
    lowest[at] = price;
  }
  return out;
}

/** Everything besides the candidate types that `chooseTypes` reads, as a key. */
function choiceKey(bin: Bin, f: TypeFilter): string {
  const part = (r: Requirement | undefined): string =>
    r === undefined
      ? '*'
      : `${r.complement}:${r.allowsAbsent}:${r.greaterThan}:${r.lessThan}:${[...r.values].join(',')}`;
  const offerings = [f.zone, f.capacityType, f.partition, f.interruptible].map(part).join('|');
  const reserve = bin.reserve === undefined ? '-' : [...bin.reserve].join(';');
  const minValues = [...bin.reqs.values()]
    .filter((r) => r.minValues !== undefined)
    .map((r) => `${r.minValues}:${r}`)
    .join(';');
  return `${offerings}/${reserve}/${minValues}`;
}
