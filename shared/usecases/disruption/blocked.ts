import type { EventSubject } from '../../ports/cluster.ts';
import type { CandidateSet } from './candidates.ts';
import { drift, driftBlocked } from './drift.ts';
import { type EffectPorts, recordEvents } from './effects.ts';
import { emptiness } from './emptiness.ts';
import type { MethodContext } from './method.ts';
import { planStaticDrift } from './static-drift.ts';

// The `DisruptionBlocked` Events of a pass, as Karpenter records them.

/** `DisruptionBlocked` events: nodes kept by their node or pods, NodePools whose budget allows nothing. */
export async function reportBlocked(
  ports: EffectPorts,
  set: CandidateSet,
  budgetBlocked: ReadonlySet<string>,
  nowMs: number,
  context?: MethodContext,
): Promise<void> {
  const events: { subject: EventSubject; message: string }[] = [];
  for (const e of set.excluded) {
    events.push({
      subject: { kind: 'NodeClaim', name: e.nodeClaim.name },
      message: `Cannot disrupt NodeClaim: ${e.why}`,
    });
  }
  // Nodes a method wants but their pods hold: drifted ones (unless a terminationGracePeriod
  // bounds their drain) and empty ones whose DaemonSet pods block.
  for (const c of set.candidates) {
    const drifted = drift.shouldDisrupt(c, nowMs) && driftBlocked(c);
    const empty =
      c.blockers.length > 0 &&
      c.reschedulablePods.length === 0 &&
      emptiness.shouldDisrupt({ ...c, blockers: [] }, nowMs);
    if (!drifted && !empty) continue;
    events.push({
      subject: { kind: 'NodeClaim', name: c.nodeClaim.name },
      message: `Cannot disrupt NodeClaim: ${c.blockers[0]?.why ?? ''}`,
    });
  }
  // Drifted static nodes StaticDrift holds back whatever the budget: by their pods, by
  // `limits.nodes`, by a pool that cannot plan a replacement (the budget is reported below).
  const unbounded = new Map(
    [...(set.staticPools?.keys() ?? [])].map((name) => [name, Number.MAX_SAFE_INTEGER]),
  );
  for (const { candidate, why } of planStaticDrift(set.staticCandidates ?? [], unbounded, context).held) {
    events.push({
      subject: { kind: 'NodeClaim', name: candidate.nodeClaim.name },
      message: `Cannot disrupt NodeClaim: ${why}`,
    });
  }
  for (const key of budgetBlocked) {
    const [pool = '', reason] = key.split('/');
    events.push({
      subject: { kind: 'NodePool', name: pool },
      message: `No allowed disruptions for disruption reason ${reason} due to blocking budget`,
    });
  }
  await recordEvents(ports, 'DisruptionBlocked', events);
}
