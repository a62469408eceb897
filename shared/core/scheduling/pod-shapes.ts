// Pod shapes: everything about a pod spec scheduling reads, compiled once per distinct spec, and
// its effective constraints under each relaxation state.
import { ValidationError } from '../errors.ts';
import { type LabelSelector, type Pod, podHostPorts } from '../pod.ts';
import { Requirements } from '../requirements.ts';
import type { ResourceList } from '../resources.ts';
import type { ActiveTopology, TopologyGroup } from '../topology.ts';
import { volumeAlternatives } from '../volume-topology.ts';
import {
  type CompiledTerm,
  type Effective,
  EMPTY_GROUPS,
  type PodState,
  type RelaxState,
  type Shape,
  type SpreadRef,
} from './model.ts';
import { initialRelax, selectorToRequirements } from './pod-order.ts';
import type { TopologyGroups } from './topology-groups.ts';
import type { Dims } from './vectors.ts';

export class PodShapes {
  private readonly shapes = new Map<string, Shape>();
  private readonly effectives = new Map<string, Effective>();
  private effectiveCount = 0;

  constructor(
    private readonly dims: Dims,
    private readonly groups: TopologyGroups,
    private readonly respectPreferences: boolean,
  ) {}

  /** Every compiled shape. */
  all(): Iterable<Shape> {
    return this.shapes.values();
  }

  /** The pod's queue entry; pods with the same spec share one compiled shape. */
  stateOf(pod: Pod, requests: ResourceList): PodState {
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
    const relax = initialRelax(shape, this.respectPreferences);
    return { pod, shape, relax, stuckAt: -1, lastReasons: [] };
  }

  private compileShape(pod: Pod, requests: ResourceList, batchKey: string): Shape {
    const object = `pod "${pod.namespace}/${pod.name}"`;
    const own = Requirements.parse(selectorToRequirements(pod.nodeSelector), {
      object,
      field: 'spec.nodeSelector',
    });
    const na = pod.affinity?.nodeAffinity;
    const rawTerms = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    const podTerms = rawTerms.map((t, i) =>
      Requirements.parse(t.matchExpressions ?? [], {
        object,
        field: `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[${i}]`,
      }),
    );
    const podFields = rawTerms.map((t) => ((t.matchFields ?? []).length > 0 ? t : undefined));
    // Volume topology joins the node requirements, never the spread's node filter: one claim's
    // terms are ANDed into the base, several alternatives multiply the required terms (each pod
    // term with each volume alternative, tried in that order).
    const volumes = volumeAlternatives(pod, object);
    let base = own;
    let requiredTerms = podTerms;
    let requiredTermFields = podFields;
    if (volumes.length === 1) {
      base = own.intersect(volumes[0] as Requirements);
    } else {
      const terms = podTerms.length === 0 ? [Requirements.none] : podTerms;
      requiredTerms = terms.flatMap((t) => volumes.map((v) => t.intersect(v)));
      requiredTermFields = terms.flatMap((_, i) => volumes.map(() => podFields[i]));
    }
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
    const affinityRequired = this.groups.compileTerms(
      pod,
      'affinity',
      (pa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term) => ({ weight: 0, term })),
    );
    const affinityPreferred = this.groups.compileTerms(
      pod,
      'affinity',
      byWeight(pa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) => ({
        weight: w.weight,
        term: w.podAffinityTerm,
      })),
    );
    const antiRequired = this.groups.compileTerms(
      pod,
      'antiAffinity',
      (paa?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term) => ({ weight: 0, term })),
    );
    const antiPreferred = this.groups.compileTerms(
      pod,
      'antiAffinity',
      byWeight(paa?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) => ({
        weight: w.weight,
        term: w.podAffinityTerm,
      })),
    );
    // nodeAffinityPolicy Honor: nodes matching the node selector and any required term count.
    const honored = podTerms.length === 0 ? [own] : podTerms.map((t) => own.intersect(t));
    const nodeFilter = honored.every((alt) => alt.size === 0) ? undefined : honored;
    const spreads: SpreadRef[] = (pod.topologySpreadConstraints ?? []).flatMap((c, i) => {
      if (!Number.isInteger(c.maxSkew) || c.maxSkew < 1) {
        throw new ValidationError(
          object,
          `spec.topologySpreadConstraints[${i}].maxSkew`,
          `${c.maxSkew} must be ≥ 1`,
        );
      }
      // A nil labelSelector selects no pod (Kubernetes): every domain counts 0, nothing to keep.
      if (c.labelSelector === undefined) return [];
      const extra: Record<string, string> = {};
      for (const k of c.matchLabelKeys ?? []) {
        const v = pod.labels?.[k];
        if (v !== undefined) extra[k] = v;
      }
      const sel: LabelSelector = {
        ...c.labelSelector,
        matchLabels: { ...(c.labelSelector.matchLabels ?? {}), ...extra },
      };
      const filter = (c.nodeAffinityPolicy ?? 'Honor') === 'Honor' ? nodeFilter : undefined;
      const taintFilter = c.nodeTaintsPolicy === 'Honor' ? (pod.tolerations ?? []) : undefined;
      const group = this.groups.group(
        'spread',
        c.topologyKey,
        sel,
        new Set([pod.namespace]),
        c.maxSkew,
        c.minDomains,
        filter,
        taintFilter,
      );
      return [{ group, required: c.whenUnsatisfiable !== 'ScheduleAnyway' }];
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
      requiredTermFields,
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

  /** The shape under a relaxation state (cached). */
  effective(shape: Shape, r: RelaxState): Effective {
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
      nodeFields: shape.requiredTermFields[r.term],
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
}
