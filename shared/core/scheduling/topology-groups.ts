// The topology groups of one solve (spread, affinity, anti-affinity), deduplicated, with the
// pods counted per domain as they are placed.
import { Label, type Labels } from '../labels.ts';
import { type LabelSelector, matchesSelector, type Pod, type PodAffinityTerm } from '../pod.ts';
import type { Requirements } from '../requirements.ts';
import type { Toleration } from '../taints.ts';
import { type BinDomains, selectorKey, TopologyGroup } from '../topology.ts';
import { mergeRequirements } from './instance-type-filter.ts';
import type { Bin, CompiledTerm, Shape, Template } from './model.ts';
import { templateDomains } from './templates.ts';

export class TopologyGroups {
  private readonly groups = new Map<string, TopologyGroup>();
  private readonly labelMatchCache = new Map<string, readonly TopologyGroup[]>();
  /** The label keys the groups' selectors name, and how many groups there were then. */
  private selectorKeys: { readonly groups: number; readonly keys: readonly string[] } | undefined;

  constructor(private readonly namespaceLabels: ReadonlyMap<string, Labels> | undefined) {}

  /** The group with these parameters, created on first use. */
  group(
    kind: TopologyGroup['kind'],
    key: string,
    selector: LabelSelector | undefined,
    namespaces: ReadonlySet<string> | undefined,
    maxSkew: number,
    minDomains: number | undefined,
    nodeFilter: readonly Requirements[] | undefined,
    taintFilter?: readonly Toleration[],
  ): TopologyGroup {
    const id = [
      kind,
      key,
      selectorKey(selector),
      namespaces === undefined ? '*' : [...namespaces].sort().join(','),
      maxSkew,
      minDomains ?? '',
      nodeFilter?.map((alt) => alt.toString()).join(' or ') ?? '',
      taintFilter === undefined ? '' : JSON.stringify(taintFilter),
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
        taintFilter,
      );
      this.groups.set(id, g);
    }
    return g;
  }

  termNamespaces(pod: Pod, term: PodAffinityTerm): ReadonlySet<string> | undefined {
    const explicit = term.namespaces ?? [];
    if (term.namespaceSelector === undefined) {
      return new Set(explicit.length > 0 ? explicit : [pod.namespace]);
    }
    const sel = term.namespaceSelector;
    if (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0) {
      return undefined;
    }
    const out = new Set(explicit);
    for (const [ns, labels] of this.namespaceLabels ?? []) if (matchesSelector(sel, labels)) out.add(ns);
    return out;
  }

  compileTerms(
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
        term.labelSelector,
        this.termNamespaces(pod, term),
        0,
        undefined,
        undefined,
      ),
    }));
  }

  /** Records a pod that is already bound (or nominated) in the topology counts. */
  recordExisting(pod: Pod, bin: Bin): void {
    const anti = pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
    const owned = anti.map((term) =>
      this.group(
        'antiAffinity',
        term.topologyKey,
        term.labelSelector,
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
  finish(templates: readonly Template[], bins: readonly Bin[], shapes: Iterable<Shape>): void {
    const groups = [...this.groups.values()];
    // A spread's domains, as Kubernetes counts them: those of every node its node inclusion
    // policies admit (any required node-affinity term will do), here also those NodePools offer.
    for (const g of groups) {
      if (g.kind !== 'spread' || g.key === Label.hostname) continue;
      for (const t of templates) {
        if (!g.admitsTaints(t.taints)) continue;
        const domains = templateDomains(t, g.key);
        if (g.nodeFilter === undefined) {
          for (const d of domains) g.domains.add(d);
          continue;
        }
        for (const alt of g.nodeFilter) {
          const m = mergeRequirements(t.reqs, alt, 'nodePool');
          if (!m.ok) continue;
          const r = m.reqs.get(g.key);
          for (const d of domains) if (r === undefined || r.has(d)) g.domains.add(d);
        }
      }
      for (const b of bins) {
        if (b.labels === undefined) continue;
        if (!g.admitsTaints(b.taints) || !g.admitsLabels(b.labels)) continue;
        const v = b.labels[g.key];
        if (v !== undefined) g.domains.add(v);
      }
    }
    for (const { pod, bin, owned } of this.pendingExisting) {
      const counted = this.groupsSelecting(pod.labels, pod.namespace);
      this.recordPlacement(bin, bin.reqs, counted, owned);
    }
    for (const shape of shapes) {
      shape.countedBy = this.groupsSelecting(shape.pod.labels, shape.pod.namespace);
      shape.inverse = groups.filter(
        (g) => g.kind === 'antiAffinity' && g.selects(shape.pod.labels, shape.pod.namespace),
      );
    }
  }

  groupsSelecting(labels: Labels | undefined, namespace: string): readonly TopologyGroup[] {
    // Which groups select a pod depends on its namespace and its labels at the keys the groups'
    // selectors name, and on nothing else: the cache is keyed by those alone (cheaper than the
    // whole label set, and shared by pods that differ elsewhere, as the pods of a DaemonSet do).
    if (this.selectorKeys?.groups !== this.groups.size) {
      const keys = new Set<string>();
      for (const g of this.groups.values()) {
        for (const k of Object.keys(g.selector?.matchLabels ?? {})) keys.add(k);
        for (const e of g.selector?.matchExpressions ?? []) keys.add(e.key);
      }
      this.selectorKeys = { groups: this.groups.size, keys: [...keys].sort() };
      this.labelMatchCache.clear();
    }
    let key = namespace;
    for (const k of this.selectorKeys.keys) {
      const v = labels?.[k];
      key += v === undefined ? '\u0001' : `\u0000${v}`;
    }
    let out = this.labelMatchCache.get(key);
    if (out === undefined) {
      out = [...this.groups.values()].filter((g) => g.selects(labels, namespace));
      this.labelMatchCache.set(key, out);
    }
    return out;
  }

  binDomains(bin: Bin, reqs: Requirements, key: string): BinDomains {
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
    const universe = bin.template === undefined ? [] : templateDomains(bin.template, key);
    const values = r === undefined ? universe : universe.filter((d) => r.has(d));
    if (values.length === 1) return { kind: 'one', value: values[0] as string };
    return values.length === 0 ? { kind: 'none' } : { kind: 'some', values };
  }

  recordPlacement(
    bin: Bin,
    reqs: Requirements,
    counted: readonly TopologyGroup[],
    owned: readonly TopologyGroup[],
  ): void {
    for (const g of counted) {
      if (g.nodeFilter !== undefined && !this.binPassesFilter(bin, reqs, g.nodeFilter)) continue;
      if (!g.admitsTaints(bin.taints)) continue;
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

  private binPassesFilter(bin: Bin, reqs: Requirements, filter: readonly Requirements[]): boolean {
    if (bin.kind === 'node' && bin.labels !== undefined)
      return filter.some((alt) => alt.matchesLabels(bin.labels ?? {}));
    return filter.some((alt) => mergeRequirements(reqs, alt, 'node').ok);
  }
}
