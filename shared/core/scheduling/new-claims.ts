// The NodeClaims a solve plans: opening one from a NodePool template for a pod nothing else takes,
// what a fresh one would cost per pod, and the room a claim opened for a run of identical pods
// keeps for the rest of the run.
import { Label } from '../labels.ts';
import type { Pod } from '../pod.ts';
import { Requirement } from '../requirements.ts';
import { minValuesShortfall, type TType, typeFilterOf, typeMatches } from './instance-type-filter.ts';
import { Bin, type Effective, fnv1a, type Template } from './model.ts';
import { batchable, commitClaim, commonCommit, probe, setTypes, topologyVerdict } from './placing.ts';
import type { SolveState } from './solve-state.ts';
import { addInto, fits, type Vec } from './vectors.ts';

interface FitCounts {
  /** Pods per type (same order as the list). */
  readonly counts: Float64Array;
  /** The most pods any type holds (at least 1). */
  readonly most: number;
  /** `batchType`'s choice per run length (at most `most`). */
  readonly best: Map<number, { perPod: number; batch: number; type: TType | undefined }>;
}

export class NewClaims {
  /** The NodeClaims planned so far, in creation order. */
  readonly claims: Bin[] = [];
  /** A claim opened for a run of identical pods, with room kept for `left` more of them. */
  private reservation: { batchKey: string; bin: Bin; left: number } | undefined;
  private readonly fitCountCache = new WeakMap<readonly TType[], Map<string, FitCounts>>();

  constructor(private readonly state: SolveState) {}

  /**
   * Places the pod on the claim opened for its run of identical pods, when there is one with room
   * kept for it; true when placed. The reservation ends once the run's room is used or a pod does
   * not fit.
   */
  takeReserved(pod: Pod, ec: Effective): boolean {
    const reserved = this.reservation;
    if (reserved === undefined || reserved.batchKey !== ec.batchKey || reserved.left <= 0) return false;
    const verdict = probe(this.state, ec, reserved.bin);
    reserved.left -= 1;
    if (typeof verdict !== 'string' && commitClaim(this.state, pod, ec, verdict)) return true;
    this.reservation = undefined;
    return false;
  }

  /**
   * What a fresh NodeClaim would cost per pod. Identical pods still queued may share it (see
   * `runLength`): the type with the lowest price per pod for that run counts, so a run of 4-cpu
   * pods gets one large node rather than one small node each. With every new claim allowed open,
   * none can be opened (infinite cost): growing an open one is the only way left.
   */
  freshClaimCost(ec: Effective): number {
    if (this.claims.length >= this.state.maxNewClaims) return Number.POSITIVE_INFINITY;
    for (const t of this.state.templates) {
      const s = this.state.staticNew(ec, t);
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
    const run = this.runLength(ec);
    // A pod alone needs no counts: the search below stops at the first type, which it takes.
    const fit = run <= 1 ? undefined : this.fitCounts(types, ec);
    // No type holds more than `fit.most` pods: a longer run chooses as that many would.
    const n = fit === undefined ? 1 : Math.min(run, Math.max(1, fit.most));
    let best = fit?.best.get(n);
    if (best === undefined) {
      let perPod = first.basePrice;
      let batch = 1;
      let type = first;
      for (let k = 0; k < types.length; k++) {
        const tt = types[k] as TType;
        // Types come cheapest first and no type holds more than `n` of the run: once even `n`
        // pods on this one cost no less per pod, no later type can do better.
        if (tt.basePrice / n >= perPod) break;
        const b = Math.max(1, Math.min(n, fit?.counts[k] ?? 1));
        if (tt.basePrice / b < perPod) {
          perPod = tt.basePrice / b;
          batch = b;
          type = tt;
        }
      }
      best = { perPod, batch, type };
      fit?.best.set(n, best);
    }
    return best;
  }

  /**
   * How many of the pod's identical siblings each of `types` holds, memoised per list and pod
   * requests, with the choices `batchType` made for it per run length.
   */
  private fitCounts(types: readonly TType[], ec: Effective): FitCounts {
    let byRequests = this.fitCountCache.get(types);
    if (byRequests === undefined) {
      byRequests = new Map();
      this.fitCountCache.set(types, byRequests);
    }
    // Pods of one batch key have the same requests.
    const key = ec.shape.batchKey;
    const cached = byRequests.get(key);
    if (cached !== undefined) return cached;
    const req = ec.shape.vec;
    const counts = new Float64Array(types.length);
    let most = 1;
    types.forEach((tt, k) => {
      let fit = Number.POSITIVE_INFINITY;
      for (let i = 0; i < req.length; i++) {
        const need = req[i] as number;
        if (need > 0) fit = Math.min(fit, Math.floor((tt.alloc[i] as number) / need));
      }
      counts[k] = fit;
      most = Math.max(most, fit);
    });
    const out: FitCounts = { counts, most, best: new Map() };
    byRequests.set(key, out);
    return out;
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
    const unplaced = this.state.unplacedByBatch.get(ec.shape.batchKey) ?? 1;
    if (batchable(ec)) return unplaced;
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
      const n = Math.max(1, this.state.eligibleDomains(ec, group).length);
      domainsPerKey.set(group.key, Math.max(n, domainsPerKey.get(group.key) ?? 1));
    }
    let divisor = 1;
    for (const n of domainsPerKey.values()) divisor *= n;
    return Math.ceil(unplaced / divisor);
  }

  /**
   * Tries a new NodeClaim from the template; undefined when placed, else the reason. With `need`
   * (the pod's requests plus those of the pending pods that must join it), only when one of the
   * claim's types holds all of it; the claim then keeps no room for the pod's identical siblings.
   */
  tryNewClaim(pod: Pod, ec: Effective, t: Template, need?: Vec): string | undefined {
    const state = this.state;
    const s = state.staticNew(ec, t);
    if (!s.ok) return s.reason;
    if (this.claims.length >= state.maxNewClaims) {
      return `no room on the ${state.maxNewClaims} new NodeClaim${state.maxNewClaims === 1 ? '' : 's'} allowed`;
    }
    const remaining = t.remaining;
    if (remaining !== undefined && (remaining.get('nodes') ?? 1) < 1) {
      const heldBy = t.pool.limitsHeldBy === undefined ? '' : ` (${t.pool.limitsHeldBy})`;
      return `limit nodes ${t.pool.limits?.['nodes']}${heldBy} reached`;
    }
    const name = `${t.pool.name}-${fnv1a(`${state.input.nowMs}/${t.pool.name}/${pod.uid}/${this.claims.length}`)}`;
    const bin = new Bin(
      'claim',
      name,
      s.reqs.with(Requirement.in(Label.hostname, [name])),
      undefined,
      t.taints,
      new Float64Array(state.dims.names.length),
      undefined,
      t,
      false,
    );
    bin.hostPorts = [...t.daemonPorts];
    let reqs = bin.reqs;
    let types = s.types;
    const shape = ec.shape;
    const verdict = topologyVerdict(state, bin, reqs, ec);
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
    const affordable = state.limits.affordable(t, types);
    if (typeof affordable === 'string') return affordable;
    types = affordable;
    if (need !== undefined && !types.some((tt) => fits(bin.used, need, tt.alloc))) {
      return 'no instance type holds the pod with the pods that must join it';
    }
    const shortfall = minValuesShortfall(types, reqs);
    if (shortfall !== undefined && state.strictMinValues) return shortfall;
    bin.minValuesRelaxed = shortfall !== undefined;
    bin.reqs = reqs;
    addInto(bin.used, shape.vec);
    if (remaining?.has('nodes')) remaining.set('nodes', (remaining.get('nodes') ?? 0) - 1);
    setTypes(state, bin, types);
    // The type this claim is planned as: the cheapest per pod for the run it opens, among the
    // types it may still launch as (the pod alone may need less).
    const plan = need === undefined ? this.batchType(ec, types) : { batch: 1, type: types[0] };
    if (plan.batch > 1 && plan.type !== types[0]) {
      bin.planned = plan.type;
      state.limits.reserve(bin, types);
    }
    state.addBin(bin);
    this.claims.push(bin);
    commonCommit(state, pod, ec, bin, reqs);
    // The next identical pods go straight to this claim; a spread sends them elsewhere first.
    this.reservation =
      plan.batch > 1 && batchable(ec) ? { batchKey: ec.batchKey, bin, left: plan.batch - 1 } : undefined;
    return undefined;
  }
}
