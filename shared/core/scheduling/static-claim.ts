// The NodeClaim a static NodePool launches for one of its replicas: no pods, the pool's template
// alone. The same templates and claim planning as the scheduler's, so a static node is priced,
// truncated and given DaemonSet overhead exactly as a node planned for pods would be.
import type { DaemonSet } from '../cluster.ts';
import type { InstanceType } from '../instance-type.ts';
import { Label } from '../labels.ts';
import type { NodePool } from '../node-pool.ts';
import { Requirement } from '../requirements.ts';
import type { NodeClaimPlan, SolveOptions } from '../scheduling-types.ts';
import { planNodeClaim } from './claim-plan.ts';
import { minValuesShortfall, typeFilterOf, typeMatches } from './instance-type-filter.ts';
import { Bin } from './model.ts';
import { validatedRequests } from './pod-order.ts';
import { buildTemplates, compileDaemonSet } from './templates.ts';
import { Dims, fits } from './vectors.ts';

export interface StaticClaimInput {
  readonly pool: NodePool;
  /** The instance types of the pool's NodeClass. */
  readonly instanceTypes: readonly InstanceType[];
  /** Their pods are counted as overhead on the node, as for any new node. */
  readonly daemonSets?: readonly DaemonSet[];
  readonly options?: Pick<SolveOptions, 'maxInstanceTypes' | 'minValuesPolicy'>;
}

/** The plan of one static replica, or why the pool cannot launch one. */
export type StaticClaimPlan =
  | { readonly ok: true; readonly plan: NodeClaimPlan }
  | { readonly ok: false; readonly reason: string };

/**
 * Plans one NodeClaim for a static NodePool: every instance type the pool's requirements admit
 * with an available offering and room for its DaemonSets, cheapest first (at most
 * `maxInstanceTypes`, minValues kept), so the launch takes the cheapest offering that satisfies the
 * pool. Pure.
 * @throws InvalidRequirementError / ValidationError for a malformed pool (as `solve` does).
 */
export function planStaticNodeClaim(input: StaticClaimInput): StaticClaimPlan {
  const { pool } = input;
  const dims = new Dims();
  for (const ds of input.daemonSets ?? []) dims.add(validatedRequests(ds.template, 'daemonSet'));
  for (const t of input.instanceTypes) dims.add(t.capacity);
  const daemonSets = (input.daemonSets ?? []).map((ds) => compileDaemonSet(ds, dims));
  const { templates } = buildTemplates(
    {
      pods: [],
      nodePools: [pool],
      instanceTypes: new Map([[pool.nodeClassName, input.instanceTypes]]),
      nowMs: 0,
    },
    dims,
    daemonSets,
  );
  const template = templates[0];
  if (template === undefined) return { ok: false, reason: `nodePool "${pool.name}" has no template` };
  if (template.unavailableReason !== undefined) return { ok: false, reason: template.unavailableReason };
  const zero = new Float64Array(dims.names.length);
  const f = typeFilterOf(template.reqs);
  const types = template.types.filter((t) => typeMatches(t, f) && fits(zero, zero, t.alloc));
  if (types.length === 0) {
    return { ok: false, reason: 'no instance type has room for the DaemonSets of the nodePool' };
  }
  const shortfall = minValuesShortfall(types, template.reqs);
  if (shortfall !== undefined && input.options?.minValuesPolicy !== 'BestEffort') {
    return { ok: false, reason: shortfall };
  }
  // The name is the caller's (derived from its decision); the hostname requirement only keeps the
  // bin's requirements in the scheduler's shape and is dropped from the plan.
  const bin = new Bin(
    'claim',
    pool.name,
    template.reqs.with(Requirement.in(Label.hostname, [pool.name])),
    undefined,
    template.taints,
    new Float64Array(dims.names.length),
    undefined,
    template,
    false,
  );
  bin.types = types;
  bin.minValuesRelaxed = shortfall !== undefined;
  return { ok: true, plan: planNodeClaim(bin, dims, input.options?.maxInstanceTypes ?? 60) };
}
