// The state of one solve: its settings, the compiled NodePool templates and DaemonSets, every bin
// (existing nodes, in-flight NodeClaims, NodeClaims planned in this run) with their headroom
// index, the placements made so far, and the lookups that depend only on a pod's constraints.
import type { FitScoring } from '../resource-fit-score.ts';
import { Resource } from '../resources.ts';
import type { Placement, SolveInput } from '../scheduling-types.ts';
import type { TopologyGroup } from '../topology.ts';
import { AffinityPartners } from './affinity-partners.ts';
import { HeadroomIndex } from './headroom.ts';
import type { TType } from './instance-type-filter.ts';
import { Limits } from './limits.ts';
import type { Bin, CompiledDaemonSet, Effective, StaticNew, Template } from './model.ts';
import { PodShapes } from './pod-shapes.ts';
import { computeStaticNew, templateDomains } from './templates.ts';
import { TopologyGroups } from './topology-groups.ts';
import { Dims, type Vec } from './vectors.ts';
import { VolumeUsage } from './volume-limits.ts';

/** Where cpu and memory sit in a solve's vectors (undefined: no input names it). */
export interface FitDims {
  readonly cpu: number | undefined;
  readonly memory: number | undefined;
}

export class SolveState {
  readonly dims = new Dims();
  templates: readonly Template[] = [];
  daemonSets: readonly CompiledDaemonSet[] = [];
  anyPreferNoSchedule = false;
  /** Existing nodes, in-flight NodeClaims, then the NodeClaims planned in this run, by `Bin.index`. */
  readonly bins: Bin[] = [];
  headroom: HeadroomIndex = new HeadroomIndex(0);
  /** Set once the queue's shapes are linked to their topology groups. */
  partners: AffinityPartners = new AffinityPartners([]);
  readonly placements: Placement[] = [];
  readonly groups: TopologyGroups;
  readonly shapes: PodShapes;
  readonly limits: Limits;
  readonly volumes: VolumeUsage;
  readonly maxTypes: number;
  readonly strictMinValues: boolean;
  readonly maxNewClaims: number;
  readonly existingNodeScoring: FitScoring | undefined;
  /** Bins before this index are existing nodes and in-flight NodeClaims; set once they are added. */
  existingEnd = 0;
  /** Pods per batch key not yet placed. */
  readonly unplacedByBatch = new Map<string, number>();
  /** The largest allocatable per candidate list of a planned NodeClaim (see placing.ts). */
  readonly largestAllocs = new WeakMap<readonly TType[], Vec>();
  /** `staticNew` per template order and effective batch key. */
  private readonly staticByBatch = new Map<string, StaticNew>();
  /** Moves on with every placement: a failure recorded at an earlier epoch may not hold any more. */
  epoch = 0;
  /**
   * Moves on with every placement and every relaxation step. The queue gives up on a pod only
   * after a whole turn in which neither happened: Karpenter relaxes a pod all the way within one
   * try, so a pod still relaxing its preferences here may yet be placed in this turn, and a pod
   * that must join it (required pod affinity) needs another try after that.
   */
  progress = 0;

  constructor(readonly input: SolveInput) {
    this.maxTypes = input.options?.maxInstanceTypes ?? 60;
    this.strictMinValues = (input.options?.minValuesPolicy ?? 'Strict') === 'Strict';
    this.maxNewClaims = input.options?.maxNewNodeClaims ?? Number.POSITIVE_INFINITY;
    this.existingNodeScoring = input.options?.existingNodeScoring;
    this.groups = new TopologyGroups(input.namespaceLabels);
    const respectPreferences = (input.options?.preferencePolicy ?? 'Respect') === 'Respect';
    this.shapes = new PodShapes(this.dims, this.groups, respectPreferences);
    this.limits = new Limits(this.maxTypes);
    this.volumes = new VolumeUsage(input.claimDrivers);
  }

  /**
   * The vector positions of cpu and memory, the two resources kube-scheduler's score reads
   * (worked out once: every dimension is known before the first placement).
   */
  fitDims(): FitDims {
    this.fitDimsOnce ??= {
      cpu: this.dims.index.get(Resource.cpu),
      memory: this.dims.index.get(Resource.memory),
    };
    return this.fitDimsOnce;
  }

  private fitDimsOnce: FitDims | undefined;

  addBin(bin: Bin): void {
    bin.index = this.bins.length;
    this.bins.push(bin);
    this.headroom.raise(bin);
  }

  /** The parts of a new-claim check that depend only on the pod's constraints and the pool. */
  staticNew(ec: Effective, t: Template): StaticNew {
    const cached = ec.templateCache.get(t.order);
    if (cached !== undefined) return cached;
    // It reads nothing the pod's labels decide: pods that differ only in labels share it.
    const key = `${t.order}|${ec.batchKey}`;
    let result = this.staticByBatch.get(key);
    if (result === undefined) {
      result = computeStaticNew(ec, t, this.dims);
      this.staticByBatch.set(key, result);
    }
    ec.templateCache.set(t.order, result);
    return result;
  }

  /**
   * Domains of the group's key that count for the pod. A spread's are the group's own (every
   * domain its node inclusion policies admit: Kubernetes takes the minimum over them whichever
   * the pod can reach). Affinity only looks at domains of NodePools the pod tolerates and of
   * nodes it may use.
   */
  eligibleDomains(ec: Effective, group: TopologyGroup): readonly string[] {
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
}
