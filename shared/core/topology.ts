import { Label, type Labels } from './labels.ts';
import { type LabelSelector, matchesSelector } from './pod.ts';
import { Requirement, type Requirements } from './requirements.ts';
import { firstUntolerated, type Taint, type Toleration } from './taints.ts';

/** What a topology group counts and how it constrains a pod. */
export type TopologyKind = 'spread' | 'affinity' | 'antiAffinity';

/**
 * Pods matching `selector` in `namespaces`, counted per domain of `key` (a zone, a hostname, a
 * capacity type…). For anti-affinity it also counts the pods that own the term, per domain, so
 * that a pending pod can honour the anti-affinity of pods already placed (the inverse check).
 */
export class TopologyGroup {
  /** Pods matching the selector per domain. */
  readonly counts = new Map<string, number>();
  /** Anti-affinity only: pods carrying this term per domain. */
  readonly owners = new Map<string, number>();
  /** Every domain of `key` a pod could be placed in (spread only). */
  readonly domains = new Set<string>();
  /** Total of `counts`. */
  total = 0;
  totalOwners = 0;

  constructor(
    readonly id: number,
    readonly kind: TopologyKind,
    readonly key: string,
    /** Undefined (a nil `labelSelector`) selects no pod, as in Kubernetes. */
    readonly selector: LabelSelector | undefined,
    /** Undefined = all namespaces. */
    readonly namespaces: ReadonlySet<string> | undefined,
    readonly maxSkew: number,
    readonly minDomains: number | undefined,
    /**
     * Spread with nodeAffinityPolicy Honor: only nodes compatible with one of these alternatives
     * (the pod's node selector ANDed with each required node-affinity term, the terms ORed) count.
     */
    readonly nodeFilter: readonly Requirements[] | undefined,
    /**
     * Spread with nodeTaintsPolicy Honor: the owning pod's tolerations. Nodes with a NoSchedule or
     * NoExecute taint they do not tolerate are outside the spread (no domain, no count).
     */
    readonly taintFilter: readonly Toleration[] | undefined = undefined,
  ) {}

  private domainList: readonly string[] | undefined;

  /** `domains`, sorted; read once every domain is known. */
  sortedDomains(): readonly string[] {
    this.domainList ??= [...this.domains].sort();
    return this.domainList;
  }

  /** False when nodeAffinityPolicy Honor excludes a node with these labels from the group. */
  admitsLabels(labels: Labels): boolean {
    return this.nodeFilter === undefined || this.nodeFilter.some((alt) => alt.matchesLabels(labels));
  }

  /** False when nodeTaintsPolicy Honor excludes a node with these taints from the group. */
  admitsTaints(taints: readonly Taint[]): boolean {
    return this.taintFilter === undefined || firstUntolerated(taints, this.taintFilter, true) === undefined;
  }

  /** True when a pod with these labels in this namespace is counted by the group. */
  selects(labels: Labels | undefined, namespace: string): boolean {
    if (this.namespaces !== undefined && !this.namespaces.has(namespace)) return false;
    return matchesSelector(this.selector, labels);
  }

  record(domain: string, owner: boolean, counted: boolean): void {
    if (counted) {
      this.counts.set(domain, (this.counts.get(domain) ?? 0) + 1);
      this.total += 1;
    }
    if (owner) {
      this.owners.set(domain, (this.owners.get(domain) ?? 0) + 1);
      this.totalOwners += 1;
    }
  }
}

/** Canonical text of a selector, for deduplicating groups. */
export function selectorKey(selector: LabelSelector | undefined): string {
  if (selector === undefined) return 'nothing';
  const labels = Object.entries(selector.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const exprs = (selector.matchExpressions ?? [])
    .map((e) => `${e.key} ${e.operator} ${[...(e.values ?? [])].sort().join(',')}`)
    .sort();
  return JSON.stringify([labels, exprs]);
}

/** The domains a bin may still take for a key: one value, several, or unknown (any). */
export type BinDomains =
  | { readonly kind: 'one'; readonly value: string }
  | { readonly kind: 'some'; readonly values: readonly string[] }
  | { readonly kind: 'none' };

/** Why a pod with required pod affinity on `key` cannot go to a bin: no pod to join there. */
export function affinityUnmet(key: string): string {
  return `pod affinity on ${key}: no matching pod in a reachable domain`;
}

/** Outcome of checking one pod's topology constraints against one bin. */
export type TopologyVerdict =
  | { readonly ok: true; readonly narrow: readonly Requirement[] }
  | { readonly ok: false; readonly reason: string; readonly permanent: boolean };

/** A topology constraint as it applies to one pod. */
export interface ActiveTopology {
  readonly group: TopologyGroup;
  /** The pod itself matches the group's selector. */
  readonly selfSelecting: boolean;
}

/** Inputs the topology check needs about the bin being considered. */
export interface BinView {
  /** The bin's hostname domain. */
  readonly hostname: string;
  /** Domains of a key given the merged (bin ∩ pod) requirements. */
  domains(key: string): BinDomains;
  /** True when the bin can still change its requirements (a planned NodeClaim). */
  readonly narrowable: boolean;
}

/**
 * Checks a pod's spread, affinity and anti-affinity (own and inverse) against a bin, and returns
 * the requirements the bin must narrow to (for example `zone In [b]`). Hostname-keyed failures
 * are permanent (counts only grow); others may change as pods are placed elsewhere.
 *
 * `eligibleDomains(group)` gives the domains of the group's key the pod could reach at all (for
 * the skew minimum; a spread's node inclusion policies decide which nodes count).
 */
export function checkTopology(
  bin: BinView,
  spreads: readonly ActiveTopology[],
  affinities: readonly ActiveTopology[],
  antiAffinities: readonly ActiveTopology[],
  inverse: readonly TopologyGroup[],
  eligibleDomains: (group: TopologyGroup) => readonly string[],
): TopologyVerdict {
  const narrow: Requirement[] = [];
  const narrowed = new Map<string, readonly string[]>();
  // Domains still open to the bin for a key; empty when the node is in no domain of the key.
  const candidates = (key: string): readonly string[] => {
    const already = narrowed.get(key);
    if (already !== undefined) return already;
    if (key === Label.hostname) return [bin.hostname];
    const d = bin.domains(key);
    if (d.kind === 'one') return [d.value];
    if (d.kind === 'some') return d.values;
    return [];
  };
  const restrict = (key: string, values: readonly string[]): void => {
    narrowed.set(key, values);
  };

  for (const { group, selfSelecting } of spreads) {
    const key = group.key;
    if (key === Label.hostname) {
      const count = (group.counts.get(bin.hostname) ?? 0) + (selfSelecting ? 1 : 0);
      if (count > group.maxSkew) {
        return {
          ok: false,
          reason: `topology spread on ${key}: maxSkew ${group.maxSkew} reached on this node`,
          permanent: true,
        };
      }
      continue;
    }
    const options = candidates(key);
    const eligible = eligibleDomains(group);
    let min = Number.POSITIVE_INFINITY;
    for (const d of eligible) min = Math.min(min, group.counts.get(d) ?? 0);
    if (!Number.isFinite(min) || (group.minDomains !== undefined && eligible.length < group.minDomains))
      min = 0;
    let best: string | undefined;
    let bestCount = Number.POSITIVE_INFINITY;
    for (const d of options) {
      const count = (group.counts.get(d) ?? 0) + (selfSelecting ? 1 : 0);
      if (
        count - min <= group.maxSkew &&
        (count < bestCount || (count === bestCount && best !== undefined && d < best))
      ) {
        best = d;
        bestCount = count;
      }
    }
    if (best === undefined) {
      return {
        ok: false,
        reason: `topology spread on ${key}: no domain keeps skew within ${group.maxSkew}`,
        permanent: false,
      };
    }
    restrict(key, [best]);
  }

  for (const { group, selfSelecting } of affinities) {
    const key = group.key;
    const options = candidates(key);
    let allowed = options.filter((d) => (group.counts.get(d) ?? 0) > 0);
    if (allowed.length === 0 && selfSelecting && group.total === 0) {
      const eligible = new Set(key === Label.hostname ? options : eligibleDomains(group));
      const first = options.find((d) => eligible.has(d));
      allowed = first === undefined ? [] : [first];
    }
    if (allowed.length === 0) return { ok: false, reason: affinityUnmet(key), permanent: false };
    restrict(key, allowed);
  }

  const avoid = (group: TopologyGroup, byOwners: boolean, what: string): TopologyVerdict | undefined => {
    const key = group.key;
    const map = byOwners ? group.owners : group.counts;
    const options = candidates(key);
    // A node outside every domain of the key cannot conflict.
    if (options.length === 0) return undefined;
    const allowed = options.filter((d) => (map.get(d) ?? 0) === 0);
    if (allowed.length === 0) {
      return {
        ok: false,
        reason: `${what} on ${key}: every reachable domain has a conflicting pod`,
        permanent: true,
      };
    }
    if (allowed.length !== options.length) restrict(key, allowed);
    return undefined;
  };
  for (const { group } of antiAffinities) {
    const failed = avoid(group, false, 'pod anti-affinity');
    if (failed !== undefined) return failed;
    // A pod with anti-affinity blocks every domain its node might land in. Karpenter leaves a
    // new node's zone open and so blocks all zones; pinning it to one domain lets the next pod
    // with the same anti-affinity use the other domains in the same batch.
    const open = candidates(group.key);
    if (bin.narrowable && group.key !== Label.hostname && open.length > 1)
      restrict(group.key, [open[0] as string]);
  }
  for (const group of inverse) {
    if (group.totalOwners === 0) continue;
    const failed = avoid(group, true, 'anti-affinity of a placed pod');
    if (failed !== undefined) return failed;
  }

  for (const [key, values] of narrowed) {
    if (key === Label.hostname) continue;
    const d = bin.domains(key);
    if (!bin.narrowable) {
      if (d.kind !== 'one' || !values.includes(d.value)) {
        return {
          ok: false,
          reason: `topology on ${key}: node is not in an allowed domain`,
          permanent: false,
        };
      }
      continue;
    }
    if (d.kind === 'one' && values.length === 1 && values[0] === d.value) continue;
    narrow.push(Requirement.in(key, values));
  }
  return { ok: true, narrow };
}
