// The capacity a solve starts from: existing nodes and in-flight NodeClaims entered as bins (their
// limits consumed, their pods counted in topology), and the pending pods an earlier decision
// planned onto in-flight NodeClaims put back on them before anything else is planned.
import { type CostContext, spendOf, unclaimedSpend, withCost } from './cost-limits.ts';
import { makeInFlightBin, makeNodeBin } from './existing-capacity.ts';
import { consumeLimits } from './limits.ts';
import { type Bin, compareStrings, type PodState, type RelaxState, type Template } from './model.ts';
import { commitExisting, probe } from './placing.ts';
import { relax } from './pod-order.ts';
import type { SolveState } from './solve-state.ts';

/**
 * Adds the existing nodes (initialized first, then by name) and in-flight NodeClaims (by name) as
 * bins; returns the in-flight NodeClaims' bins by the uids of the pending pods nominated to them.
 */
export function addExistingBins(state: SolveState): Map<string, Bin> {
  const input = state.input;
  const nominated = new Map<string, Bin>();
  const byPool = new Map(state.templates.map((t) => [t.pool.name, t]));
  const nodes = [...(input.nodes ?? [])].sort(
    (a, b) => Number(b.initialized) - Number(a.initialized) || compareStrings(a.name, b.name),
  );
  for (const node of nodes) {
    const template = byPool.get(node.nodePoolName ?? '');
    const bin = makeNodeBin(node, template, state.dims, state.daemonSets);
    state.addBin(bin);
    state.volumes.track(bin, node);
    const capacity = node.capacity ?? node.allocatable;
    const cost = state.limits.cost;
    if (cost === undefined || node.nodePoolName === undefined) {
      if (template !== undefined) consumeLimits(template, capacity);
    } else {
      // A Node without a NodeClaim may be the cluster summary's say-so: it counts at its pool's most.
      const price =
        node.claimLabels === undefined
          ? unclaimedSpend(cost, template?.types)
          : spendOf(cost, input, node.nodePoolName, `node ${node.name}`, { labels: node.claimLabels });
      spend(cost, template, withCost(capacity, price), price);
    }
    for (const p of node.pods) state.groups.recordExisting(p, bin);
  }
  for (const claim of [...(input.nodeClaims ?? [])].sort((a, b) => compareStrings(a.name, b.name))) {
    const template = byPool.get(claim.nodePoolName ?? '');
    const { bin, capacity } = makeInFlightBin(claim, template, state.dims);
    state.addBin(bin);
    const cost = state.limits.cost;
    if (cost === undefined || claim.nodePoolName === undefined) {
      if (template !== undefined && capacity !== undefined) consumeLimits(template, capacity);
    } else {
      const price = spendOf(cost, input, claim.nodePoolName, `nodeClaim ${claim.name}`, {
        labels: claim.labels,
        candidates: claim.instanceTypeNames,
        requirements: claim.requirements,
      });
      spend(cost, template, capacity === undefined ? undefined : withCost(capacity, price), price);
    }
    for (const p of claim.pods) state.groups.recordExisting(p, bin);
    for (const uid of claim.nominatedPodUids ?? []) nominated.set(uid, bin);
  }
  return nominated;
}

/**
 * Counts a node or NodeClaim against its pool's limits, price included; one of a pool not in the
 * solve (a static pool, one that cannot launch now) still spends the cluster's dollar limit.
 */
function spend(
  cost: CostContext,
  template: Template | undefined,
  capacity: Record<string, number> | undefined,
  price: number | undefined,
): void {
  if (template !== undefined) {
    if (capacity !== undefined) consumeLimits(template, capacity);
  } else if (cost.cluster !== undefined && price !== undefined) {
    cost.cluster.value -= price;
  }
}

/**
 * Puts pending pods back onto the in-flight NodeClaims an earlier decision planned them onto,
 * in queue order, each under the first relaxation of its preferences that fits there (the one
 * that decision needed); returns the pods left for the queue.
 */
export function placeNominated(
  state: SolveState,
  nominated: ReadonlyMap<string, Bin>,
  states: readonly PodState[],
): PodState[] {
  if (nominated.size === 0) return [...states];
  const left: PodState[] = [];
  for (const st of states) {
    const bin = nominated.get(st.pod.uid);
    if (bin === undefined || !placeOn(state, st, bin)) left.push(st);
  }
  return left;
}

function placeOn(state: SolveState, st: PodState, bin: Bin): boolean {
  for (let r: RelaxState | undefined = st.relax; r !== undefined; ) {
    const ec = state.shapes.effective(st.shape, r);
    const verdict = ec.contradiction === undefined ? probe(state, ec, bin) : 'permanent';
    if (typeof verdict !== 'string') {
      commitExisting(state, st.pod, ec, verdict);
      state.epoch += 1;
      return true;
    }
    r = relax(st.shape, r, state.anyPreferNoSchedule);
  }
  return false;
}
