import type { StaticDecision } from '../../core/index.ts';
import { DECISION_SAMPLE_SIZE, type DecisionOutput, writeDecision } from '../decisions/decision.ts';

// The static pass's one `staticCapacity` decision per NodePool that changes (static-pools.ts).

/** What every decision of one static NodePool carries. */
export interface StaticLine {
  readonly nodePool: string;
  readonly leaseToken: number;
  /** The schedule that holds the pool's replicas now, when one does. */
  readonly replicasHeldBy?: string;
}

/** The pool's decision: what it does, for its NodeClaims and replicas (and what holds them). */
export function writeStatic(
  out: DecisionOutput,
  line: StaticLine,
  decision: Exclude<StaticDecision, { kind: 'steady' }>,
  action: 'launch' | 'delete' | 'atLimit' | 'blocked',
  count: number,
  why?: string,
): void {
  const held = line.replicasHeldBy === undefined ? '' : ` (${line.replicasHeldBy})`;
  const counts = `${decision.current} nodeClaims, ${decision.replicas} replicas${held}`;
  writeDecision(out, {
    kind: 'staticCapacity',
    reason:
      why ?? (decision.kind === 'atLimit' ? `limits.nodes ${decision.limit} reached (${counts})` : counts),
    action,
    ...line,
    replicas: decision.replicas,
    current: decision.current,
    count,
    ...(decision.kind === 'delete' ? { nodeClaims: decision.nodeClaims.slice(0, DECISION_SAMPLE_SIZE) } : {}),
    ...(decision.kind === 'launch' && decision.limitedBy !== undefined
      ? { limitedBy: decision.limitedBy }
      : {}),
  });
}
