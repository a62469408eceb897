import type { DaemonSet, ExistingNode, InFlightNodeClaim } from './cluster.ts';
import { ValidationError } from './errors.ts';
import { computeAllocatable, type InstanceType, type Offering } from './instance-type.ts';
import { INSTANCE_TYPE_LABEL_KEYS, Label, type Labels } from './labels.ts';
import { type NodePool, nodePoolRequirements, orderNodePools } from './node-pool.ts';
import {
  computePodRequests,
  hostPortsConflict,
  type LabelSelector,
  matchesSelector,
  type Pod,
  type PodAffinityTerm,
  type PodRef,
  podHostPorts,
  toPodRef,
} from './pod.ts';
import { formatQuantity } from './quantity.ts';
import { type NodeSelectorRequirement, Requirement, Requirements } from './requirements.ts';
import type { ResourceList } from './resources.ts';
import type {
  LaunchCandidate,
  NodeClaimPlan,
  Placement,
  PoolReason,
  SolveInput,
  SolveResult,
  UnschedulablePod,
} from './scheduling-types.ts';
import { DISRUPTED_TAINT, firstUntolerated, formatTaint, isEphemeralTaint, type Taint } from './taints.ts';
import {
  type ActiveTopology,
  type BinDomains,
  type BinView,
  checkTopology,
  selectorKey,
  TopologyGroup,
} from './topology.ts';

/**
 * Decides, for a batch of pending pods, which fit existing or in-flight capacity and which new
 * NodeClaims to create, following Karpenter v1's provisioning simulation: pods largest first;
 * existing nodes, then NodeClaims planned in this run, then a new NodeClaim from the first
 * NodePool (by weight) that can host the pod; preferences relaxed one step at a time.
 *
 * Pure and deterministic. A pod nothing can host is a value in `unschedulable`.
 * @throws ValidationError (or a subclass) when the input is malformed: an unknown operator, a
 *   bad bound, a NodePool whose requirements contradict each other, a non-integer request.
 */
export function solve(input: SolveInput): SolveResult {
  return new Scheduler(input).run();
}

// ---------------------------------------------------------------------------------------------
// Resource vectors

type Vec = Float64Array;

class Dims {
  readonly names: string[] = [];
  readonly index = new Map<string, number>();

  add(list: ResourceList | undefined): void {
    if (list === undefined) return;
    for (const name of Object.keys(list)) {
      if (!this.index.has(name)) {
        this.index.set(name, this.names.length);
        this.names.push(name);
      }
    }
  }

  vec(list: ResourceList | undefined): Vec {
    const v = new Float64Array(this.names.length);
    if (list === undefined) return v;
    for (const [name, value] of Object.entries(list)) {
      const i = this.index.get(name);
      if (i !== undefined) v[i] = value;
    }
    return v;
  }

  list(v: Vec): ResourceList {
    const out: Record<string, number> = {};
    this.names.forEach((name, i) => {
      const x = v[i] ?? 0;
      if (x !== 0) out[name] = x;
    });
    return out;
  }
}

function fits(used: Vec, req: Vec, cap: Vec): boolean {
  for (let i = 0; i < req.length; i++) {
    if ((used[i] as number) + (req[i] as number) > (cap[i] as number)) return false;
  }
  return true;
}

function addInto(target: Vec, v: Vec): void {
  for (let i = 0; i < v.length; i++) target[i] = (target[i] as number) + (v[i] as number);
}

// ---------------------------------------------------------------------------------------------
// Compiled inputs

interface TType {
  readonly it: InstanceType;
  readonly labels: Labels;
  /** allocatable − DaemonSet overhead. */
  readonly alloc: Vec;
  readonly daemon: Vec;
  readonly capacity: ResourceList;
  /** Available offerings the NodePool allows. */
  readonly offerings: readonly Offering[];
  readonly basePrice: number;
}

interface Template {
  readonly pool: NodePool;
  readonly order: number;
  readonly reqs: Requirements;
  readonly taints: readonly Taint[];
  readonly startupTaints: readonly Taint[];
  readonly types: readonly TType[];
  readonly daemonPorts: readonly string[];
  /** Remaining headroom per limited resource (NodePool limits − usage − reservations). */
  readonly remaining: Map<string, number> | undefined;
  readonly domainCache: Map<string, readonly string[]>;
  readonly unavailableReason: string | undefined;
}

interface TypeFilter {
  readonly labelReqs: readonly Requirement[];
  readonly zone: Requirement | undefined;
  readonly capacityType: Requirement | undefined;
}

const typeFilterCache = new WeakMap<Requirements, TypeFilter>();

function typeFilterOf(reqs: Requirements): TypeFilter {
  let f = typeFilterCache.get(reqs);
  if (f !== undefined) return f;
  const labelReqs: Requirement[] = [];
  for (const r of reqs.values()) {
    if (r.key === Label.zone || r.key === Label.capacityType || r.isAny()) continue;
    if (INSTANCE_TYPE_LABEL_KEYS.has(r.key)) labelReqs.push(r);
  }
  const zone = reqs.get(Label.zone);
  const capacityType = reqs.get(Label.capacityType);
  f = {
    labelReqs,
    zone: zone?.isAny() ? undefined : zone,
    capacityType: capacityType?.isAny() ? undefined : capacityType,
  };
  typeFilterCache.set(reqs, f);
  return f;
}

function offeringAllowed(o: Offering, f: TypeFilter): boolean {
  return (
    o.available &&
    (f.zone === undefined || f.zone.has(o.zone)) &&
    (f.capacityType === undefined || f.capacityType.has(o.capacityType))
  );
}

function typeMatches(t: TType, f: TypeFilter): boolean {
  for (const r of f.labelReqs) if (!r.admits(t.labels[r.key])) return false;
  if (f.zone === undefined && f.capacityType === undefined) return t.offerings.length > 0;
  for (const o of t.offerings) if (offeringAllowed(o, f)) return true;
  return false;
}

function cheapestPrice(t: TType, f: TypeFilter): number {
  let best = Number.POSITIVE_INFINITY;
  for (const o of t.offerings)
    if (o.priceUsdPerHour < best && offeringAllowed(o, f)) best = o.priceUsdPerHour;
  return best;
}

type Merge =
  | { readonly ok: true; readonly reqs: Requirements }
  | { readonly ok: false; readonly reason: string };

/**
 * Narrows a node template's requirements by a pod's. On the node side a key the template does
 * not mention is absent on the node, unless the instance type supplies it.
 */
function mergeRequirements(node: Requirements, pod: Requirements, what: string): Merge {
  if (pod.size === 0) return { ok: true, reqs: node };
  const changed: Requirement[] = [];
  for (const p of pod.values()) {
    if (p.isAny()) continue;
    const n = node.get(p.key);
    const base = n ?? (INSTANCE_TYPE_LABEL_KEYS.has(p.key) ? undefined : Requirement.absent(p.key));
    const merged = base === undefined ? p : base.intersect(p);
    if (merged.isEmpty()) {
      return {
        ok: false,
        reason: `pod requires ${p}, ${what} ${n === undefined ? `has no label ${p.key}` : `has ${n}`}`,
      };
    }
    if (n === undefined || merged.toString() !== n.toString() || merged.minValues !== n.minValues) {
      changed.push(merged);
    }
  }
  return { ok: true, reqs: node.replacing(changed) };
}

interface CompiledTerm {
  readonly term: PodAffinityTerm;
  readonly weight: number;
  readonly group: TopologyGroup;
}

interface SpreadRef {
  readonly group: TopologyGroup;
  readonly required: boolean;
}

/** Everything about a pod spec that scheduling reads; identical pods share one shape. */
interface Shape {
  readonly id: number;
  /** Identity of everything but labels: pods that differ only in labels pack alike. */
  readonly batchKey: string;
  readonly pod: Pod;
  readonly requests: ResourceList;
  readonly vec: Vec;
  readonly hostPorts: readonly string[];
  readonly base: Requirements;
  readonly requiredTerms: readonly Requirements[];
  readonly preferredNode: readonly Requirements[];
  readonly affinityRequired: readonly CompiledTerm[];
  readonly affinityPreferred: readonly CompiledTerm[];
  readonly antiRequired: readonly CompiledTerm[];
  readonly antiPreferred: readonly CompiledTerm[];
  readonly spreads: readonly SpreadRef[];
  readonly scheduleAnywayCount: number;
  /** Groups whose selector matches this pod's labels (it counts toward them). */
  countedBy: readonly TopologyGroup[];
  /** Anti-affinity groups of other pods that select this pod. */
  inverse: readonly TopologyGroup[];
}

interface RelaxState {
  readonly term: number;
  readonly podAffinity: number;
  readonly antiAffinity: number;
  readonly preferredNode: number;
  readonly spread: number;
  readonly toleratePreferNoSchedule: boolean;
}

/** A shape under one relaxation state: the constraints one attempt checks. */
interface Effective {
  readonly id: number;
  readonly shape: Shape;
  /** Shape batch key plus relaxation state. */
  readonly batchKey: string;
  readonly reqs: Requirements;
  readonly contradiction: string | undefined;
  readonly ignorePreferNoSchedule: boolean;
  readonly spreads: readonly ActiveTopology[];
  readonly affinities: readonly ActiveTopology[];
  readonly antiAffinities: readonly ActiveTopology[];
  /** Required anti-affinity terms: placed pods with these block matching pods (inverse check). */
  readonly ownedAntiAffinity: readonly TopologyGroup[];
  /** Bins before this index rejected the pod for good. */
  skip: number;
  /** 1 at index i when bin i rejected the pod for good. */
  rejected: Uint8Array;
  failedEpoch: number;
  failReasons: readonly PoolReason[];
  readonly templateCache: Map<number, StaticNew>;
  readonly narrowedTypes: Map<string, readonly TType[]>;
  readonly eligible: Map<string, readonly string[]>;
}

type StaticNew =
  | { readonly ok: false; readonly reason: string }
  | { readonly ok: true; readonly reqs: Requirements; readonly types: readonly TType[] };

type BinKind = 'node' | 'inflight' | 'claim';

class Bin {
  readonly pods: Pod[] = [];
  readonly placed: PodRef[] = [];
  hostPorts: string[] = [];
  types: readonly TType[] = [];
  maxAlloc: Vec | undefined;
  reserve: Map<string, number> | undefined;
  minValuesRelaxed = false;
  /** Position in the scheduler's bin list; -1 until added. */
  index = -1;

  constructor(
    readonly kind: BinKind,
    readonly name: string,
    public reqs: Requirements,
    readonly labels: Labels | undefined,
    readonly taints: readonly Taint[],
    readonly used: Vec,
    readonly cap: Vec | undefined,
    readonly template: Template | undefined,
    readonly unschedulable: boolean,
  ) {}
}

const EMPTY_GROUPS: readonly TopologyGroup[] = [];

/** How many planned NodeClaims that can take a pod are compared on cost before choosing. */
const CLAIM_WINDOW = 8;
/** Bins per headroom block (2^BLOCK_SHIFT). */
const BLOCK_SHIFT = 6;
const BLOCK_MASK = (1 << BLOCK_SHIFT) - 1;

/** What placing a pod on a bin would mean (nothing is changed until it is committed). */
interface Probe {
  readonly bin: Bin;
  readonly merged: Requirements;
  readonly narrowed: boolean;
  /** How much more the claim's cheapest launchable type costs with the pod (USD/hour). */
  readonly extraCost: number;
}

function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36).padStart(7, '0');
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------

interface PodState {
  readonly pod: Pod;
  readonly shape: Shape;
  relax: RelaxState;
  failedEpoch: number;
  lastReasons: readonly PoolReason[];
}

class Scheduler {
  private readonly dims = new Dims();
  private readonly templates: Template[] = [];
  private readonly bins: Bin[] = [];
  private readonly claims: Bin[] = [];
  private readonly groups = new Map<string, TopologyGroup>();
  private readonly shapes = new Map<string, Shape>();
  private readonly effectives = new Map<string, Effective>();
  private readonly labelMatchCache = new Map<string, readonly TopologyGroup[]>();
  private readonly placements: Placement[] = [];
  private readonly maxTypes: number;
  private readonly respectPreferences: boolean;
  private readonly strictMinValues: boolean;
  private anyPreferNoSchedule = false;
  /** Pods per batch key not yet placed. */
  private readonly unplacedByBatch = new Map<string, number>();
  /** A claim opened for a run of identical pods, with room kept for `left` more of them. */
  private reservation: { batchKey: string; bin: Bin; left: number } | undefined;
  private epoch = 0;
  private effectiveCount = 0;

  constructor(private readonly input: SolveInput) {
    this.maxTypes = input.options?.maxInstanceTypes ?? 60;
    this.respectPreferences = (input.options?.preferencePolicy ?? 'Respect') === 'Respect';
    this.strictMinValues = (input.options?.minValuesPolicy ?? 'Strict') === 'Strict';
  }

  run(): SolveResult {
    const input = this.input;
    const podRequests = input.pods.map((p) => this.validatedRequests(p, 'pod'));
    for (const r of podRequests) this.dims.add(r);
    for (const ds of input.daemonSets ?? []) this.dims.add(this.validatedRequests(ds.template, 'daemonSet'));
    for (const types of input.instanceTypes.values()) for (const t of types) this.dims.add(t.capacity);
    for (const n of input.nodes ?? []) this.dims.add(n.allocatable);
    for (const c of input.nodeClaims ?? []) this.dims.add(c.allocatable);

    this.buildTemplates();
    const states = input.pods.map((pod, i) => this.podState(pod, podRequests[i] ?? {}));
    this.buildExistingBins();
    this.finishGroups();

    states.sort((a, b) => {
      const ra = a.shape.requests;
      const rb = b.shape.requests;
      return (
        (rb['cpu'] ?? 0) - (ra['cpu'] ?? 0) ||
        (rb['memory'] ?? 0) - (ra['memory'] ?? 0) ||
        (a.pod.createdAtMs ?? 0) - (b.pod.createdAtMs ?? 0) ||
        compareStrings(a.pod.uid, b.pod.uid)
      );
    });

    for (const st of states) {
      this.unplacedByBatch.set(st.shape.batchKey, (this.unplacedByBatch.get(st.shape.batchKey) ?? 0) + 1);
    }
    const unschedulable: UnschedulablePod[] = [];
    const queue = states;
    for (let head = 0; head < queue.length; head++) {
      const ps = queue[head] as PodState;
      if (ps.failedEpoch === this.epoch) {
        unschedulable.push(this.unschedulableValue(ps));
        continue;
      }
      const ec = this.effective(ps.shape, ps.relax);
      const reasons = ec.failedEpoch === this.epoch ? ec.failReasons : this.attempt(ps.pod, ec);
      if (reasons === undefined) {
        this.epoch += 1;
        this.unplacedByBatch.set(ps.shape.batchKey, (this.unplacedByBatch.get(ps.shape.batchKey) ?? 1) - 1);
        continue;
      }
      ec.failedEpoch = this.epoch;
      ec.failReasons = reasons;
      ps.lastReasons = reasons;
      const next = this.relax(ps.shape, ps.relax);
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
    return { nodeClaims: this.claims.map((c) => this.plan(c)), placements: this.placements, unschedulable };
  }

  // ---- validation ------------------------------------------------------------------------------

  private validatedRequests(pod: Pod, what: string): ResourceList {
    const object = `${what} "${pod.namespace}/${pod.name}"`;
    const check = (list: ResourceList | undefined, field: string): void => {
      for (const [name, value] of Object.entries(list ?? {})) {
        if (!Number.isSafeInteger(value) || value < 0) {
          throw new ValidationError(object, `${field}.${name}`, `${value} must be a non-negative integer`);
        }
      }
    };
    pod.containers.forEach((c, i) => {
      check(c.requests, `spec.containers[${i}].resources.requests`);
    });
    (pod.initContainers ?? []).forEach((c, i) => {
      check(c.requests, `spec.initContainers[${i}].resources.requests`);
    });
    check(pod.overhead, 'spec.overhead');
    check(pod.podRequests, 'spec.resources.requests');
    return computePodRequests(pod);
  }

  // ---- templates ---------------------------------------------------------------------------------

  private buildTemplates(): void {
    const input = this.input;
    const daemonSets = (input.daemonSets ?? []).map((ds) => this.compileDaemonSet(ds));
    orderNodePools(input.nodePools).forEach((pool, order) => {
      const reqs = nodePoolRequirements(pool);
      const taints = pool.taints ?? [];
      if (taints.some((t) => t.effect === 'PreferNoSchedule')) this.anyPreferNoSchedule = true;
      const f = typeFilterOf(reqs);
      const daemonPorts: string[] = [];
      const applicable = daemonSets.filter((ds) => {
        if (firstUntolerated(taints, ds.tolerations, true) !== undefined) return false;
        return ds.alternatives.some((alt) => mergeRequirements(reqs, alt, 'nodePool').ok);
      });
      for (const ds of applicable) daemonPorts.push(...ds.hostPorts);
      const types: TType[] = [];
      const raw = input.instanceTypes.get(pool.nodeClassName) ?? [];
      for (const it of raw) {
        const offerings = it.offerings.filter((o) => offeringAllowed(o, f));
        if (offerings.length === 0) continue;
        const labels = it.labels;
        let ok = true;
        for (const r of f.labelReqs) {
          if (!r.admits(labels[r.key])) {
            ok = false;
            break;
          }
        }
        if (!ok) continue;
        const daemon = new Float64Array(this.dims.names.length);
        const typeReqs = reqs.intersect(Requirements.fromLabels(labels));
        for (const ds of applicable) {
          if (ds.alternatives.some((alt) => mergeRequirements(typeReqs, alt, 'node').ok))
            addInto(daemon, ds.vec);
        }
        const alloc = this.dims.vec(computeAllocatable(it));
        for (let i = 0; i < alloc.length; i++) alloc[i] = (alloc[i] as number) - (daemon[i] as number);
        let basePrice = Number.POSITIVE_INFINITY;
        for (const o of offerings) basePrice = Math.min(basePrice, o.priceUsdPerHour);
        types.push({ it, labels, alloc, daemon, capacity: it.capacity, offerings, basePrice });
      }
      types.sort((a, b) => a.basePrice - b.basePrice || compareStrings(a.it.name, b.it.name));
      const remaining = pool.limits === undefined ? undefined : new Map(Object.entries(pool.limits));
      this.templates.push({
        pool,
        order,
        reqs,
        taints,
        startupTaints: pool.startupTaints ?? [],
        types,
        daemonPorts,
        remaining,
        domainCache: new Map(),
        unavailableReason:
          raw.length === 0
            ? `no instance types for nodeClass "${pool.nodeClassName}"`
            : types.length === 0
              ? `no instance type with an available offering matches the nodePool requirements (${reqs.without(Label.nodePool)})`
              : undefined,
      });
    });
  }

  private compileDaemonSet(ds: DaemonSet): {
    vec: Vec;
    tolerations: readonly NonNullable<Pod['tolerations']>[number][];
    alternatives: readonly Requirements[];
    hostPorts: readonly string[];
  } {
    const pod = ds.template;
    const object = `daemonSet "${ds.namespace}/${ds.name}"`;
    const base = Requirements.parse(selectorToRequirements(pod.nodeSelector), {
      object,
      field: 'spec.template.spec.nodeSelector',
    });
    const terms =
      pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    const alternatives =
      terms.length === 0
        ? [base]
        : terms.map((t, i) =>
            base.intersect(
              Requirements.parse(t.matchExpressions ?? [], {
                object,
                field: `spec.template.spec.affinity.nodeAffinity.required.nodeSelectorTerms[${i}]`,
              }),
            ),
          );
    return {
      vec: this.dims.vec(computePodRequests(pod)),
      tolerations: pod.tolerations ?? [],
      alternatives,
      hostPorts: podHostPorts(pod),
    };
  }

  /** Domains a template can offer for a key (zones and capacity types from offerings). */
  private templateDomains(t: Template, key: string): readonly string[] {
    const cached = t.domainCache.get(key);
    if (cached !== undefined) return cached;
    const values = new Set<string>();
    if (key === Label.zone || key === Label.capacityType) {
      for (const tt of t.types)
        for (const o of tt.offerings) values.add(key === Label.zone ? o.zone : o.capacityType);
    } else {
      const r = t.reqs.get(key);
      const finite = r?.finiteValues();
      if (finite !== undefined) for (const v of finite) values.add(v);
      else if (INSTANCE_TYPE_LABEL_KEYS.has(key)) {
        for (const tt of t.types) {
          const v = tt.labels[key];
          if (v !== undefined && (r === undefined || r.has(v))) values.add(v);
        }
      }
    }
    const out = [...values].sort();
    t.domainCache.set(key, out);
    return out;
  }

  // ---- existing capacity -----------------------------------------------------------------------

  private buildExistingBins(): void {
    const input = this.input;
    const byPool = new Map(this.templates.map((t) => [t.pool.name, t]));
    const nodes = [...(input.nodes ?? [])].sort(
      (a, b) => Number(b.initialized) - Number(a.initialized) || compareStrings(a.name, b.name),
    );
    for (const node of nodes) this.addNodeBin(node, byPool.get(node.nodePoolName ?? ''));
    for (const claim of [...(input.nodeClaims ?? [])].sort((a, b) => compareStrings(a.name, b.name))) {
      this.addInFlightBin(claim, byPool.get(claim.nodePoolName));
    }
  }

  private addNodeBin(node: ExistingNode, template: Template | undefined): void {
    const startup = template?.startupTaints ?? [];
    const taints = (node.taints ?? []).filter(
      (t) =>
        node.initialized ||
        !(isEphemeralTaint(t) || startup.some((s) => s.key === t.key && s.effect === t.effect)),
    );
    const disrupted = taints.some((t) => t.key === DISRUPTED_TAINT.key);
    const used = new Float64Array(this.dims.names.length);
    for (const p of node.pods) addInto(used, this.dims.vec(computePodRequests(p)));
    const bin = new Bin(
      'node',
      node.name,
      Requirements.none,
      node.labels,
      taints.filter((t) => t.key !== DISRUPTED_TAINT.key),
      used,
      this.dims.vec(node.allocatable),
      template,
      node.unschedulable === true || disrupted,
    );
    bin.hostPorts = node.pods.flatMap((p) => podHostPorts(p));
    this.addBin(bin);
    if (template?.remaining !== undefined) {
      this.consumeLimits(template, node.capacity ?? node.allocatable);
    }
    for (const p of node.pods) this.recordExisting(p, bin);
  }

  private addInFlightBin(claim: InFlightNodeClaim, template: Template | undefined): void {
    const object = `nodeClaim "${claim.name}"`;
    const reqs = Requirements.parse(claim.requirements, { object, field: 'spec.requirements' });
    const names = new Set(claim.instanceTypeNames);
    const candidates = (template?.types ?? []).filter((t) => names.has(t.it.name));
    let cap: Vec;
    const launchedType = claim.labels?.[Label.instanceType];
    const launched = candidates.find((t) => t.it.name === launchedType);
    if (claim.allocatable !== undefined) {
      cap = this.dims.vec(claim.allocatable);
      if (launched !== undefined)
        for (let i = 0; i < cap.length; i++) cap[i] = (cap[i] as number) - (launched.daemon[i] as number);
    } else if (candidates.length > 0) {
      cap = new Float64Array(this.dims.names.length).fill(Number.POSITIVE_INFINITY);
      for (const t of candidates)
        for (let i = 0; i < cap.length; i++) cap[i] = Math.min(cap[i] as number, t.alloc[i] as number);
    } else {
      cap = new Float64Array(this.dims.names.length);
    }
    const used = new Float64Array(this.dims.names.length);
    for (const p of claim.pods) addInto(used, this.dims.vec(computePodRequests(p)));
    const bin = new Bin(
      'inflight',
      claim.labels?.[Label.hostname] ?? claim.name,
      reqs,
      claim.labels,
      claim.taints ?? [],
      used,
      cap,
      template,
      false,
    );
    bin.hostPorts = [...(template?.daemonPorts ?? []), ...claim.pods.flatMap((p) => podHostPorts(p))];
    this.addBin(bin);
    if (template?.remaining !== undefined) {
      let capacity: ResourceList | undefined = claim.capacity;
      if (capacity === undefined) {
        const max: Record<string, number> = {};
        for (const t of candidates) {
          for (const [k, v] of Object.entries(t.capacity)) max[k] = Math.max(max[k] ?? 0, v);
        }
        capacity = max;
      }
      this.consumeLimits(template, capacity);
    }
    for (const p of claim.pods) this.recordExisting(p, bin);
  }

  private consumeLimits(t: Template, capacity: ResourceList): void {
    const remaining = t.remaining;
    if (remaining === undefined) return;
    for (const [k, v] of remaining) {
      remaining.set(k, v - (k === 'nodes' ? 1 : (capacity[k] ?? 0)));
    }
  }

  // ---- topology groups -------------------------------------------------------------------------

  private group(
    kind: TopologyGroup['kind'],
    key: string,
    selector: LabelSelector,
    namespaces: ReadonlySet<string> | undefined,
    maxSkew: number,
    minDomains: number | undefined,
    nodeFilter: Requirements | undefined,
  ): TopologyGroup {
    const id = [
      kind,
      key,
      selectorKey(selector),
      namespaces === undefined ? '*' : [...namespaces].sort().join(','),
      maxSkew,
      minDomains ?? '',
      nodeFilter?.toString() ?? '',
    ].join('|');
    let g = this.groups.get(id);
    if (g === undefined) {
      g = new TopologyGroup(
        this.groups.size,
        kind,
        key,
        selector,
        namespaces,
        maxSkew,
        minDomains,
        nodeFilter,
      );
      this.groups.set(id, g);
    }
    return g;
  }

  private termNamespaces(pod: Pod, term: PodAffinityTerm): ReadonlySet<string> | undefined {
    const explicit = term.namespaces ?? [];
    if (term.namespaceSelector === undefined) {
      return new Set(explicit.length > 0 ? explicit : [pod.namespace]);
    }
    const sel = term.namespaceSelector;
    if (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0) {
      return undefined;
    }
    const out = new Set(explicit);
    for (const [ns, labels] of this.input.namespaceLabels ?? [])
      if (matchesSelector(sel, labels)) out.add(ns);
    return out;
  }

  private compileTerms(
    pod: Pod,
    kind: 'affinity' | 'antiAffinity',
    terms: readonly { readonly weight: number; readonly term: PodAffinityTerm }[],
  ): CompiledTerm[] {
    return terms.map(({ weight, term }) => ({
      term,
      weight,
      group: this.group(
        kind,
        term.topologyKey,
        term.labelSelector ?? {},
        this.termNamespaces(pod, term),
        0,
        undefined,
        undefined,
      ),
    }));
  }

  /** Records a pod that is already bound (or nominated) in the topology counts. */
  private recordExisting(pod: Pod, bin: Bin): void {
    const anti = pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
    const owned = anti.map((term) =>
      this.group(
        'antiAffinity',
        term.topologyKey,
        term.labelSelector ?? {},
        this.termNamespaces(pod, term),
        0,
        undefined,
        undefined,
      ),
    );
    this.pendingExisting.push({ pod, bin, owned });
  }

  private readonly pendingExisting: { pod: Pod; bin: Bin; owned: readonly TopologyGroup[] }[] = [];

  /** Once every group exists: count existing pods, fill spread domains, link shapes to groups. */
  private finishGroups(): void {
    const groups = [...this.groups.values()];
    for (const g of groups) {
      if (g.kind !== 'spread' || g.key === Label.hostname) continue;
      for (const t of this.templates) for (const d of this.templateDomains(t, g.key)) g.domains.add(d);
      for (const b of this.bins) {
        const v = b.labels?.[g.key];
        if (v !== undefined) g.domains.add(v);
      }
    }
    for (const { pod, bin, owned } of this.pendingExisting) {
      const counted = this.groupsSelecting(pod.labels, pod.namespace);
      this.recordPlacement(bin, bin.reqs, counted, owned);
    }
    for (const shape of this.shapes.values()) {
      shape.countedBy = this.groupsSelecting(shape.pod.labels, shape.pod.namespace);
      shape.inverse = groups.filter(
        (g) => g.kind === 'antiAffinity' && g.selects(shape.pod.labels, shape.pod.namespace),
      );
    }
  }

  private groupsSelecting(labels: Labels | undefined, namespace: string): readonly TopologyGroup[] {
    const key = `${namespace}\u0000${JSON.stringify(labels ?? {})}`;
    let out = this.labelMatchCache.get(key);
    if (out === undefined) {
      out = [...this.groups.values()].filter((g) => g.selects(labels, namespace));
      this.labelMatchCache.set(key, out);
    }
    return out;
  }

  private binDomains(bin: Bin, reqs: Requirements, key: string): BinDomains {
    if (key === Label.hostname) return { kind: 'one', value: bin.name };
    if (bin.labels !== undefined && (bin.kind === 'node' || bin.labels[key] !== undefined)) {
      const v = bin.labels[key];
      return v === undefined ? { kind: 'none' } : { kind: 'one', value: v };
    }
    const r = reqs.get(key);
    if (bin.kind === 'inflight') {
      const v = r?.singleValue();
      if (v !== undefined) return { kind: 'one', value: v };
      const finite = r?.finiteValues();
      return finite === undefined || finite.length === 0
        ? { kind: 'none' }
        : { kind: 'some', values: finite };
    }
    const universe = bin.template === undefined ? [] : this.templateDomains(bin.template, key);
    const values = r === undefined ? universe : universe.filter((d) => r.has(d));
    if (values.length === 1) return { kind: 'one', value: values[0] as string };
    return values.length === 0 ? { kind: 'none' } : { kind: 'some', values };
  }

  private recordPlacement(
    bin: Bin,
    reqs: Requirements,
    counted: readonly TopologyGroup[],
    owned: readonly TopologyGroup[],
  ): void {
    for (const g of counted) {
      if (g.nodeFilter !== undefined && !this.binPassesFilter(bin, reqs, g.nodeFilter)) continue;
      const d = this.binDomains(bin, reqs, g.key);
      if (d.kind === 'one') g.record(d.value, false, true);
      else if (d.kind === 'some' && g.kind === 'antiAffinity')
        for (const v of d.values) g.record(v, false, true);
    }
    for (const g of owned) {
      const d = this.binDomains(bin, reqs, g.key);
      if (d.kind === 'one') g.record(d.value, true, false);
      else if (d.kind === 'some') for (const v of d.values) g.record(v, true, false);
    }
  }

  private binPassesFilter(bin: Bin, reqs: Requirements, filter: Requirements): boolean {
    if (bin.kind === 'node' && bin.labels !== undefined) return filter.matchesLabels(bin.labels);
    return mergeRequirements(reqs, filter, 'node').ok;
  }

  // ---- pods, shapes and relaxation -------------------------------------------------------------

  private podState(pod: Pod, requests: ResourceList): PodState {
    const key = JSON.stringify([
      pod.labels,
      pod.namespace,
      pod.containers,
      pod.initContainers,
      pod.overhead,
      pod.podRequests,
      pod.nodeSelector,
      pod.affinity,
      pod.tolerations,
      pod.topologySpreadConstraints,
      pod.volumeTopology,
    ]);
    let shape = this.shapes.get(key);
    if (shape === undefined) {
      shape = this.compileShape(pod, requests, key.slice(JSON.stringify(pod.labels ?? null).length + 2));
      this.shapes.set(key, shape);
    }
    const relax: RelaxState = this.respectPreferences
      ? {
          term: 0,
          podAffinity: 0,
          antiAffinity: 0,
          preferredNode: 0,
          spread: 0,
          toleratePreferNoSchedule: false,
        }
      : {
          term: 0,
          podAffinity: shape.affinityPreferred.length,
          antiAffinity: shape.antiPreferred.length,
          preferredNode: shape.preferredNode.length,
          spread: shape.scheduleAnywayCount,
          toleratePreferNoSchedule: false,
        };
    return { pod, shape, relax, failedEpoch: -1, lastReasons: [] };
  }

  private compileShape(pod: Pod, requests: ResourceList, batchKey: string): Shape {
    const object = `pod "${pod.namespace}/${pod.name}"`;
    let base = Requirements.parse(selectorToRequirements(pod.nodeSelector), {
      object,
      field: 'spec.nodeSelector',
    });
    (pod.volumeTopology ?? []).forEach((v, i) => {
      base = base.intersect(
        Requirements.parse(v.requirements, { object, field: `volumeTopology[${i}] (claim ${v.claimName})` }),
      );
    });
    const na = pod.affinity?.nodeAffinity;
    const requiredTerms = (na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).map(
      (t, i) =>
        Requirements.parse(t.matchExpressions ?? [], {
          object,
          field: `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[${i}]`,
        }),
    );
    const preferredNode = (na?.preferredDuringSchedulingIgnoredDuringExecution ?? [])
      .map((p, i) => ({
        weight: p.weight,
        i,
        reqs: Requirements.parse(p.preference.matchExpressions ?? [], {
          object,
          field: `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`,
        }),
      }))
      .sort((a, b) => b.weight - a.weight || a.i - b.i)
      .map((p) => p.reqs);
    const byWeight = <T extends { readonly weight: number }>(xs: readonly T[]): T[] =>
      xs
        .map((x, i) => ({ x, i }))
        .sort((a, b) => b.x.weight - a.x.weight || a.i - b.i)
        .map(({ x }) => x);
    const pa = pod.affinity?.podAffinity;
    const paa = pod.affinity?.podAntiAffinity;
    const affinityRequired = this.compileTerms(
      pod,
      'affinity',
      (pa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term) => ({ weight: 0, term })),
    );
    const affinityPreferred = this.compileTerms(
      pod,
      'affinity',
      byWeight(pa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) => ({
        weight: w.weight,
        term: w.podAffinityTerm,
      })),
    );
    const antiRequired = this.compileTerms(
      pod,
      'antiAffinity',
      (paa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term) => ({ weight: 0, term })),
    );
    const antiPreferred = this.compileTerms(
      pod,
      'antiAffinity',
      byWeight(paa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) => ({
        weight: w.weight,
        term: w.podAffinityTerm,
      })),
    );
    const strict = requiredTerms[0] === undefined ? base : base.intersect(requiredTerms[0]);
    const spreads: SpreadRef[] = (pod.topologySpreadConstraints ?? []).map((c, i) => {
      if (!Number.isInteger(c.maxSkew) || c.maxSkew < 1) {
        throw new ValidationError(
          object,
          `spec.topologySpreadConstraints[${i}].maxSkew`,
          `${c.maxSkew} must be ≥ 1`,
        );
      }
      const extra: Record<string, string> = {};
      for (const k of c.matchLabelKeys ?? []) {
        const v = pod.labels?.[k];
        if (v !== undefined) extra[k] = v;
      }
      const sel: LabelSelector = {
        ...(c.labelSelector ?? {}),
        matchLabels: { ...(c.labelSelector?.matchLabels ?? {}), ...extra },
      };
      const filter = (c.nodeAffinityPolicy ?? 'Honor') === 'Honor' && strict.size > 0 ? strict : undefined;
      return {
        group: this.group(
          'spread',
          c.topologyKey,
          c.labelSelector === undefined && Object.keys(extra).length === 0 ? {} : sel,
          new Set([pod.namespace]),
          c.maxSkew,
          c.minDomains,
          filter,
        ),
        required: c.whenUnsatisfiable !== 'ScheduleAnyway',
      };
    });
    return {
      id: this.shapes.size,
      batchKey,
      pod,
      requests,
      vec: this.dims.vec(requests),
      hostPorts: podHostPorts(pod),
      base,
      requiredTerms,
      preferredNode,
      affinityRequired,
      affinityPreferred,
      antiRequired,
      antiPreferred,
      spreads,
      scheduleAnywayCount: spreads.filter((s) => !s.required).length,
      countedBy: EMPTY_GROUPS,
      inverse: EMPTY_GROUPS,
    };
  }

  private effective(shape: Shape, r: RelaxState): Effective {
    const key = `${shape.id}|${r.term}|${r.podAffinity}|${r.antiAffinity}|${r.preferredNode}|${r.spread}|${r.toleratePreferNoSchedule}`;
    const cached = this.effectives.get(key);
    if (cached !== undefined) return cached;
    let reqs = shape.base;
    const term = shape.requiredTerms[r.term];
    if (term !== undefined) reqs = reqs.intersect(term);
    const pref = shape.preferredNode[r.preferredNode];
    if (pref !== undefined) reqs = reqs.intersect(pref);
    const empty = reqs.firstEmpty();
    const selects = (g: TopologyGroup): boolean => g.selects(shape.pod.labels, shape.pod.namespace);
    const active = (t: CompiledTerm): ActiveTopology => ({ group: t.group, selfSelecting: selects(t.group) });
    let dropAnyway = r.spread;
    const spreads: ActiveTopology[] = [];
    for (const s of shape.spreads) {
      if (!s.required && dropAnyway > 0) {
        dropAnyway -= 1;
        continue;
      }
      spreads.push({ group: s.group, selfSelecting: selects(s.group) });
    }
    const ec: Effective = {
      id: this.effectiveCount++,
      shape,
      batchKey: `${shape.batchKey}|${key.slice(key.indexOf('|'))}`,
      reqs,
      contradiction:
        empty === undefined ? undefined : `the pod's own requirements contradict each other on ${empty.key}`,
      ignorePreferNoSchedule: r.toleratePreferNoSchedule,
      spreads,
      affinities: [...shape.affinityRequired, ...shape.affinityPreferred.slice(r.podAffinity)].map(active),
      antiAffinities: [...shape.antiRequired, ...shape.antiPreferred.slice(r.antiAffinity)].map(active),
      ownedAntiAffinity: shape.antiRequired.map((t) => t.group),
      skip: 0,
      rejected: new Uint8Array(64),
      failedEpoch: -1,
      failReasons: [],
      templateCache: new Map(),
      narrowedTypes: new Map(),
      eligible: new Map(),
    };
    this.effectives.set(key, ec);
    return ec;
  }

  /** One relaxation step in Karpenter's order, or undefined when nothing is left to relax. */
  private relax(shape: Shape, r: RelaxState): RelaxState | undefined {
    if (shape.requiredTerms.length > 1 && r.term < shape.requiredTerms.length - 1)
      return { ...r, term: r.term + 1 };
    if (r.podAffinity < shape.affinityPreferred.length) return { ...r, podAffinity: r.podAffinity + 1 };
    if (r.antiAffinity < shape.antiPreferred.length) return { ...r, antiAffinity: r.antiAffinity + 1 };
    if (r.preferredNode < shape.preferredNode.length) return { ...r, preferredNode: r.preferredNode + 1 };
    if (r.spread < shape.scheduleAnywayCount) return { ...r, spread: r.spread + 1 };
    if (!r.toleratePreferNoSchedule && this.anyPreferNoSchedule)
      return { ...r, toleratePreferNoSchedule: true };
    return undefined;
  }

  /** Domains the pod could reach at all for a key (Honor: its own requirements filter them). */
  private eligibleDomains(ec: Effective, key: string): readonly string[] {
    let out = ec.eligible.get(key);
    if (out !== undefined) return out;
    const values = new Set<string>();
    for (const t of this.templates) {
      const s = this.staticNew(ec, t);
      if (!s.ok) continue;
      const r = s.reqs.get(key);
      for (const d of this.templateDomains(t, key)) if (r === undefined || r.has(d)) values.add(d);
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
          this.blockDirty[previous] === 1
        ) {
          this.tightenBlock(previous);
        }
        blockHadFit = false;
        const max = this.blockHeadroom[i >> BLOCK_SHIFT];
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
        !fits(bin.used, req, (bin.types[0] as TType).alloc)
      ) {
        contiguous = false;
        continue;
      }
      blockHadFit = true;
      const verdict = this.probe(ec, bin);
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
    const fresh = this.freshClaimCost(ec).perPod;
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
   * What a fresh NodeClaim would cost per pod. For a pod with no topology constraints and no
   * host ports, identical pods still queued may share it: the type with the lowest price per
   * pod for that run is chosen (`batch` pods), so a run of 4-cpu pods gets one large node rather
   * than one small node each.
   */
  private freshClaimCost(ec: Effective): { perPod: number; batch: number; template: Template | undefined } {
    for (const t of this.templates) {
      const s = this.staticNew(ec, t);
      if (!s.ok) continue;
      const first = s.types[0];
      if (first === undefined) break;
      const run = this.batchable(ec) ? (this.unplacedByBatch.get(ec.shape.batchKey) ?? 1) : 1;
      if (run <= 1) return { perPod: first.basePrice, batch: 1, template: t };
      const req = ec.shape.vec;
      let best = { perPod: first.basePrice, batch: 1, template: t as Template | undefined };
      for (const tt of s.types) {
        let fit = Number.POSITIVE_INFINITY;
        for (let i = 0; i < req.length; i++) {
          const need = req[i] as number;
          if (need > 0) fit = Math.min(fit, Math.floor((tt.alloc[i] as number) / need));
        }
        const n = Math.max(1, Math.min(run, fit));
        if (tt.basePrice / n < best.perPod) best = { perPod: tt.basePrice / n, batch: n, template: t };
      }
      return best;
    }
    return { perPod: Number.POSITIVE_INFINITY, batch: 1, template: undefined };
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

  private tolerationsOf(ec: Effective): NonNullable<Pod['tolerations']> {
    return ec.shape.pod.tolerations ?? [];
  }

  private portsConflict(a: readonly string[], b: readonly string[]): string | undefined {
    for (const x of a) for (const y of b) if (hostPortsConflict(x, y)) return x;
    return undefined;
  }

  /**
   * Whether the bin can take the pod, without changing anything: 'permanent' = it never will,
   * 'later' = not now, else what placing it would mean.
   */
  private probe(ec: Effective, bin: Bin): Probe | 'permanent' | 'later' {
    const shape = ec.shape;
    if (bin.unschedulable) return 'permanent';
    if (bin.kind === 'claim') {
      if (!fits(bin.used, shape.vec, bin.maxAlloc as Vec)) return 'permanent';
    } else if (!fits(bin.used, shape.vec, bin.cap as Vec)) {
      return 'permanent';
    }
    const taints = bin.kind === 'claim' ? (bin.template as Template).taints : bin.taints;
    if (firstUntolerated(taints, this.tolerationsOf(ec), ec.ignorePreferNoSchedule) !== undefined) {
      return 'permanent';
    }
    if (shape.hostPorts.length > 0 && this.portsConflict(shape.hostPorts, bin.hostPorts) !== undefined) {
      return 'permanent';
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
    if (
      ec.spreads.length > 0 ||
      ec.affinities.length > 0 ||
      ec.antiAffinities.length > 0 ||
      shape.inverse.length > 0
    ) {
      const verdict = checkTopology(
        this.binView(bin, merged),
        ec.spreads,
        ec.affinities,
        ec.antiAffinities,
        shape.inverse,
        (key) => this.eligibleDomains(ec, key),
      );
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
    const current = bin.types[0]?.basePrice ?? 0;
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
    const limited = this.withinLimits(bin, next);
    if (limited.length === 0) return false;
    if (limited.length !== next.length) next = [...limited];
    const minValues = this.minValuesShortfall(next, merged);
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
    if (bin.index >= 0) this.markDirty(bin.index);
    bin.pods.push(pod);
    bin.placed.push(toPodRef(pod));
    if (ec.shape.hostPorts.length > 0) bin.hostPorts = [...bin.hostPorts, ...ec.shape.hostPorts];
    // Only required anti-affinity binds other pods (kube-scheduler scores preferred terms only).
    this.recordPlacement(bin, reqs, ec.shape.countedBy, ec.ownedAntiAffinity);
  }

  private binView(bin: Bin, reqs: Requirements): BinView {
    return {
      hostname: bin.name,
      narrowable: bin.kind === 'claim',
      domains: (key) => this.binDomains(bin, reqs, key),
    };
  }

  private setTypes(bin: Bin, types: readonly TType[]): void {
    const cheapestChanged = bin.types[0] !== types[0];
    bin.types = types;
    if (cheapestChanged && bin.index >= 0) this.raiseBlock(bin.index, bin);
    const max = new Float64Array(this.dims.names.length).fill(Number.NEGATIVE_INFINITY);
    for (const t of types)
      for (let i = 0; i < max.length; i++)
        if ((t.alloc[i] as number) > (max[i] as number)) max[i] = t.alloc[i] as number;
    bin.maxAlloc = max;
    const template = bin.template as Template;
    if (template.remaining !== undefined) {
      const reserve = this.maxCapacity(template, this.launchable(bin, types));
      const previous = bin.reserve;
      for (const [k, v] of reserve) {
        template.remaining.set(k, (template.remaining.get(k) ?? 0) + (previous?.get(k) ?? 0) - v);
      }
      bin.reserve = reserve;
    }
  }

  /**
   * The types a claim can still launch as: its cheapest `maxInstanceTypes` (all of them when a
   * minValues requirement may pull in pricier ones). Limits reserve the largest of these, and
   * the plan only offers types within the reservation, so no launch can exceed a limit.
   */
  private launchable(bin: Bin, types: readonly TType[]): readonly TType[] {
    if (types.length <= this.maxTypes) return types;
    for (const r of bin.reqs.values()) if (r.minValues !== undefined) return types;
    return types.slice(0, this.maxTypes);
  }

  /** Narrows `types` so the claim's reservation stays within the pool's limits; may be empty. */
  private withinLimits(bin: Bin, types: readonly TType[]): readonly TType[] {
    const template = bin.template as Template;
    const remaining = template.remaining;
    if (remaining === undefined || this.limitsSlack(template)) return types;
    const budget = new Map<string, number>();
    for (const [k, v] of remaining) if (k !== 'nodes') budget.set(k, v + (bin.reserve?.get(k) ?? 0));
    const fitsBudget = (t: TType): boolean => {
      for (const [k, v] of budget) if ((t.capacity[k] ?? 0) > v) return false;
      return true;
    };
    const launchable = this.launchable(bin, types);
    if (launchable.every(fitsBudget)) return types;
    return types.filter(fitsBudget);
  }

  private maxCapacity(template: Template, types: readonly TType[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const k of template.remaining?.keys() ?? []) {
      if (k === 'nodes') continue;
      let m = 0;
      for (const t of types) m = Math.max(m, t.capacity[k] ?? 0);
      out.set(k, m);
    }
    return out;
  }

  /** The parts of a new-claim check that depend only on the pod's constraints and the pool. */
  private staticNew(ec: Effective, t: Template): StaticNew {
    const cached = ec.templateCache.get(t.order);
    if (cached !== undefined) return cached;
    const result = this.computeStaticNew(ec, t);
    ec.templateCache.set(t.order, result);
    return result;
  }

  private computeStaticNew(ec: Effective, t: Template): StaticNew {
    if (t.unavailableReason !== undefined) return { ok: false, reason: t.unavailableReason };
    const taint = firstUntolerated(t.taints, this.tolerationsOf(ec), ec.ignorePreferNoSchedule);
    if (taint !== undefined) return { ok: false, reason: `taint ${formatTaint(taint)} not tolerated` };
    const m = mergeRequirements(t.reqs, ec.reqs, 'nodePool');
    if (!m.ok) return { ok: false, reason: m.reason };
    const port = this.portsConflict(ec.shape.hostPorts, t.daemonPorts);
    if (port !== undefined) return { ok: false, reason: `host port ${port} is taken by a DaemonSet` };
    const f = typeFilterOf(m.reqs);
    const req = ec.shape.vec;
    const zero = new Float64Array(req.length);
    const compatible = t.types.filter((tt) => typeMatches(tt, f));
    const types = compatible.filter((tt) => fits(zero, req, tt.alloc));
    if (types.length > 0) return { ok: true, reqs: m.reqs, types };
    if (compatible.length === 0) {
      const instanceReqs = [...m.reqs.values()].filter(
        (r) => INSTANCE_TYPE_LABEL_KEYS.has(r.key) && !r.isAny(),
      );
      return {
        ok: false,
        reason: `no instance type matches ${instanceReqs.map((r) => r.toString()).join(', ') || 'the requirements'}`,
      };
    }
    for (let i = 0; i < req.length; i++) {
      const need = req[i] as number;
      if (need <= 0) continue;
      if (!compatible.some((tt) => (tt.alloc[i] as number) >= need)) {
        const name = this.dims.names[i] as string;
        return { ok: false, reason: `no instance type has ${formatQuantity(name, need)} ${name}` };
      }
    }
    return {
      ok: false,
      reason: `no instance type has ${formatList(this.dims, req)} together (after DaemonSet overhead)`,
    };
  }

  /** Tries a new NodeClaim from the template; undefined when placed, else the reason. */
  private tryNewClaim(pod: Pod, ec: Effective, t: Template): string | undefined {
    const s = this.staticNew(ec, t);
    if (!s.ok) return s.reason;
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
    if (
      ec.spreads.length > 0 ||
      ec.affinities.length > 0 ||
      ec.antiAffinities.length > 0 ||
      shape.inverse.length > 0
    ) {
      const verdict = checkTopology(
        this.binView(bin, reqs),
        ec.spreads,
        ec.affinities,
        ec.antiAffinities,
        shape.inverse,
        (key) => this.eligibleDomains(ec, key),
      );
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
    if (remaining !== undefined && !this.limitsSlack(t)) {
      const affordable = types.filter((tt) => {
        for (const [k, v] of remaining) if (k !== 'nodes' && (tt.capacity[k] ?? 0) > v) return false;
        return true;
      });
      if (affordable.length === 0) {
        const limited = [...remaining.entries()].filter(([k]) => k !== 'nodes');
        return `limits ${limited.map(([k]) => `${k} ${formatQuantity(k, t.pool.limits?.[k] ?? 0)}`).join(', ')} leave room for no instance type that fits (remaining ${limited.map(([k, v]) => `${k} ${formatQuantity(k, Math.max(0, v))}`).join(', ')})`;
      }
      types = affordable;
    }
    const shortfall = this.minValuesShortfall(types, reqs);
    if (shortfall !== undefined && this.strictMinValues) return shortfall;
    bin.minValuesRelaxed = shortfall !== undefined;
    bin.reqs = reqs;
    addInto(bin.used, shape.vec);
    if (remaining?.has('nodes')) remaining.set('nodes', (remaining.get('nodes') ?? 0) - 1);
    this.setTypes(bin, types);
    this.addBin(bin);
    this.claims.push(bin);
    this.commonCommit(pod, ec, bin, reqs);
    const fresh = this.freshClaimCost(ec);
    this.reservation =
      fresh.batch > 1 && fresh.template === t
        ? { batchKey: ec.batchKey, bin, left: fresh.batch - 1 }
        : undefined;
    return undefined;
  }

  /** True when every limited resource has room for the largest instance type of the pool. */
  private limitsSlack(t: Template): boolean {
    const remaining = t.remaining;
    if (remaining === undefined) return true;
    let max = this.maxCapacityCache.get(t.order);
    if (max === undefined) {
      max = this.maxCapacity(t, t.types);
      this.maxCapacityCache.set(t.order, max);
    }
    for (const [k, v] of max) if ((remaining.get(k) ?? 0) < v) return false;
    return true;
  }

  private readonly maxCapacityCache = new Map<number, Map<string, number>>();

  /**
   * Per block of BLOCK bins, an upper bound on their headroom (what fits at no extra cost: the
   * free room of an existing node, or of a planned claim's current cheapest type). Lets the
   * scan for a free fit skip whole blocks. Raised whenever a bin's headroom grows; tightened
   * lazily when a scanned block turns out to hold nothing that fits.
   */
  private readonly blockHeadroom: Vec[] = [];
  /** 1 when a bin in the block lost headroom since the block's bound was computed. */
  private blockDirty = new Uint8Array(64);

  private markDirty(index: number): void {
    const b = index >> BLOCK_SHIFT;
    if (b >= this.blockDirty.length) {
      const grown = new Uint8Array(b * 2 + 64);
      grown.set(this.blockDirty);
      this.blockDirty = grown;
    }
    this.blockDirty[b] = 1;
  }

  private addBin(bin: Bin): void {
    bin.index = this.bins.length;
    this.bins.push(bin);
    this.raiseBlock(bin.index, bin);
  }

  private headroomOf(bin: Bin, out: Vec): Vec {
    const cap = bin.kind === 'claim' ? (bin.types[0] as TType).alloc : (bin.cap as Vec);
    for (let i = 0; i < out.length; i++) out[i] = (cap[i] as number) - (bin.used[i] as number);
    return out;
  }

  private raiseBlock(index: number, bin: Bin): void {
    const b = index >> BLOCK_SHIFT;
    let max = this.blockHeadroom[b];
    if (max === undefined) {
      max = new Float64Array(this.dims.names.length).fill(Number.NEGATIVE_INFINITY);
      this.blockHeadroom[b] = max;
    }
    const h = this.headroomOf(bin, this.scratch);
    for (let i = 0; i < h.length; i++) if ((h[i] as number) > (max[i] as number)) max[i] = h[i] as number;
  }

  private tightenBlock(b: number): void {
    const max = new Float64Array(this.dims.names.length).fill(Number.NEGATIVE_INFINITY);
    const end = Math.min(this.bins.length, (b + 1) << BLOCK_SHIFT);
    for (let j = b << BLOCK_SHIFT; j < end; j++) {
      const h = this.headroomOf(this.bins[j] as Bin, this.scratch);
      for (let i = 0; i < h.length; i++) if ((h[i] as number) > (max[i] as number)) max[i] = h[i] as number;
    }
    this.blockHeadroom[b] = max;
    this.blockDirty[b] = 0;
  }

  private scratchVec: Vec | undefined;

  private get scratch(): Vec {
    if (this.scratchVec === undefined) this.scratchVec = new Float64Array(this.dims.names.length);
    return this.scratchVec;
  }

  /** A readable minValues failure, or undefined when every minValues is met. */
  private minValuesShortfall(types: readonly TType[], reqs: Requirements): string | undefined {
    for (const r of reqs.values()) {
      if (r.minValues === undefined) continue;
      const n = this.distinctValues(types, r.key, reqs).size;
      if (n < r.minValues) {
        return `minValues: ${r.key} needs ${r.minValues} distinct values, the instance types that fit offer ${n}`;
      }
    }
    return undefined;
  }

  private distinctValues(types: readonly TType[], key: string, reqs: Requirements): Set<string> {
    const out = new Set<string>();
    const f = typeFilterOf(reqs);
    for (const t of types) {
      if (key === Label.zone || key === Label.capacityType) {
        for (const o of t.offerings)
          if (offeringAllowed(o, f)) out.add(key === Label.zone ? o.zone : o.capacityType);
      } else {
        const v = t.labels[key];
        if (v !== undefined) out.add(v);
      }
    }
    return out;
  }

  // ---- results -------------------------------------------------------------------------------------

  private plan(bin: Bin): NodeClaimPlan {
    const template = bin.template as Template;
    const f = typeFilterOf(bin.reqs);
    const priced = bin.types
      .map((t) => ({ t, price: cheapestPrice(t, f) }))
      .filter((x) => Number.isFinite(x.price) && this.withinReservation(bin, x.t))
      .sort((a, b) => a.price - b.price || compareStrings(a.t.it.name, b.t.it.name));
    const chosen = this.truncate(priced, bin.reqs);
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
      requests: this.dims.list(requests),
      instanceTypes: candidates,
      minValuesRelaxed: bin.minValuesRelaxed,
    };
  }

  private withinReservation(bin: Bin, t: TType): boolean {
    if (bin.reserve === undefined) return true;
    for (const [k, v] of bin.reserve) if ((t.capacity[k] ?? 0) > v) return false;
    return true;
  }

  /** Cheapest first, at most maxTypes, keeping enough types to meet every minValues. */
  private truncate<T extends { readonly t: TType }>(priced: readonly T[], reqs: Requirements): T[] {
    if (priced.length <= this.maxTypes) return [...priced];
    const withMin = [...reqs.values()].filter((r) => r.minValues !== undefined);
    const f = typeFilterOf(reqs);
    const picked = new Set<number>();
    for (const r of withMin) {
      const seen = new Set<string>();
      priced.forEach((x, i) => {
        if (seen.size >= (r.minValues ?? 0)) return;
        const values =
          r.key === Label.zone || r.key === Label.capacityType
            ? x.t.offerings
                .filter((o) => offeringAllowed(o, f))
                .map((o) => (r.key === Label.zone ? o.zone : o.capacityType))
            : [x.t.labels[r.key]].filter((v): v is string => v !== undefined);
        if (values.some((v) => !seen.has(v))) {
          for (const v of values) seen.add(v);
          picked.add(i);
        }
      });
    }
    for (let i = 0; i < priced.length && picked.size < this.maxTypes; i++) picked.add(i);
    return [...picked].sort((a, b) => a - b).map((i) => priced[i] as T);
  }

  private unschedulableValue(ps: PodState): UnschedulablePod {
    const reasons = ps.lastReasons;
    return {
      pod: toPodRef(ps.pod),
      reasons,
      message: reasons
        .map((r) => (r.nodePool === '' ? r.reason : `nodePool ${r.nodePool}: ${r.reason}`))
        .join('; '),
    };
  }
}

function selectorToRequirements(selector: Labels | undefined): NodeSelectorRequirement[] {
  return Object.entries(selector ?? {}).map(([key, value]) => ({ key, operator: 'In', values: [value] }));
}

function formatList(dims: Dims, v: Vec): string {
  const parts: string[] = [];
  dims.names.forEach((name, i) => {
    const x = v[i] ?? 0;
    if (x > 0) parts.push(`${formatQuantity(name, x)} ${name}`);
  });
  return parts.join(', ');
}
