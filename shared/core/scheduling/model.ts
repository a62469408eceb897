// The compiled state of one solve: NodePool templates, pod shapes under a relaxation state, and
// bins (existing nodes, in-flight NodeClaims and NodeClaims planned in this run).
import type { Labels } from '../labels.ts';
import type { NodePool } from '../node-pool.ts';
import type { NodeSelectorTerm, Pod, PodAffinityTerm, PodRef } from '../pod.ts';
import type { Requirements } from '../requirements.ts';
import type { ResourceList } from '../resources.ts';
import type { PoolReason } from '../scheduling-types.ts';
import type { Taint, Toleration } from '../taints.ts';
import type { ActiveTopology, TopologyGroup } from '../topology.ts';
import type { TType } from './instance-type-filter.ts';
import type { Vec } from './vectors.ts';

export interface Template {
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

export interface CompiledDaemonSet {
  readonly namespace: string;
  readonly name: string;
  readonly vec: Vec;
  readonly tolerations: readonly Toleration[];
  /** Node affinity alternatives (terms ORed), each ANDed with the node selector. */
  readonly alternatives: readonly Requirements[];
  readonly hostPorts: readonly string[];
}

export interface CompiledTerm {
  readonly term: PodAffinityTerm;
  readonly weight: number;
  readonly group: TopologyGroup;
}

export interface SpreadRef {
  readonly group: TopologyGroup;
  readonly required: boolean;
}

/** Everything about a pod spec that scheduling reads; identical pods share one shape. */
export interface Shape {
  readonly id: number;
  /** Identity of everything but labels: pods that differ only in labels pack alike. */
  readonly batchKey: string;
  readonly pod: Pod;
  readonly requests: ResourceList;
  readonly vec: Vec;
  readonly hostPorts: readonly string[];
  readonly base: Requirements;
  readonly requiredTerms: readonly Requirements[];
  /** The `matchFields` of each required term (same order); undefined where a term has none. */
  readonly requiredTermFields: readonly (NodeSelectorTerm | undefined)[];
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

export interface RelaxState {
  readonly term: number;
  readonly podAffinity: number;
  readonly antiAffinity: number;
  readonly preferredNode: number;
  readonly spread: number;
  readonly toleratePreferNoSchedule: boolean;
}

/** A shape under one relaxation state: the constraints one attempt checks. */
export interface Effective {
  readonly id: number;
  readonly shape: Shape;
  /** Shape batch key plus relaxation state. */
  readonly batchKey: string;
  readonly reqs: Requirements;
  /**
   * The active required term when it names node fields (`matchFields` on metadata.name): it
   * admits only existing nodes of those names, and no new node when it asks for names.
   */
  readonly nodeFields: NodeSelectorTerm | undefined;
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

export type StaticNew =
  | { readonly ok: false; readonly reason: string }
  | { readonly ok: true; readonly reqs: Requirements; readonly types: readonly TType[] };

export type BinKind = 'node' | 'inflight' | 'claim';

export class Bin {
  readonly pods: Pod[] = [];
  readonly placed: PodRef[] = [];
  /** Requests of each pod in `pods` (same order). */
  readonly vecs: Vec[] = [];
  /**
   * Pods in `pods` with no topology, host-port or inverse anti-affinity tie to this bin, which the
   * final improvement pass may move to another NodeClaim with the same requirements.
   */
  movable = 0;
  hostPorts: string[] = [];
  types: readonly TType[] = [];
  /**
   * A planned claim opened for a run of identical pods: the type chosen for the whole run, whose
   * room counts as paid for while it is still a candidate (see `target`).
   */
  planned: TType | undefined;
  /** The largest allocatable of `types` per dimension: shared between claims, never written. */
  maxAlloc: Vec | undefined;
  reserve: Map<string, number> | undefined;
  /** The one type `reserve` was taken for (see Limits.reserve); undefined when it is another reservation. */
  reservedFor: TType | undefined;
  minValuesRelaxed = false;
  /**
   * What NodeResourcesFit's score counts beyond `used` in cpu and memory (the default requests of
   * pods without one, and an in-flight NodeClaim's DaemonSet overhead) and beyond `cap` (that
   * overhead: a node's allocatable includes the room its DaemonSet pods take). Kept only for bins
   * of existing capacity.
   */
  scoreCpu = 0;
  scoreMemory = 0;
  scoreCapCpu = 0;
  scoreCapMemory = 0;
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

/**
 * The instance type a planned claim is expected to launch as: the type planned for its run of
 * pods while that still fits, else its cheapest candidate.
 */
export function target(bin: Bin): TType {
  return bin.planned ?? (bin.types[0] as TType);
}

export const EMPTY_GROUPS: readonly TopologyGroup[] = [];

/** What placing a pod on a bin would mean (nothing is changed until it is committed). */
export interface Probe {
  readonly bin: Bin;
  readonly merged: Requirements;
  readonly narrowed: boolean;
  /** How much more the claim's cheapest launchable type costs with the pod (USD/hour). */
  readonly extraCost: number;
}

export function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36).padStart(7, '0');
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface PodState {
  readonly pod: Pod;
  readonly shape: Shape;
  relax: RelaxState;
  /** `SolveState.progress` when the pod last failed with nothing left to relax; -1 otherwise. */
  stuckAt: number;
  lastReasons: readonly PoolReason[];
}
