import type { DisruptDecision } from '../decisions/disruption.ts';
import type { CandidateSet } from './candidates.ts';
import type { DisruptionCommand } from './method.ts';

// A pass that starts no more commands ends on the read it has rather than reading the whole cluster
// again (seconds at thousands of nodes): what it reports then leaves out the candidates of the
// commands it started since that read, and counts those still waiting for replacements in flight.

/** The candidate set without the candidates of `commands` (started since the set was read). Pure. */
export function withoutStarted(set: CandidateSet, commands: readonly DisruptionCommand[]): CandidateSet {
  if (commands.length === 0) return set;
  const started = new Set(commands.flatMap((c) => c.candidates.map((x) => x.nodeClaim.name)));
  const keep = <T extends { readonly nodeClaim: { readonly name: string } }>(list: readonly T[]) =>
    list.filter((x) => !started.has(x.nodeClaim.name));
  return {
    ...set,
    candidates: keep(set.candidates),
    ...(set.staticCandidates === undefined ? {} : { staticCandidates: keep(set.staticCandidates) }),
    ...(set.windowCandidates === undefined ? {} : { windowCandidates: keep(set.windowCandidates) }),
    excluded: keep(set.excluded),
  };
}

/** How many commands the decisions leave in flight (started, waiting for replacements). Pure. */
export function startedInFlight(decisions: readonly DisruptDecision[]): number {
  return new Set(decisions.filter((d) => d.outcome === 'started').map((d) => d.commandId)).size;
}
