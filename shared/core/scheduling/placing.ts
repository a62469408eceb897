// Placing a pod on one bin: the probe (whether the bin can take the pod and what that would mean,
// changing nothing) and the commits that put it there, on existing capacity or on a planned
// NodeClaim, with the bookkeeping every placement does.
import { admitsNewNode, admitsNodeName, type Pod, toPodRef } from '../pod.ts';
import type { Requirements } from '../requirements.ts';
import { scoredBeyondRequests } from '../resource-fit-score.ts';
import { firstUntolerated } from '../taints.ts';
import { type BinView, checkTopology } from '../topology.ts';
import {
  mergeRequirements,
  minValuesShortfall,
  type TType,
  typeFilterOf,
  typeMatches,
} from './instance-type-filter.ts';
import { type Bin, type Effective, type Probe, type Template, target } from './model.ts';
import type { SolveState } from './solve-state.ts';
import { portsConflict } from './templates.ts';
import { addInto, dimOf, fits, type Vec } from './vectors.ts';

/**
 * Whether the bin can take the pod, without changing anything: 'permanent' = it never will,
 * 'later' = not now, else what placing it would mean.
 */
export function probe(
  state: SolveState,
  ec: Effective,
  bin: Bin,
  pod: Pod = ec.shape.pod,
): Probe | 'permanent' | 'later' {
  const shape = ec.shape;
  if (bin.unschedulable) return 'permanent';
  // Pods of one shape may mount different claims: not a verdict for the shape ('later').
  if (bin.kind === 'node' && state.volumes.exceeded(bin, pod) !== undefined) return 'later';
  if (bin.kind === 'claim') {
    if (!fits(bin.used, shape.vec, bin.maxAlloc as Vec)) return 'permanent';
  } else if (!fits(bin.used, shape.vec, bin.cap as Vec)) {
    return 'permanent';
  }
  const taints = bin.kind === 'claim' ? (bin.template as Template).taints : bin.taints;
  if (firstUntolerated(taints, shape.pod.tolerations ?? [], ec.ignorePreferNoSchedule) !== undefined) {
    return 'permanent';
  }
  if (shape.hostPorts.length > 0 && portsConflict(shape.hostPorts, bin.hostPorts) !== undefined) {
    return 'permanent';
  }
  if (ec.nodeFields !== undefined) {
    const admitted =
      bin.kind === 'node' ? admitsNodeName(ec.nodeFields, bin.name) : admitsNewNode(ec.nodeFields);
    if (!admitted) return 'permanent';
  }
  let merged: Requirements;
  if (bin.kind === 'node') {
    if (!ec.reqs.matchesLabels(bin.labels ?? {})) return 'permanent';
    merged = bin.reqs;
  } else if (bin.kind === 'inflight' && bin.labels !== undefined) {
    if (!ec.reqs.matchesLabels(bin.labels)) return 'permanent';
    merged = bin.reqs;
  } else {
    const m = mergeRequirements(bin.reqs, ec.reqs, 'node');
    if (!m.ok) return 'permanent';
    merged = bin.kind === 'claim' ? m.reqs : bin.reqs;
  }
  let narrowed = false;
  const verdict = topologyVerdict(state, bin, merged, ec);
  if (verdict !== undefined) {
    if (!verdict.ok) return verdict.permanent ? 'permanent' : 'later';
    if (verdict.narrow.length > 0) {
      const base = merged;
      merged = base.replacing(verdict.narrow.map((n) => (base.get(n.key) ?? n).intersect(n)));
      narrowed = true;
    }
  }
  if (bin.kind !== 'claim') return { bin, merged, narrowed, extraCost: 0 };
  // The cheapest type that still fits with the pod (types are kept in price order).
  const f = merged === bin.reqs ? undefined : typeFilterOf(merged);
  let first: TType | undefined;
  const types = bin.types;
  for (let k = 0; k < types.length; k++) {
    const t = types[k] as TType;
    if (fits(bin.used, shape.vec, t.alloc) && (f === undefined || typeMatches(t, f))) {
      first = t;
      break;
    }
  }
  if (first === undefined) return narrowed ? 'later' : 'permanent';
  // Room of the type planned for the claim's run is already paid for.
  const current = bin.types.length === 0 ? 0 : target(bin).basePrice;
  return { bin, merged, narrowed, extraCost: first.basePrice - current };
}

/** The topology verdict of placing the pod in `bin` under `reqs`; undefined when it has no topology constraints. */
export function topologyVerdict(
  state: SolveState,
  bin: Bin,
  reqs: Requirements,
  ec: Effective,
): ReturnType<typeof checkTopology> | undefined {
  const { spreads, affinities, antiAffinities, shape } = ec;
  if (
    spreads.length === 0 &&
    affinities.length === 0 &&
    antiAffinities.length === 0 &&
    shape.inverse.length === 0
  ) {
    return undefined;
  }
  return checkTopology(
    binView(state, bin, reqs),
    spreads,
    affinities,
    antiAffinities,
    shape.inverse,
    (group) => state.eligibleDomains(ec, group),
  );
}

function binView(state: SolveState, bin: Bin, reqs: Requirements): BinView {
  return {
    hostname: bin.name,
    narrowable: bin.kind === 'claim',
    domains: (key) => state.groups.binDomains(bin, reqs, key),
  };
}

/** Places the pod on an existing node or in-flight NodeClaim the probe accepted. */
export function commitExisting(state: SolveState, pod: Pod, ec: Effective, probe: Probe): void {
  const bin = probe.bin;
  addInto(bin.used, ec.shape.vec);
  commonCommit(state, pod, ec, bin, probe.merged);
  state.placements.push(
    bin.kind === 'node'
      ? { kind: 'existingNode', pod: toPodRef(pod), nodeName: bin.name }
      : { kind: 'inFlightNodeClaim', pod: toPodRef(pod), nodeClaimName: bin.name },
  );
}

/** Adds the pod to a planned NodeClaim; false when minValues would no longer hold. */
export function commitClaim(state: SolveState, pod: Pod, ec: Effective, probe: Probe): boolean {
  const { bin, merged } = probe;
  const shape = ec.shape;
  const f = merged === bin.reqs ? undefined : typeFilterOf(merged);
  // Copied only from the first type that drops out (many pods leave every type in place).
  let kept: TType[] | undefined;
  // Dimensions in which a type that drops out has the largest allocatable (see keepsMax).
  const max = bin.maxAlloc;
  let lost = 0;
  const types = bin.types;
  for (let k = 0; k < types.length; k++) {
    const t = types[k] as TType;
    if (fits(bin.used, shape.vec, t.alloc) && (f === undefined || typeMatches(t, f))) kept?.push(t);
    else {
      kept ??= types.slice(0, k);
      if (max !== undefined) lost |= attained(t.alloc, max);
    }
  }
  let next: readonly TType[] = kept ?? types;
  if (next.length === 0) return false;
  let sameMax = max !== undefined && keepsMax(next, max, lost);
  const limited = state.limits.withinLimits(bin, next);
  if (limited.length === 0) return false;
  if (limited.length !== next.length) {
    next = [...limited];
    sameMax = false;
  }
  const minValues = minValuesShortfall(next, merged);
  if (minValues !== undefined && state.strictMinValues) return false;
  if (minValues !== undefined) bin.minValuesRelaxed = true;
  addInto(bin.used, shape.vec);
  bin.reqs = merged;
  // `next` is a filtered copy of bin.types: same length means same types.
  if (next.length !== bin.types.length) setTypes(state, bin, next, sameMax ? max : undefined);
  commonCommit(state, pod, ec, bin, merged);
  return true;
}

/** What every placement records: the pod on the bin, its ports, volumes and topology counts. */
export function commonCommit(state: SolveState, pod: Pod, ec: Effective, bin: Bin, reqs: Requirements): void {
  if (bin.index >= 0) state.headroom.markDirty(bin.index);
  if (state.existingNodeScoring !== undefined && bin.kind !== 'claim') noteScored(state, bin, ec.shape.vec);
  bin.pods.push(pod);
  bin.placed.push(toPodRef(pod));
  bin.vecs.push(ec.shape.vec);
  if (movable(ec)) bin.movable += 1;
  if (ec.shape.hostPorts.length > 0) bin.hostPorts = [...bin.hostPorts, ...ec.shape.hostPorts];
  state.volumes.record(bin, pod);
  // Only required anti-affinity binds other pods (kube-scheduler scores preferred terms only).
  state.groups.recordPlacement(bin, reqs, ec.shape.countedBy, ec.ownedAntiAffinity);
}

/** Adds to the bin what kube-scheduler's score counts for a pod without a cpu or memory request. */
function noteScored(state: SolveState, bin: Bin, vec: Vec): void {
  const dims = state.fitDims();
  const beyond = scoredBeyondRequests(dimOf(vec, dims.cpu), dimOf(vec, dims.memory));
  bin.scoreCpu += beyond.cpu;
  bin.scoreMemory += beyond.memory;
}

/**
 * Narrows a planned NodeClaim's candidate types (price order) and what it reserves of the limits.
 * `maxAlloc`, when given, is the largest allocatable of `types` per dimension.
 */
export function setTypes(state: SolveState, bin: Bin, types: readonly TType[], maxAlloc?: Vec): void {
  const cheapestChanged = bin.types[0] !== types[0];
  bin.types = types;
  // The claim outgrew its planned type, or the pod's requirements rule it out.
  if (bin.planned !== undefined && !types.includes(bin.planned)) bin.planned = undefined;
  if (cheapestChanged && bin.index >= 0) state.headroom.raise(bin);
  bin.maxAlloc = maxAlloc ?? largestAlloc(state, types);
  state.limits.reserve(bin, types);
}

/** The largest allocatable of `types` per dimension (memoised per list; not to be changed). */
function largestAlloc(state: SolveState, types: readonly TType[]): Vec {
  let max = state.largestAllocs.get(types);
  if (max === undefined) {
    max = new Float64Array(state.dims.names.length).fill(Number.NEGATIVE_INFINITY);
    for (const t of types)
      for (let i = 0; i < max.length; i++)
        if ((t.alloc[i] as number) > (max[i] as number)) max[i] = t.alloc[i] as number;
    state.largestAllocs.set(types, max);
  }
  return max;
}

/** Bit i set when `alloc` equals `max` in dimension i (all bits past 31 dimensions). */
function attained(alloc: Vec, max: Vec): number {
  if (max.length > 31) return -1;
  let bits = 0;
  for (let i = 0; i < max.length; i++) if (alloc[i] === max[i]) bits |= 1 << i;
  return bits;
}

/** True when `types` still attain `max` in every dimension whose bit is set in `lost`. */
function keepsMax(types: readonly TType[], max: Vec, lost: number): boolean {
  if (lost === 0) return true;
  if (lost === -1) return false;
  for (let i = 0; i < max.length; i++) {
    if ((lost & (1 << i)) === 0) continue;
    if (!types.some((t) => t.alloc[i] === max[i])) return false;
  }
  return true;
}

/** Nothing ties the pod to its bin: no topology (counted or counting), host port or anti-affinity. */
function movable(ec: Effective): boolean {
  return batchable(ec) && ec.shape.countedBy.length === 0 && ec.ownedAntiAffinity.length === 0;
}

/** No topology constraint, inverse anti-affinity or host port: identical pods may share a node. */
export function batchable(ec: Effective): boolean {
  return (
    ec.spreads.length === 0 &&
    ec.affinities.length === 0 &&
    ec.antiAffinities.length === 0 &&
    ec.shape.inverse.length === 0 &&
    ec.shape.hostPorts.length === 0
  );
}
