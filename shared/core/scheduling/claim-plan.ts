// A planned bin as the NodeClaim to create.
import { Label } from '../labels.ts';
import { type NodeSelectorRequirement, Requirement } from '../requirements.ts';
import type { LaunchCandidate, NodeClaimPlan } from '../scheduling-types.ts';
import { cheapestPrice, truncate, typeFilterOf } from './instance-type-filter.ts';
import { withinReservation } from './limits.ts';
import { type Bin, compareStrings, type Template } from './model.ts';
import { addInto, type Dims } from './vectors.ts';

/**
 * The NodeClaim for a planned bin: its candidate types priced at their cheapest allowed offering,
 * within the limits reservation, cheapest first and truncated to `maxTypes` (minValues kept);
 * requests include the cheapest candidate's DaemonSet overhead.
 */
export function planNodeClaim(bin: Bin, dims: Dims, maxTypes: number): NodeClaimPlan {
  const template = bin.template as Template;
  const f = typeFilterOf(bin.reqs);
  const priced = bin.types
    .map((t) => ({ t, price: cheapestPrice(t, f) }))
    .filter((x) => Number.isFinite(x.price) && withinReservation(bin, x.t))
    .sort((a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name));
  const chosen = truncate(priced, bin.reqs, maxTypes);
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
