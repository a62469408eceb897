import type { DisruptDecision } from '../decisions/disruption.ts';
import type { CandidateSet } from './candidates.ts';

// A pass that starts no more commands ends on the read it has rather than reading the whole cluster
// again (seconds at thousands of nodes). What it reports then is that read with the commands it
// started since (their decisions) applied: their candidates are no longer candidates, they count as
// being disrupted in their NodePools' budgets, and those waiting for replacements are in flight.

/** The NodeClaims the decisions' commands took (started, or deleted at once). */
function taken(decisions: readonly DisruptDecision[]) {
  return decisions
    .filter((d) => d.outcome === 'started' || d.outcome === 'deleted')
    .flatMap((d) => d.candidates);
}

/** The candidate set with the decisions' commands applied (pure). */
export function withoutStarted(set: CandidateSet, decisions: readonly DisruptDecision[]): CandidateSet {
  const nodes = taken(decisions);
  if (nodes.length === 0) return set;
  const names = new Set(nodes.map((n) => n.nodeClaim));
  const keep = <T extends { readonly nodeClaim: { readonly name: string } }>(list: readonly T[]) =>
    list.filter((x) => !names.has(x.nodeClaim.name));
  const counts = new Map(set.counts);
  for (const node of nodes) {
    const pool = node.nodePool === undefined ? undefined : counts.get(node.nodePool);
    if (node.nodePool !== undefined && pool !== undefined)
      counts.set(node.nodePool, { ...pool, disrupting: pool.disrupting + 1 });
  }
  return {
    ...set,
    candidates: keep(set.candidates),
    ...(set.staticCandidates === undefined ? {} : { staticCandidates: keep(set.staticCandidates) }),
    ...(set.windowCandidates === undefined ? {} : { windowCandidates: keep(set.windowCandidates) }),
    excluded: keep(set.excluded),
    counts,
  };
}

/** How many commands the decisions leave in flight (started, waiting for replacements). Pure. */
export function startedInFlight(decisions: readonly DisruptDecision[]): number {
  return new Set(decisions.filter((d) => d.outcome === 'started').map((d) => d.commandId)).size;
}
