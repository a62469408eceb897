import type { ClusterEvent } from '../../ports/cluster.ts';
import { isEmptyCandidate } from './balanced.ts';
import type { CandidateSet } from './candidates.ts';
import { drift, driftBlocked } from './drift.ts';
import type { EffectPorts } from './effects.ts';
import { emptiness } from './emptiness.ts';
import { disruptionBlocked, nodePoolDisruptionBlocked, recordAll } from './events.ts';
import type { MethodContext } from './method.ts';
import { planStaticDrift } from './static-drift.ts';

// The `DisruptionBlocked` Events of a pass, as Karpenter records them: on the Node and the
// NodeClaim a method wants but may not take, and on a NodePool whose budget allows nothing.

/** `DisruptionBlocked` events: nodes kept by their node or pods, NodePools whose budget allows nothing. */
export async function reportBlocked(
  ports: EffectPorts,
  set: CandidateSet,
  budgetBlocked: ReadonlySet<string>,
  nowMs: number,
  context?: MethodContext,
): Promise<void> {
  // The NodePools first: they are few, and the nodes may be more than one call records.
  const uids = new Map(
    [...set.candidates, ...(set.staticCandidates ?? []), ...(set.windowCandidates ?? [])].map((c) => [
      c.nodePool.pool.name,
      c.nodePool.uid,
    ]),
  );
  const events: ClusterEvent[] = [...budgetBlocked].map((key) => {
    const [pool = '', reason = ''] = key.split('/');
    return nodePoolDisruptionBlocked(pool, reason, uids.get(pool));
  });
  for (const e of set.excluded) events.push(...disruptionBlocked(e.nodeClaim, e.node, e.why));
  // Nodes a method wants but their pods hold: drifted ones (unless a terminationGracePeriod
  // bounds their drain), empty ones whose DaemonSet pods block, and those of a NodePool a
  // schedule's window holds below what it runs.
  const held = new Set<string>();
  for (const c of set.candidates) {
    const drifted = drift.shouldDisrupt(c, nowMs) && driftBlocked(c);
    const empty =
      c.blockers.length > 0 && isEmptyCandidate(c) && emptiness.shouldDisrupt({ ...c, blockers: [] }, nowMs);
    if (!drifted && !empty) continue;
    held.add(c.nodeClaim.name);
    events.push(...disruptionBlocked(c.nodeClaim, c.node, c.blockers[0]?.why ?? ''));
  }
  for (const c of set.windowCandidates ?? []) {
    const [blocker] = c.blockers;
    if (blocker === undefined || held.has(c.nodeClaim.name)) continue;
    events.push(...disruptionBlocked(c.nodeClaim, c.node, blocker.why));
  }
  // Drifted static nodes StaticDrift holds back whatever the budget: by their pods, by
  // `limits.nodes`, by a pool that cannot plan a replacement (the budget is reported below).
  const unbounded = new Map(
    [...(set.staticPools?.keys() ?? [])].map((name) => [name, Number.MAX_SAFE_INTEGER]),
  );
  for (const { candidate, why } of planStaticDrift(set.staticCandidates ?? [], unbounded, context).held) {
    events.push(...disruptionBlocked(candidate.nodeClaim, candidate.node, why));
  }
  await recordAll(ports.cluster, events);
}
