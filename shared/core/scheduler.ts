import { AffinityPartners } from './scheduling/affinity-partners.ts';
import { attempt } from './scheduling/attempt.ts';
import { PlanCache, planNodeClaim } from './scheduling/claim-plan.ts';
import { addExistingBins, placeNominated } from './scheduling/existing-bins.ts';
import { HeadroomIndex } from './scheduling/headroom.ts';
import { improveClaims } from './scheduling/improve.ts';
import { compareStrings, type PodState, type RelaxState } from './scheduling/model.ts';
import { NewClaims } from './scheduling/new-claims.ts';
import { comparePodStates, refusesKarpenterNodes, relax, validatedRequests } from './scheduling/pod-order.ts';
import { dynamicResourcesValue, unschedulableValue } from './scheduling/reasons.ts';
import { assignReservations } from './scheduling/reservations.ts';
import { SolveState } from './scheduling/solve-state.ts';
import { buildTemplates, compileDaemonSet } from './scheduling/templates.ts';
import type { SolveInput, SolveResult, UnschedulablePod } from './scheduling-types.ts';

/**
 * Decides, for a batch of pending pods, which fit existing or in-flight capacity and which new
 * NodeClaims to create, following Karpenter v1's provisioning simulation: pods largest first;
 * existing nodes, then NodeClaims planned in this run, then a new NodeClaim from the first
 * NodePool (by weight) that can host the pod; preferences relaxed one step at a time. Pods that
 * require `karpenter.sh/nodepool DoesNotExist` are ignored, as Karpenter ignores them. Pods with
 * Dynamic Resource Allocation requirements are unschedulable without being tried, and DaemonSets
 * with them add no overhead, as Karpenter with its default `IGNORE_DRA_REQUESTS=true`. Then,
 * unless `options.repack` is false, NodeClaims whose pods nothing ties to them are re-packed when
 * that is cheaper (see scheduling/improve.ts). In strict reserved-offering mode, pods whose
 * NodeClaim found its capacity reservations taken wait for the next loop, and the rest of the plan
 * is made as if they were not pending.
 *
 * Pure and deterministic. A pod nothing can host is a value in `unschedulable`.
 * @throws ValidationError (or a subclass) when the input is malformed: an unknown operator, a
 *   bad bound, a NodePool whose requirements contradict each other, a non-integer request.
 */
export function solve(input: SolveInput): SolveResult {
  let run = solveOnce(input);
  // Strict mode leaves out the NodeClaims whose capacity reservations the plan's other NodeClaims
  // took. The plan is then made again without their pods, so that nothing in it (placements onto
  // existing capacity, topology counts, the other NodeClaims) relies on pods this run does not
  // place. Each round takes pods out, so the rounds end.
  const waiting: UnschedulablePod[] = [];
  while (run.reservationWaiting.length > 0) {
    waiting.push(...run.reservationWaiting);
    const out = new Set(waiting.map((u) => u.pod.uid));
    run = solveOnce({ ...input, pods: input.pods.filter((p) => !out.has(p.uid)) });
  }
  const { reservationWaiting: _, ...result } = run;
  if (waiting.length === 0) return result;
  const unschedulable = [...result.unschedulable, ...waiting].sort(
    (a, b) => compareStrings(a.pod.namespace, b.pod.namespace) || compareStrings(a.pod.name, b.pod.name),
  );
  return { ...result, unschedulable };
}

/**
 * One solve, with the pods strict mode left out for full reservations apart: compiles the input,
 * puts nominated pods back on their in-flight NodeClaims, then runs the queue, each pod tried
 * under ever more relaxed preferences until it is placed or nothing is left to relax (see
 * ./scheduling/attempt.ts for one try), and finally re-packs, fits the limits and plans the
 * NodeClaims.
 */
function solveOnce(
  input: SolveInput,
): SolveResult & { readonly reservationWaiting: readonly UnschedulablePod[] } {
  const state = new SolveState(input);
  const dims = state.dims;
  // Karpenter ignores pods that refuse every Karpenter node, without reporting them; it reports
  // pods with Dynamic Resource Allocation requirements without trying them, and counts no
  // DaemonSet with such requirements on any node.
  const considered = input.pods.filter((p) => !refusesKarpenterNodes(p));
  const pending = considered.filter((p) => p.dynamicResources !== true);
  const withDevices = considered.filter((p) => p.dynamicResources === true);
  const daemonSets = (input.daemonSets ?? []).filter((ds) => ds.template.dynamicResources !== true);
  const podRequests = pending.map((p) => validatedRequests(p, 'pod'));
  for (const r of podRequests) dims.add(r);
  for (const ds of daemonSets) dims.add(validatedRequests(ds.template, 'daemonSet'));
  for (const types of input.instanceTypes.values()) for (const t of types) dims.add(t.capacity);
  for (const types of input.poolInstanceTypes?.values() ?? []) for (const t of types) dims.add(t.capacity);
  for (const n of input.nodes ?? []) dims.add(n.allocatable);
  for (const c of input.nodeClaims ?? []) dims.add(c.allocatable);

  state.headroom = new HeadroomIndex(dims.names.length);
  state.daemonSets = daemonSets.map((ds) => compileDaemonSet(ds, dims));
  const built = buildTemplates(input, dims, state.daemonSets);
  state.templates = built.templates;
  state.anyPreferNoSchedule = built.anyPreferNoSchedule;
  state.limits.cost = built.cost;
  const states = pending.map((pod, i) => state.shapes.stateOf(pod, podRequests[i] ?? {}));
  const nominated = addExistingBins(state);
  state.existingEnd = state.bins.length;
  state.groups.finish(state.templates, state.bins, state.shapes.all());

  states.sort(
    input.options?.queueOrder === 'smallestFirst' ? (a, b) => comparePodStates(b, a) : comparePodStates,
  );
  const queue = placeNominated(state, nominated, states);
  state.partners = new AffinityPartners(queue);

  const unplaced = state.unplacedByBatch;
  for (const st of queue) {
    unplaced.set(st.shape.batchKey, (unplaced.get(st.shape.batchKey) ?? 0) + 1);
  }
  const newClaims = new NewClaims(state);
  const poolNames = state.templates.map((t) => t.pool.name);
  const unschedulable: UnschedulablePod[] = withDevices.map((p) => dynamicResourcesValue(p, poolNames));
  for (let head = 0; head < queue.length; head++) {
    const ps = queue[head] as PodState;
    // A whole turn of the queue without a placement or a relaxation since this pod got stuck.
    if (ps.stuckAt === state.progress) {
      unschedulable.push(unschedulableValue(ps));
      continue;
    }
    const ec = state.shapes.effective(ps.shape, ps.relax);
    const reasons = ec.failedEpoch === state.epoch ? ec.failReasons : attempt(state, newClaims, ps.pod, ec);
    if (reasons === undefined) {
      state.epoch += 1;
      state.progress += 1;
      state.partners.placed(ps.shape);
      unplaced.set(ps.shape.batchKey, (unplaced.get(ps.shape.batchKey) ?? 1) - 1);
      continue;
    }
    ec.failedEpoch = state.epoch;
    ec.failReasons = reasons;
    ps.lastReasons = reasons;
    state.partners.failed(ps.shape, reasons);
    const next = relax(ps.shape, ps.relax, state.anyPreferNoSchedule) ?? retryTerm(state, ps.shape, ps.relax);
    if (next !== undefined) {
      ps.relax = next;
      ps.stuckAt = -1;
      state.progress += 1;
    } else {
      ps.stuckAt = state.progress;
    }
    queue.push(ps);
  }
  unschedulable.sort(
    (a, b) => compareStrings(a.pod.namespace, b.pod.namespace) || compareStrings(a.pod.name, b.pod.name),
  );
  // Re-packing may split claims: with a cap on their number, the Karpenter-order plan stands.
  const claims =
    input.options?.repack === false || Number.isFinite(state.maxNewClaims)
      ? newClaims.claims
      : improveClaims(newClaims.claims, {
          size: dims.names.length,
          limits: state.limits,
          nowMs: input.nowMs,
        });
  state.limits.finish(claims);
  const planCache = new PlanCache();
  const reserved = assignReservations(
    claims.map((c) => planNodeClaim(c, dims, state.maxTypes, planCache)),
    input.instanceTypes,
    input.options?.reservedOfferingMode ?? 'strict',
  );
  return {
    nodeClaims: reserved.nodeClaims,
    placements: state.placements,
    unschedulable,
    reservationWaiting: reserved.unschedulable,
  };
}

/**
 * The required node-affinity terms are alternatives (any one will do): once the last has failed,
 * the first term that has not failed since the last placement, if any, is tried again.
 */
function retryTerm(state: SolveState, shape: PodState['shape'], r: RelaxState): RelaxState | undefined {
  for (let term = 0; term < shape.requiredTerms.length; term++) {
    if (term === r.term) continue;
    const candidate = { ...r, term };
    if (state.shapes.effective(shape, candidate).failedEpoch !== state.epoch) return candidate;
  }
  return undefined;
}
