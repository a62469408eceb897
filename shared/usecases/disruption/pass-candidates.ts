import { allowedDisruptions, type DisruptionReason } from '../../core/index.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import { commandsInFlight, pendingReplacements } from '../state/command-record.ts';
import { buildCandidates, type CandidateSet, pdbLimits } from './candidates.ts';
import { priceAssumedFrom, priceFrom } from './describe.ts';
import { nominatedNodes } from './simulation.ts';

// What a disruption pass decides from, given what it read: its candidates, and how many nodes each
// NodePool's budgets allow for a reason. The controller and `flotilla explain node` both ask here.
// Pure.

/** What a pass has read: the cluster, its NodeClaims as its conditions make them, its NodePools. */
export interface PassRead {
  readonly state: ClusterState;
  readonly claims: readonly ClusterNodeClaim[];
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly input: SchedulingInput | undefined;
  readonly nowMs: number;
}

/** The pass's candidates: NodeClaims in a command, replacements and nominated nodes left out. */
export function passCandidates(read: PassRead): CandidateSet {
  const { commands } = commandsInFlight(read.claims);
  return buildCandidates({
    nodeClaims: read.claims,
    nodes: read.state.nodes,
    nodePools: read.pools,
    pdbs: pdbLimits(read.state.podDisruptionBudgets ?? []),
    inCommand: new Set([...commands.values()].flatMap((r) => r.candidates)),
    replacing: pendingReplacements(read.claims),
    nominated: nominatedNodes(read.state, read.input),
    priceOf: (claim) => priceFrom(read.input, claim),
    priceAssumedOf: (claim) => priceAssumedFrom(read.input, claim),
    nowMs: read.nowMs,
  });
}

/** Per NodePool, how many more nodes its budgets allow for `reason` now, and which budget said so. */
export interface AllowedByPool {
  readonly allowed: Map<string, number>;
  /** The index of the budget that set a NodePool's count, when one did. */
  readonly limitedBy: ReadonlyMap<string, number>;
  /** Budgets left out, as `nodePool "x" budgets[i]: problem`. */
  readonly problems: readonly string[];
}

export function allowedByPool(
  set: CandidateSet,
  pools: ReadonlyMap<string, ClusterNodePool>,
  reason: DisruptionReason,
  nowMs: number,
): AllowedByPool {
  const allowed = new Map<string, number>();
  const limitedBy = new Map<string, number>();
  const problems: string[] = [];
  for (const [name, counts] of set.counts) {
    const pool = pools.get(name);
    if (pool === undefined) continue;
    const result = allowedDisruptions(pool.disruption.budgets, reason, counts, nowMs);
    for (const p of result.problems) problems.push(`nodePool "${name}" budgets[${p.index}]: ${p.problem}`);
    allowed.set(name, result.allowed);
    if (result.limitedBy !== undefined) limitedBy.set(name, result.limitedBy);
  }
  return { allowed, limitedBy, problems };
}
