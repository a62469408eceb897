import { ignoreNotFound } from '../../ports/errors.ts';
import { writeDecision } from '../decisions/decision.ts';
import type { CandidateSet } from './candidates.ts';
import { shouldConsolidate } from './consolidation.ts';
import { balancedRejected, recordAll, unconsolidatable } from './events.ts';
import type { DisruptionCandidate } from './method.ts';
import { atMostParallel } from './parallel.ts';
import type { PassView } from './pass-view.ts';

// Why a node consolidation looked at stays, as Karpenter's `Unconsolidatable` Event on the Node
// and the NodeClaim (and `ConsolidationRejected` when a `Balanced` score kept it), and one decision line: only when the reason changes, not once a pass. The
// last reason told is kept on the NodeClaim itself (an annotation the disruption controller owns):
// each pass reads every NodeClaim anyway, so remembering costs no read, and a write only when a
// reason changes, whatever the size of the cluster; it goes with the NodeClaim when it is deleted.

/** The NodeClaim annotation with the last reason told for it. */
export const UNCONSOLIDATABLE_ANNOTATION = 'flotilla.io/unconsolidatable';

/** Reasons told per pass at most (each a patch and two Events); the rest wait for later passes. */
export const MAX_UNCONSOLIDATABLE_PER_PASS = 50;

/** Reasons as stored and told: one line, at most this long. */
const MAX_REASON_CHARS = 256;

/**
 * Why each candidate consolidation would look at stays, at the end of a pass: what its pods say
 * against disruption (a PodDisruptionBudget, do-not-disrupt) for a node consolidation would
 * otherwise take, else what the methods found (`found`, by NodeClaim name). Candidates nothing was
 * found for are left out. Pure.
 */
export function unconsolidatableReasons(
  set: CandidateSet,
  found: ReadonlyMap<string, string>,
): { readonly candidate: DisruptionCandidate; readonly why: string }[] {
  const out: { candidate: DisruptionCandidate; why: string }[] = [];
  for (const candidate of set.candidates) {
    if (!shouldConsolidate({ ...candidate, blockers: [] })) continue;
    const why = candidate.blockers[0]?.why ?? found.get(candidate.nodeClaim.name);
    if (why === undefined) continue;
    out.push({ candidate, why: why.replace(/\s+/g, ' ').slice(0, MAX_REASON_CHARS) });
  }
  return out.sort((a, b) => a.candidate.nodeClaim.name.localeCompare(b.candidate.nodeClaim.name));
}

/** Candidates whose reasons are told at once (a patch and its Events each). */
export const UNCONSOLIDATABLE_WRITERS = 4;

/**
 * Tells the reasons that changed since they were last told: the annotation, the Events, the
 * decision line; a few candidates at once, their lines in order. Returns how many were told.
 * @throws the first write's error (ClusterApiError), once the writes started are done; none more
 *   starts after it, and the lines of those told before it are written.
 */
export async function reportUnconsolidatable(
  view: Pick<PassView, 'ports'>,
  set: CandidateSet,
  found: ReadonlyMap<string, string>,
): Promise<number> {
  const changed = unconsolidatableReasons(set, found)
    .filter(({ candidate, why }) => candidate.nodeClaim.annotations[UNCONSOLIDATABLE_ANNOTATION] !== why)
    .slice(0, MAX_UNCONSOLIDATABLE_PER_PASS);
  const { cluster } = view.ports;
  const told = new Array<boolean>(changed.length).fill(false);
  const telling = atMostParallel(UNCONSOLIDATABLE_WRITERS, changed, async ({ candidate, why }, at) => {
    const claim = candidate.nodeClaim;
    await ignoreNotFound(
      cluster.patchNodeClaimMetadata(claim.name, { annotations: { [UNCONSOLIDATABLE_ANNOTATION]: why } }),
    );
    await recordAll(cluster, [
      ...unconsolidatable(claim, candidate.node, why),
      ...balancedRejected(claim, candidate.node, why),
    ]);
    told[at] = true;
  });
  // Its failure is thrown once the lines of those told are written.
  const failure = await telling.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  changed.forEach(({ candidate, why }, at) => {
    if (!told[at]) return;
    const claim = candidate.nodeClaim;
    const previous = claim.annotations[UNCONSOLIDATABLE_ANNOTATION];
    writeDecision(view.ports, {
      kind: 'unconsolidatable',
      reason: why,
      nodeClaim: claim.name,
      node: candidate.node.name,
      nodePool: candidate.nodePool.pool.name,
      ...(previous === undefined ? {} : { previous }),
    });
  });
  if (failure !== undefined) throw failure.error;
  return changed.length;
}
