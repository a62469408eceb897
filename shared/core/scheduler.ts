import { Label } from './labels.ts';
import { admitsNewNode, admitsNodeName, type Pod, toPodRef } from './pod.ts';
import { Requirement, type Requirements } from './requirements.ts';
import { planNodeClaim } from './scheduling/claim-plan.ts';
import { makeInFlightBin, makeNodeBin } from './scheduling/existing-capacity.ts';
import { BLOCK_MASK, BLOCK_SHIFT, HeadroomIndex } from './scheduling/headroom.ts';
import { improveClaims } from './scheduling/improve.ts';
import {
  mergeRequirements,
  minValuesShortfall,
  type TType,
  typeFilterOf,
  typeMatches,
} from './scheduling/instance-type-filter.ts';
import { consumeLimits, Limits } from './scheduling/limits.ts';
import {
  Bin,
  type CompiledDaemonSet,
  compareStrings,
  type Effective,
  fnv1a,
  type PodState,
  type Probe,
  type RelaxState,
  type StaticNew,
  type Template,
  target,
} from './scheduling/model.ts';
import { comparePodStates, refusesKarpenterNodes, relax, validatedRequests } from './scheduling/pod-order.ts';
import { PodShapes } from './scheduling/pod-shapes.ts';
import { unschedulableValue } from './scheduling/reasons.ts';
import { assignReservations } from './scheduling/reservations.ts';
import {
  buildTemplates,
  compileDaemonSet,
  computeStaticNew,
  portsConflict,
  templateDomains,
} from './scheduling/templates.ts';
import { TopologyGroups } from './scheduling/topology-groups.ts';
import { addInto, Dims, fits, type Vec } from './scheduling/vectors.ts';
import { VolumeUsage } from './scheduling/volume-limits.ts';
import type { Placement, PoolReason, SolveInput, SolveResult, UnschedulablePod } from './scheduling-types.ts';
import { firstUntolerated } from './taints.ts';
import { type BinView, checkTopology, type TopologyGroup } from './topology.ts';

/**
 * Decides, for a batch of pending pods, which fit existing or in-flight capacity and which new
 * NodeClaims to create, following Karpenter v1's provisioning simulation: pods largest first;
 * existing nodes, then NodeClaims planned in this run, then a new NodeClaim from the first
 * NodePool (by weight) that can host the pod; preferences relaxed one step at a time. Pods that
 * require `karpenter.sh/nodepool DoesNotExist` are ignored, as Karpenter ignores them. Then,
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
  let run = new Scheduler(input).run();
  // Strict mode leaves out the NodeClaims whose capacity reservations the plan's other NodeClaims
  // took. The plan is then made again without their pods, so that nothing in it (placements onto
  // existing capacity, topology counts, the other NodeClaims) relies on pods this run does not
  // place. Each round takes pods out, so the rounds end.
  const waiting: UnschedulablePod[] = [];
  while (run.reservationWaiting.length > 0) {
    waiting.push(...run.reservationWaiting);
    const out = new Set(waiting.map((u) => u.pod.uid));
    run = new Scheduler({ ...input, pods: input.pods.filter((p) => !out.has(p.uid)) }).run();
  }
  const { reservationWaiting: _, ...result } = run;
  if (waiting.length === 0) return result;
  const unschedulable = [...result.unschedulable, ...waiting].sort(
    (a, b) => compareStrings(a.pod.namespace, b.pod.namespace) || compareStrings(a.pod.name, b.pod.name),
  );
  return { ...result, unschedulable };
}

/** How many planned NodeClaims that can take a pod are compared on cost before choosing. */
const CLAIM_WINDOW = 8;

/**
 * One solve: compiles the input, then runs the queue. Placement (existing capacity first, then
 * planned NodeClaims by cost, then a new NodeClaim) lives here; compiling, limits, topology
 * bookkeeping and the final plans live in ./scheduling/.
 */
class Scheduler {
  private readonly dims = new Dims();
  private templates: readonly Template[] = [];
  private readonly bins: Bin[] = [];
  private readonly claims: Bin[] = [];
  private readonly groups: TopologyGroups;
  private readonly shapes: PodShapes;
  private readonly limits: Limits;
  private readonly volumes: VolumeUsage;
  private headroom: HeadroomIndex = new HeadroomIndex(0);
  private readonly placements: Placement[] = [];
  private readonly maxTypes: number;
  private readonly respectPreferences: boolean;
  private readonly strictMinValues: boolean;
  private readonly maxNewClaims: number;
  private anyPreferNoSchedule = false;
  private daemonSets: readonly CompiledDaemonSet[] = [];
  /** Pods per batch key not yet placed. */
  private readonly unplacedByBatch = new Map<string, number>();
  /** In-flight NodeClaims by the uids of the pending pods an earlier decision planned onto them. */
  private readonly nominated = new Map<string, Bin>();
  /** A claim opened for a run of identical pods, with room kept for `left` more of them. */
  private reservation: { batchKey: string; bin: Bin; left: number } | undefined;
  private epoch = 0;

  constructor(private readonly input: SolveInput) {
    this.maxTypes = input.options?.maxInstanceTypes ?? 60;
    this.respectPreferences = (input.options?.preferencePolicy ?? 'Respect') === 'Respect';
    this.strictMinValues = (input.options?.minValuesPolicy ?? 'Strict') === 'Strict';
    this.maxNewClaims = input.options?.maxNewNodeClaims ?? Number.POSITIVE_INFINITY;
    this.groups = new TopologyGroups(input.namespaceLabels);
    this.shapes = new PodShapes(this.dims, this.groups, this.respectPreferences);
    this.limits = new Limits(this.maxTypes);
    this.volumes = new VolumeUsage(input.claimDrivers);
  }

  /** The solve, with the pods strict mode left out for full reservations apart. */
  run(): SolveResult & { readonly reservationWaiting: readonly UnschedulablePod[] } {
    const input = this.input;
    // Karpenter ignores pods that refuse every Karpenter node, without reporting them.
    const pending = input.pods.filter((p) => !refusesKarpenterNodes(p));
    const podRequests = pending.map((p) => validatedRequests(p, 'pod'));
    for (const r of podRequests) this.dims.add(r);
    for (const ds of input.daemonSets ?? []) this.dims.add(validatedRequests(ds.template, 'daemonSet'));
    for (const types of input.instanceTypes.values()) for (const t of types) this.dims.add(t.capacity);
    for (const n of input.nodes ?? []) this.dims.add(n.allocatable);
    for (const c of input.nodeClaims ?? []) this.dims.add(c.allocatable);

    this.headroom = new HeadroomIndex(this.dims.names.length);
    this.daemonSets = (input.daemonSets ?? []).map((ds) => compileDaemonSet(ds, this.dims));
    const built = buildTemplates(input, this.dims, this.daemonSets);
    this.templates = built.templates;
    this.anyPreferNoSchedule = built.anyPreferNoSchedule;
    const states = pending.map((pod, i) => this.shapes.stateOf(pod, podRequests[i] ?? {}));
    this.buildExistingBins();
    this.groups.finish(this.templates, this.bins, this.shapes.all());

    states.sort(comparePodStates);
    const queue = this.placeNominated(states);

    for (const st of queue) {
      this.unplacedByBatch.set(st.shape.batchKey, (this.unplacedByBatch.get(st.shape.batchKey) ?? 0) + 1);
    }
    const unschedulable: UnschedulablePod[] = [];
    for (let head = 0; head < queue.length; head++) {
      const ps = queue[head] as PodState;
      if (ps.failedEpoch === this.epoch) {
        unschedulable.push(unschedulableValue(ps));
        continue;
      }
      const ec = this.shapes.effective(ps.shape, ps.relax);
      const reasons = ec.failedEpoch === this.epoch ? ec.failReasons : this.attempt(ps.pod, ec);
      if (reasons === undefined) {
        this.epoch += 1;
        this.unplacedByBatch.set(ps.shape.batchKey, (this.unplacedByBatch.get(ps.shape.batchKey) ?? 1) - 1);
        continue;
      }
      ec.failedEpoch = this.epoch;
      ec.failReasons = reasons;
      ps.lastReasons = reasons;
      const next = relax(ps.shape, ps.relax, this.anyPreferNoSchedule) ?? this.retryTerm(ps.shape, ps.relax);
      if (next !== undefined) {
        ps.relax = next;
        ps.failedEpoch = -1;
      } else {
        ps.failedEpoch = this.epoch;
      }
      queue.push(ps);
    }
    unschedulable.sort(
      (a, b) => compareStrings(a.pod.namespace, b.pod.namespace) || compareStrings(a.pod.name, b.pod.name),
    );
    // Re-packing may split claims: with a cap on their number, the Karpenter-order plan stands.
    const claims =
      input.options?.repack === false || Number.isFinite(this.maxNewClaims)
        ? this.claims
        : improveClaims(this.claims, {
            size: this.dims.names.length,
            limits: this.limits,
            nowMs: input.nowMs,
          });
    this.limits.finish(claims);
    const reserved = assignReservations(
      claims.map((c) => planNodeClaim(c, this.dims, this.maxTypes)),
      input.instanceTypes,
      input.options?.reservedOfferingMode ?? 'strict',
    );
    return {
      nodeClaims: reserved.nodeClaims,
      placements: this.placements,
      unschedulable,
      reservationWaiting: reserved.unschedulable,
    };
  }

  /**
   * The required node-affinity terms are alternatives (any one will do): once the last has failed,
   * the first term that has not failed since the last placement, if any, is tried again.
   */
  private retryTerm(shape: PodState['shape'], r: RelaxState): RelaxState | undefined {
    for (let term = 0; term < shape.requiredTerms.length; term++) {
      if (term === r.term) continue;
      const candidate = { ...r, term };
      if (this.shapes.effective(shape, candidate).failedEpoch !== this.epoch) return candidate;
    }
    return undefined;
  }

  // ---- existing capacity -----------------------------------------------------------------------

  private buildExistingBins(): void {
    const input = this.input;
    const byPool = new Map(this.templates.map((t) => [t.pool.name, t]));
    const nodes = [...(input.nodes ?? [])].sort(
      (a, b) => Number(b.initialized) - Number(a.initialized) || compareStrings(a.name, b.name),
    );
    for (const node of nodes) {
      const template = byPool.get(node.nodePoolName ?? '');
      const bin = makeNodeBin(node, template, this.dims, this.daemonSets);
      this.addBin(bin);
      this.volumes.track(bin, node);
      if (template !== undefined) consumeLimits(template, node.capacity ?? node.allocatable);
      for (const p of node.pods) this.groups.recordExisting(p, bin);
    }
    for (const claim of [...(input.nodeClaims ?? [])].sort((a, b) => compareStrings(a.name, b.name))) {
      const template = byPool.get(claim.nodePoolName);
      const { bin, capacity } = makeInFlightBin(claim, template, this.dims);
      this.addBin(bin);
      if (template !== undefined && capacity !== undefined) consumeLimits(template, capacity);
      for (const p of claim.pods) this.groups.recordExisting(p, bin);
      for (const uid of claim.nominatedPodUids ?? []) this.nominated.set(uid, bin);
    }
  }

  /**
   * Puts pending pods back onto the in-flight NodeClaims an earlier decision planned them onto,
   * in queue order, each under the first relaxation of its preferences that fits there (the one
   * that decision needed); returns the pods left for the queue.
   */
  private placeNominated(states: readonly PodState[]): PodState[] {
    if (this.nominated.size === 0) return [...states];
    const left: PodState[] = [];
    for (const st of states) {
      const bin = this.nominated.get(st.pod.uid);
      if (bin === undefined || !this.placeOn(st, bin)) left.push(st);
    }
    return left;
  }

  private placeOn(st: PodState, bin: Bin): boolean {
    for (let r: RelaxState | undefined = st.relax; r !== undefined; ) {
      const ec = this.shapes.effective(st.shape, r);
      const verdict = ec.contradiction === undefined ? this.probe(ec, bin) : 'permanent';
      if (typeof verdict !== 'string') {
        this.commitExisting(st.pod, ec, verdict);
        this.epoch += 1;
        return true;
      }
      r = relax(st.shape, r, this.anyPreferNoSchedule);
    }
    return false;
  }

  /**
   * Domains of the group's key that count for the pod. A spread's are the group's own (every
   * domain its node inclusion policies admit: Kubernetes takes the minimum over them whichever
   * the pod can reach). Affinity only looks at domains of NodePools the pod tolerates and of
   * nodes it may use.
   */
  private eligibleDomains(ec: Effective, group: TopologyGroup): readonly string[] {
    if (group.kind === 'spread') return group.sortedDomains();
    const key = group.key;
    let out = ec.eligible.get(key);
    if (out !== undefined) return out;
    const values = new Set<string>();
    for (const t of this.templates) {
      const s = this.staticNew(ec, t);
      if (!s.ok) continue;
      const r = s.reqs.get(key);
      for (const d of templateDomains(t, key)) if (r === undefined || r.has(d)) values.add(d);
    }
    const podReq = ec.reqs.get(key);
    for (const b of this.bins) {
      if (b.kind !== 'node' || b.labels === undefined) continue;
      const v = b.labels[key];
      if (v !== undefined && (podReq === undefined || podReq.has(v)) && ec.reqs.matchesLabels(b.labels))
        values.add(v);
    }
    out = [...values].sort();
    ec.eligible.set(key, out);
    return out;
  }

  // ---- one attempt -------------------------------------------------------------------------------

  /** Places the pod and returns undefined, or returns one reason per NodePool. */
  private attempt(pod: Pod, ec: Effective): readonly PoolReason[] | undefined {
    if (ec.contradiction !== undefined) {
      const reason = ec.contradiction;
      return this.templates.length === 0
        ? [{ nodePool: '', reason }]
        : this.templates.map((t) => ({ nodePool: t.pool.name, reason }));
    }
    // Existing and in-flight capacity first (it is already paid for), then the planned NodeClaims
    // in creation order. Among the first few planned claims that can take the pod, the one whose
    // cheapest launchable type gets the least more expensive wins, unless a fresh NodeClaim
    // would cost less than that increase (Karpenter always prefers a planned claim; growing a
    // claim into a much pricier instance type is how it ends up with oversized nodes).
    const reserved = this.reservation;
    if (reserved !== undefined && reserved.batchKey === ec.batchKey && reserved.left > 0) {
      const probe = this.probe(ec, reserved.bin);
      reserved.left -= 1;
      if (typeof probe !== 'string' && this.commitClaim(pod, ec, probe)) return undefined;
      this.reservation = undefined;
    }
    const bins = this.bins;
    let contiguous = true;
    const options: Probe[] = [];
    const req = ec.shape.vec;
    if (ec.rejected.length < bins.length) {
      const grown = new Uint8Array(Math.max(bins.length * 2, 64));
      grown.set(ec.rejected);
      ec.rejected = grown;
    }
    const rejected = ec.rejected;
    const zero = new Float64Array(req.length);
    let blockHadFit = false;
    for (let i = ec.skip; i < bins.length; i++) {
      if ((i & BLOCK_MASK) === 0) {
        // Entering a new block: skip it when nothing in it can take the pod for free.
        const previous = (i >> BLOCK_SHIFT) - 1;
        if (
          i > ec.skip &&
          !blockHadFit &&
          options.length >= CLAIM_WINDOW &&
          this.headroom.isDirty(previous)
        ) {
          this.headroom.tighten(previous, bins);
        }
        blockHadFit = false;
        const max = this.headroom.bound(i);
        if (options.length >= CLAIM_WINDOW && max !== undefined && !fits(zero, req, max)) {
          contiguous = false;
          i += BLOCK_MASK;
          continue;
        }
      }
      if (rejected[i] === 1) {
        if (contiguous) ec.skip = i + 1;
        continue;
      }
      const bin = bins[i] as Bin;
      // A planned claim where the pod would not fit its current cheapest type costs extra; only
      // the first few of those are probed and compared, the scan goes on for a free fit.
      if (
        bin.kind === 'claim' &&
        options.length >= CLAIM_WINDOW &&
        fits(bin.used, req, bin.maxAlloc as Vec) &&
        !fits(bin.used, req, target(bin).alloc)
      ) {
        contiguous = false;
        continue;
      }
      blockHadFit = true;
      const verdict = this.probe(ec, bin, pod);
      if (verdict === 'permanent') {
        rejected[i] = 1;
        if (contiguous) ec.skip = i + 1;
        continue;
      }
      contiguous = false;
      if (verdict === 'later') continue;
      if (bin.kind !== 'claim') {
        this.commitExisting(pod, ec, verdict);
        return undefined;
      }
      if (verdict.extraCost <= 0 && this.commitClaim(pod, ec, verdict)) return undefined;
      if (options.length < CLAIM_WINDOW) options.push(verdict);
    }
    options.sort((a, b) => a.extraCost - b.extraCost);
    // With every new claim allowed open, growing one of them is the only way left.
    const fresh =
      this.claims.length >= this.maxNewClaims ? Number.POSITIVE_INFINITY : this.freshClaimCost(ec);
    let i = 0;
    for (; i < options.length && (options[i] as Probe).extraCost <= fresh; i++) {
      if (this.commitClaim(pod, ec, options[i] as Probe)) return undefined;
    }
    const reasons: PoolReason[] = [];
    for (const t of this.templates) {
      const r = this.tryNewClaim(pod, ec, t);
      if (r === undefined) return undefined;
      reasons.push({ nodePool: t.pool.name, reason: r });
    }
    for (; i < options.length; i++) {
      if (this.commitClaim(pod, ec, options[i] as Probe)) return undefined;
    }
    if (reasons.length === 0) reasons.push({ nodePool: '', reason: 'no NodePool is defined' });
    return reasons;
  }

  /**
   * What a fresh NodeClaim would cost per pod. Identical pods still queued may share it (see
   * `runLength`): the type with the lowest price per pod for that run counts, so a run of 4-cpu
   * pods gets one large node rather than one small node each.
   */
  private freshClaimCost(ec: Effective): number {
    for (const t of this.templates) {
      const s = this.staticNew(ec, t);
      if (!s.ok) continue;
      return this.batchType(ec, s.types).perPod;
    }
    return Number.POSITIVE_INFINITY;
  }

  /** Among `types` (price order), the one with the lowest price per pod for the pod's run. */
  private batchType(
    ec: Effective,
    types: readonly TType[],
  ): { perPod: number; batch: number; type: TType | undefined } {
    const first = types[0];
    if (first === undefined) return { perPod: Number.POSITIVE_INFINITY, batch: 1, type: undefined };
    let best = { perPod: first.basePrice, batch: 1, type: first };
    const run = this.runLength(ec);
    if (run <= 1) return best;
    const req = ec.shape.vec;
    for (const tt of types) {
      let fit = Number.POSITIVE_INFINITY;
      for (let i = 0; i < req.length; i++) {
        const need = req[i] as number;
        if (need > 0) fit = Math.min(fit, Math.floor((tt.alloc[i] as number) / need));
      }
      const n = Math.max(1, Math.min(run, fit));
      if (tt.basePrice / n < best.perPod) best = { perPod: tt.basePrice / n, batch: n, type: tt };
    }
    return best;
  }

  /**
   * How many identical pods still queued (this one included) one new NodeClaim may expect to
   * hold. All of them for a pod with no topology constraints and no host ports. A pod whose only
   * constraints are topology spreads over keys other than the hostname (zones, capacity types)
   * shares a node with its siblings just the same, but the spread sends only a share of them to
   * each domain: the run is divided by the number of domains the pod can reach per key. Anything
   * else (hostname spread, pod affinity or anti-affinity, host ports) keeps one pod per estimate.
   */
  private runLength(ec: Effective): number {
    const unplaced = this.unplacedByBatch.get(ec.shape.batchKey) ?? 1;
    if (this.batchable(ec)) return unplaced;
    if (
      ec.spreads.length === 0 ||
      ec.affinities.length > 0 ||
      ec.antiAffinities.length > 0 ||
      ec.shape.inverse.length > 0 ||
      ec.shape.hostPorts.length > 0
    ) {
      return 1;
    }
    const domainsPerKey = new Map<string, number>();
    for (const { group } of ec.spreads) {
      if (group.key === Label.hostname) return 1;
      const n = Math.max(1, this.eligibleDomains(ec, group).length);
      domainsPerKey.set(group.key, Math.max(n, domainsPerKey.get(group.key) ?? 1));
    }
    let divisor = 1;
    for (const n of domainsPerKey.values()) divisor *= n;
    return Math.ceil(unplaced / divisor);
  }

  /** Nothing ties the pod to its bin: no topology (counted or counting), host port or anti-affinity. */
  private movable(ec: Effective): boolean {
    return this.batchable(ec) && ec.shape.countedBy.length === 0 && ec.ownedAntiAffinity.length === 0;
  }

  private batchable(ec: Effective): boolean {
    return (
      ec.spreads.length === 0 &&
      ec.affinities.length === 0 &&
      ec.antiAffinities.length === 0 &&
      ec.shape.inverse.length === 0 &&
      ec.shape.hostPorts.length === 0
    );
  }

  /**
   * Whether the bin can take the pod, without changing anything: 'permanent' = it never will,
   * 'later' = not now, else what placing it would mean.
   */
  private probe(ec: Effective, bin: Bin, pod: Pod = ec.shape.pod): Probe | 'permanent' | 'later' {
    const shape = ec.shape;
    if (bin.unschedulable) return 'permanent';
    // Pods of one shape may mount different claims: not a verdict for the shape ('later').
    if (bin.kind === 'node' && this.volumes.exceeded(bin, pod) !== undefined) return 'later';
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
    const verdict = this.topologyVerdict(bin, merged, ec);
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
    for (const t of bin.types) {
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

  private commitExisting(pod: Pod, ec: Effective, probe: Probe): void {
    const bin = probe.bin;
    addInto(bin.used, ec.shape.vec);
    this.commonCommit(pod, ec, bin, probe.merged);
    this.placements.push(
      bin.kind === 'node'
        ? { kind: 'existingNode', pod: toPodRef(pod), nodeName: bin.name }
        : { kind: 'inFlightNodeClaim', pod: toPodRef(pod), nodeClaimName: bin.name },
    );
  }

  /** Adds the pod to a planned NodeClaim; false when minValues would no longer hold. */
  private commitClaim(pod: Pod, ec: Effective, probe: Probe): boolean {
    const { bin, merged } = probe;
    const shape = ec.shape;
    const f = merged === bin.reqs ? undefined : typeFilterOf(merged);
    let next: TType[] = [];
    for (const t of bin.types) {
      if (fits(bin.used, shape.vec, t.alloc) && (f === undefined || typeMatches(t, f))) next.push(t);
    }
    if (next.length === 0) return false;
    const limited = this.limits.withinLimits(bin, next);
    if (limited.length === 0) return false;
    if (limited.length !== next.length) next = [...limited];
    const minValues = minValuesShortfall(next, merged);
    if (minValues !== undefined && this.strictMinValues) return false;
    if (minValues !== undefined) bin.minValuesRelaxed = true;
    addInto(bin.used, shape.vec);
    bin.reqs = merged;
    // `next` is a filtered copy of bin.types: same length means same types.
    if (next.length !== bin.types.length) this.setTypes(bin, next);
    this.commonCommit(pod, ec, bin, merged);
    return true;
  }

  private commonCommit(pod: Pod, ec: Effective, bin: Bin, reqs: Requirements): void {
    if (bin.index >= 0) this.headroom.markDirty(bin.index);
    bin.pods.push(pod);
    bin.placed.push(toPodRef(pod));
    bin.vecs.push(ec.shape.vec);
    if (this.movable(ec)) bin.movable += 1;
    if (ec.shape.hostPorts.length > 0) bin.hostPorts = [...bin.hostPorts, ...ec.shape.hostPorts];
    this.volumes.record(bin, pod);
    // Only required anti-affinity binds other pods (kube-scheduler scores preferred terms only).
    this.groups.recordPlacement(bin, reqs, ec.shape.countedBy, ec.ownedAntiAffinity);
  }

  /** The topology verdict of placing the pod in `bin` under `reqs`; undefined when it has no topology constraints. */
  private topologyVerdict(
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
      this.binView(bin, reqs),
      spreads,
      affinities,
      antiAffinities,
      shape.inverse,
      (group) => this.eligibleDomains(ec, group),
    );
  }

  private binView(bin: Bin, reqs: Requirements): BinView {
    return {
      hostname: bin.name,
      narrowable: bin.kind === 'claim',
      domains: (key) => this.groups.binDomains(bin, reqs, key),
    };
  }

  private setTypes(bin: Bin, types: readonly TType[]): void {
    const cheapestChanged = bin.types[0] !== types[0];
    bin.types = types;
    // The claim outgrew its planned type, or the pod's requirements rule it out.
    if (bin.planned !== undefined && !types.includes(bin.planned)) bin.planned = undefined;
    if (cheapestChanged && bin.index >= 0) this.headroom.raise(bin);
    const max = new Float64Array(this.dims.names.length).fill(Number.NEGATIVE_INFINITY);
    for (const t of types)
      for (let i = 0; i < max.length; i++)
        if ((t.alloc[i] as number) > (max[i] as number)) max[i] = t.alloc[i] as number;
    bin.maxAlloc = max;
    this.limits.reserve(bin, types);
  }

  /** The parts of a new-claim check that depend only on the pod's constraints and the pool. */
  private staticNew(ec: Effective, t: Template): StaticNew {
    const cached = ec.templateCache.get(t.order);
    if (cached !== undefined) return cached;
    const result = computeStaticNew(ec, t, this.dims);
    ec.templateCache.set(t.order, result);
    return result;
  }

  /** Tries a new NodeClaim from the template; undefined when placed, else the reason. */
  private tryNewClaim(pod: Pod, ec: Effective, t: Template): string | undefined {
    const s = this.staticNew(ec, t);
    if (!s.ok) return s.reason;
    if (this.claims.length >= this.maxNewClaims) {
      return `no room on the ${this.maxNewClaims} new NodeClaim${this.maxNewClaims === 1 ? '' : 's'} allowed`;
    }
    const remaining = t.remaining;
    if (remaining !== undefined && (remaining.get('nodes') ?? 1) < 1) {
      return `limit nodes ${t.pool.limits?.['nodes']} reached`;
    }
    const name = `${t.pool.name}-${fnv1a(`${this.input.nowMs}/${t.pool.name}/${pod.uid}/${this.claims.length}`)}`;
    const bin = new Bin(
      'claim',
      name,
      s.reqs.with(Requirement.in(Label.hostname, [name])),
      undefined,
      t.taints,
      new Float64Array(this.dims.names.length),
      undefined,
      t,
      false,
    );
    bin.hostPorts = [...t.daemonPorts];
    let reqs = bin.reqs;
    let types = s.types;
    const shape = ec.shape;
    const verdict = this.topologyVerdict(bin, reqs, ec);
    if (verdict !== undefined) {
      if (!verdict.ok) return verdict.reason;
      if (verdict.narrow.length > 0) {
        const narrowKey = `${t.order}|${verdict.narrow.map((n) => n.toString()).join(';')}`;
        reqs = reqs.replacing(verdict.narrow.map((n) => (reqs.get(n.key) ?? n).intersect(n)));
        let narrowed = ec.narrowedTypes.get(narrowKey);
        if (narrowed === undefined) {
          const f = typeFilterOf(reqs);
          narrowed = types.filter((tt) => typeMatches(tt, f));
          ec.narrowedTypes.set(narrowKey, narrowed);
        }
        types = narrowed;
        if (types.length === 0) {
          return `no instance type fits the pod in ${verdict.narrow.map((n) => n.toString()).join(', ')}`;
        }
      }
    }
    const affordable = this.limits.affordable(t, types);
    if (typeof affordable === 'string') return affordable;
    types = affordable;
    const shortfall = minValuesShortfall(types, reqs);
    if (shortfall !== undefined && this.strictMinValues) return shortfall;
    bin.minValuesRelaxed = shortfall !== undefined;
    bin.reqs = reqs;
    addInto(bin.used, shape.vec);
    if (remaining?.has('nodes')) remaining.set('nodes', (remaining.get('nodes') ?? 0) - 1);
    this.setTypes(bin, types);
    // The type this claim is planned as: the cheapest per pod for the run it opens, among the
    // types it may still launch as (the pod alone may need less).
    const plan = this.batchType(ec, types);
    if (plan.batch > 1 && plan.type !== types[0]) {
      bin.planned = plan.type;
      this.limits.reserve(bin, types);
    }
    this.addBin(bin);
    this.claims.push(bin);
    this.commonCommit(pod, ec, bin, reqs);
    // The next identical pods go straight to this claim; a spread sends them elsewhere first.
    this.reservation =
      plan.batch > 1 && this.batchable(ec) ? { batchKey: ec.batchKey, bin, left: plan.batch - 1 } : undefined;
    return undefined;
  }

  private addBin(bin: Bin): void {
    bin.index = this.bins.length;
    this.bins.push(bin);
    this.headroom.raise(bin);
  }
}
