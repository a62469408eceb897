// A planned bin as the NodeClaim to create.
import { Label } from '../labels.ts';
import { type NodeSelectorRequirement, Requirement } from '../requirements.ts';
import type { LaunchCandidate, NodeClaimPlan } from '../scheduling-types.ts';
import {
  cheapestPrice,
  type TType,
  type TypeFilter,
  truncate,
  typeFilterOf,
} from './instance-type-filter.ts';
import { withinReservation } from './limits.ts';
import { type Bin, compareStrings, type Template } from './model.ts';
import { addInto, type Dims } from './vectors.ts';

/**
 * The NodeClaim for a planned bin: its candidate types priced at their cheapest allowed offering,
 * within the limits reservation, cheapest first and truncated to `maxTypes` (minValues kept);
 * requests include the cheapest candidate's DaemonSet overhead.
 */
export function planNodeClaim(bin: Bin, dims: Dims, maxTypes: number, cache?: CandidateCache): NodeClaimPlan {
  const template = bin.template as Template;
  const chosen = chooseTypes(bin, maxTypes, cache);
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
  const requirements: NodeSelectorRequirement[] = reqs.toSelectors();
  const labels: Record<string, string> = { ...(template.pool.labels ?? {}), ...reqs.singleValuedLabels() };
  const requests = new Float64Array(bin.used);
  const cheapest = chosen[0]?.t;
  if (cheapest !== undefined) addInto(requests, cheapest.daemon);
  return {
    name: bin.name,
    nodePoolName: template.pool.name,
    nodeClassName: template.pool.nodeClassName,
    labels,
    requirements,
    taints: template.taints,
    startupTaints: template.startupTaints,
    pods: bin.placed,
    requests: dims.list(requests),
    instanceTypes: candidates,
    minValuesRelaxed: bin.minValuesRelaxed,
  };
}

type Priced = { readonly t: TType; readonly price: number };

/**
 * Candidate lists already chosen in one solve, per candidate-type list (claims re-packed alike
 * share one) and then per what else the choice reads: the offerings the requirements allow, the
 * reservation, the minValues requirements.
 */
export type CandidateCache = WeakMap<readonly TType[], Map<string, readonly Priced[]>>;

function chooseTypes(bin: Bin, maxTypes: number, cache: CandidateCache | undefined): readonly Priced[] {
  const f = typeFilterOf(bin.reqs);
  let byKey: Map<string, readonly Priced[]> | undefined;
  let key = '';
  if (cache !== undefined) {
    key = choiceKey(bin, f);
    byKey = cache.get(bin.types);
    const hit = byKey?.get(key);
    if (hit !== undefined) return hit;
  }
  const priced = bin.types
    .map((t) => ({ t, price: cheapestPrice(t, f) }))
    .filter((x) => Number.isFinite(x.price) && withinReservation(bin, x.t))
    .sort((a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name));
  const chosen = truncate(priced, bin.reqs, maxTypes);
  if (cache !== undefined) {
    if (byKey === undefined) {
      byKey = new Map();
      cache.set(bin.types, byKey);
    }
    byKey.set(key, chosen);
  }
  return chosen;
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
