import {
  type AllowedDisruptions,
  Annotation,
  allowedDisruptions,
  type BudgetCounts,
  Label,
  NodePoolConditionType,
} from '../../core/index.ts';
import type {
  ClusterNodeClaim,
  ClusterNodePool,
  NodeInfo,
  UnreadableNodeClaim,
} from '../../ports/cluster.ts';
import type { ImpairedInstance } from '../../ports/instance-status.ts';
import { budgetCounts, budgetStanding } from '../state/budget-counts.ts';
import { commandsInFlight } from '../state/command-record.ts';
import { earliestDue, type UnhealthyCause, unhealthyCauses } from './causes.ts';

export type { ImpairedInstance } from '../../ports/instance-status.ts';
export {
  describeCause,
  IMPAIRED_INSTANCE_TOLERATION_MS,
  REPAIR_POLICIES,
  type RepairPolicy,
  type UnhealthyCause,
  unhealthyCauses,
} from './causes.ts';

// Node repair (Karpenter's alpha NodeRepair) as a pure function of one reading of the cluster and
// of EC2's instance status checks: which Nodes to replace because a condition has been unhealthy
// past its toleration (or EC2 has reported their instance impaired past its own), and which
// NodePools hold their repairs back, because too many of their nodes are unhealthy at once or, as
// in Karpenter v1.15, because their disruption budgets for the `Unhealthy` reason allow no more.
// repair.ts reads and applies; nothing here reads a clock or does I/O.

/** Up to this share of a NodePool's nodes (rounded up) may be unhealthy and still be repaired. */
export const UNHEALTHY_THRESHOLD_PERCENT = 20;

/** A node whose repair is due, with its NodeClaim. */
export interface RepairTarget {
  readonly node: NodeInfo;
  readonly claim: ClusterNodeClaim;
  /** Absent for a standalone NodeClaim's node. */
  readonly nodePool?: string;
  readonly cause: UnhealthyCause;
  /** How long past the cause's start (now − since). */
  readonly unhealthyForMs: number;
}

/** A NodePool's unhealthy count against its threshold; without `nodePool`, the whole cluster's. */
export interface PoolHealth {
  readonly nodePool?: string;
  readonly nodes: number;
  readonly unhealthy: number;
  /** The most nodes that may be unhealthy with repair going on: ceil(20% × nodes). */
  readonly threshold: number;
}

/** A NodePool's disruption budgets for `Unhealthy` when the pass decided. */
export interface PoolBudget extends AllowedDisruptions {
  /** The nodes counted, and those already being disrupted (not Ready does not count here). */
  readonly counts: BudgetCounts;
}

/** Why a NodePool's due repairs are held back; the `NodeRepairBlocked` condition's reason. */
export const RepairHold = {
  /** More than 20% of its nodes are unhealthy: none is repaired. */
  unhealthyThreshold: 'UnhealthyThresholdExceeded',
  /** Its budgets for `Unhealthy` allow no more disruptions: the rest wait. */
  budget: 'DisruptionBudgetExhausted',
} as const;

/** Why a due repair is held back by the node itself or by its NodePool being unknown. */
export const NodeHold = {
  /** Its Node or NodeClaim is annotated `karpenter.sh/do-not-repair: "true"`. */
  doNotRepair: 'DoNotRepair',
  /** Its NodePool was not among those read, and every NodePool was read: it has none. */
  nodePoolNotFound: 'NodePoolNotFound',
  /** Its NodePool was not among those read, and some could not be read: it may be one of them. */
  nodePoolUnreadable: 'NodePoolUnreadable',
  /** A standalone NodeClaim's node, while more than 20% of the cluster's nodes are unhealthy. */
  clusterUnhealthy: 'UnhealthyThresholdExceeded',
} as const;
export type NodeHoldReason = (typeof NodeHold)[keyof typeof NodeHold];

/** What node repair does, one value per action. */
export type RepairStep =
  /**
   * Replace the node: mark and delete its NodeClaim forcefully (no PDBs). An initialized node uses
   * one of its NodePool's `Unhealthy` disruptions, as in Karpenter v1.15; one that never initialized
   * uses none.
   */
  | ({ readonly kind: 'repair' } & RepairTarget & {
        readonly health: PoolHealth;
        /** Absent for a standalone NodeClaim's node, which no NodePool's budgets pace. */
        readonly pool?: ClusterNodePool;
      })
  /**
   * The NodePool's due repairs (`held`, all or the rest of them) are held back: it has more
   * unhealthy nodes than its threshold, or its `Unhealthy` budgets allow no more (`budget` says
   * what they allowed this pass, before its repairs). Emitted when the state begins (the pool's
   * `NodeRepairBlocked` condition is not True for the same reason yet), so the Events are recorded
   * once per blocked state.
   */
  | {
      readonly kind: 'block';
      readonly pool: ClusterNodePool;
      readonly health: PoolHealth;
      readonly held: readonly RepairTarget[];
      readonly by: (typeof RepairHold)[keyof typeof RepairHold];
      readonly budget?: PoolBudget;
    }
  /** The pool was blocked and no longer is (or has nothing due): its condition goes False. */
  | { readonly kind: 'unblock'; readonly pool: ClusterNodePool; readonly health: PoolHealth }
  /**
   * Due repairs (`held`, of NodePool `nodePool`) held back by the nodes themselves or by their
   * NodePool being unknown: no NodePool condition tells these apart, so this is decided on every
   * pass while they last (its Events are deduplicated).
   */
  | {
      readonly kind: 'hold';
      /** Absent for standalone NodeClaims' nodes. */
      readonly nodePool?: string;
      readonly health: PoolHealth;
      readonly held: readonly RepairTarget[];
      readonly by: NodeHoldReason;
    };

export interface RepairInput {
  readonly nodes: readonly NodeInfo[];
  readonly claims: readonly ClusterNodeClaim[];
  readonly pools: readonly ClusterNodePool[];
  /** Instances EC2 reports impaired; undefined when they were not read (only conditions count). */
  readonly impaired?: readonly ImpairedInstance[];
  /**
   * Nodes that could not be read: each counts as an unhealthy node, and as one being disrupted, of
   * every NodePool (the most restrictive guess), so what cannot be read never lets a repair through.
   */
  readonly unreadableNodes?: number;
  /**
   * NodeClaims that could not be read: each counts as being disrupted in its NodePool's budgets
   * (in every NodePool's when its `karpenter.sh/nodepool` label cannot be read either), as it may
   * be deleting.
   */
  readonly unreadableClaims?: readonly Pick<UnreadableNodeClaim, 'nodePool' | 'standalone'>[];
  /**
   * How many NodePools could not be read. A node whose NodePool is not among `pools` is never
   * repaired (as Karpenter); this says whether its NodePool is gone or may be one of those.
   */
  readonly unreadablePools?: number;
  readonly nowMs: number;
}

/** What the pass decided and, for the log, what it saw. */
export interface RepairDecisionSet {
  readonly steps: readonly RepairStep[];
  /** Unhealthy nodes whose toleration has not passed, and when it will (for the log). */
  readonly tolerating: number;
  /**
   * Unhealthy nodes whose repair cannot be timed: the condition has no transition time and the
   * Node no creation time. They count as unhealthy and are never repaired.
   */
  readonly untimed: readonly string[];
}

/** The number of a NodePool's nodes that may be unhealthy: 20% rounded up, as a PDB's percentages. */
export function unhealthyThreshold(nodes: number): number {
  return Math.ceil((nodes * UNHEALTHY_THRESHOLD_PERCENT) / 100);
}

/** Where `karpenter.sh/do-not-repair: "true"` is set: on the Node, the NodeClaim, both or neither. */
export function doNotRepairOn(
  node: Pick<NodeInfo, 'annotations'>,
  claim: Pick<ClusterNodeClaim, 'annotations'>,
): ('Node' | 'NodeClaim')[] {
  const on = (annotations: Readonly<Record<string, string>>) =>
    annotations[Annotation.doNotRepair] === 'true';
  return [
    ...(on(node.annotations) ? ['Node' as const] : []),
    ...(on(claim.annotations) ? ['NodeClaim' as const] : []),
  ];
}

/**
 * The repair steps for one reading. A node is unhealthy when one of its conditions matches a
 * repair policy or EC2 reports its instance impaired; its repair is due once the earliest such
 * cause has lasted its toleration. Nodes are counted per NodePool by their `karpenter.sh/nodepool`
 * label (deleting ones included, as Karpenter lists them); a pool with more unhealthy nodes than
 * ceil(20%) repairs none of them. Below that, the pool's disruption budgets for `Unhealthy` (those
 * that list no reasons or list it) pace the repairs of initialized nodes, counted as the
 * disruption controller counts them (budget-counts.ts), longest unhealthy first. Only nodes with a
 * NodeClaim (same providerID) that is not being deleted are repaired, and never one of a NodePool
 * not read or one annotated `karpenter.sh/do-not-repair: "true"` (`hold`). `block` and `unblock`
 * follow the pool's `NodeRepairBlocked` condition, so a blocked state is reported once. A
 * standalone NodeClaim's node (no NodePool label, its NodeClaim in no NodePool) is weighed against
 * the whole cluster instead, with no budget (standaloneSteps).
 */
export function decideRepair(input: RepairInput): RepairDecisionSet {
  const { nowMs } = input;
  const impaired = new Map((input.impaired ?? []).map((i) => [i.instanceId, i]));
  const claimByProvider = new Map(
    input.claims.flatMap((c) =>
      c.status.providerId === undefined ? [] : [[c.status.providerId, c] as const],
    ),
  );
  const counts = new Map<string, { nodes: number; unhealthy: number }>();
  const due = new Map<string, RepairTarget[]>();
  const untimed: string[] = [];
  let tolerating = 0;
  // Standalone NodeClaims' nodes, due; they are weighed against the whole cluster's health.
  const standaloneDue: RepairTarget[] = [];
  let clusterUnhealthy = 0;
  for (const node of input.nodes) {
    const causes = unhealthyCauses(node, impaired);
    if (causes.length > 0) clusterUnhealthy += 1;
    const pool = node.labels[Label.nodePool];
    const claim = node.providerId === undefined ? undefined : claimByProvider.get(node.providerId);
    if (pool !== undefined) {
      const count = counts.get(pool) ?? { nodes: 0, unhealthy: 0 };
      counts.set(pool, count);
      count.nodes += 1;
      if (causes.length > 0) count.unhealthy += 1;
    } else if (claim?.nodePoolName !== undefined) {
      continue;
    }
    if (causes.length === 0 || claim === undefined || claim.deleting || node.deleting) continue;
    const first = earliestDue(causes);
    if (first === undefined) {
      untimed.push(node.name);
      continue;
    }
    if (nowMs < first.dueMs) {
      tolerating += 1;
      continue;
    }
    const target: RepairTarget = {
      node,
      claim,
      ...(pool === undefined ? {} : { nodePool: pool }),
      cause: first.cause,
      unhealthyForMs: nowMs - (first.cause.sinceMs ?? nowMs),
    };
    if (pool === undefined) standaloneDue.push(target);
    else due.set(pool, [...(due.get(pool) ?? []), target]);
  }

  const steps: RepairStep[] = [];
  const poolByName = new Map(input.pools.map((p) => [p.pool.name, p]));
  const names = new Set([...counts.keys(), ...input.pools.map((p) => p.pool.name)]);
  const unreadable = input.unreadableNodes ?? 0;
  const disrupting = unreadableDisrupting(input.unreadableClaims ?? []);
  const inCommand = new Set(
    [...commandsInFlight(input.claims).commands.values()].flatMap((r) => r.candidates),
  );
  const budgetUse = budgetCounts(input.claims, input.nodes, inCommand, 'Unhealthy');
  for (const name of [...names].sort()) {
    const count = counts.get(name) ?? { nodes: 0, unhealthy: 0 };
    const health: PoolHealth = {
      nodePool: name,
      nodes: count.nodes + unreadable,
      unhealthy: count.unhealthy + unreadable,
      threshold: unhealthyThreshold(count.nodes + unreadable),
    };
    const pool = poolByName.get(name);
    const all = [...(due.get(name) ?? [])].sort(longestUnhealthyFirst);
    if (pool === undefined) {
      // Without its NodePool a node is not repaired, as in Karpenter, whatever else holds it.
      const by = (input.unreadablePools ?? 0) > 0 ? NodeHold.nodePoolUnreadable : NodeHold.nodePoolNotFound;
      if (all.length > 0) steps.push({ kind: 'hold', nodePool: name, health, held: all, by });
      continue;
    }
    const vetoed = all.filter((t) => doNotRepairOn(t.node, t.claim).length > 0);
    const targets = all.filter((t) => !vetoed.includes(t));
    if (vetoed.length > 0) {
      steps.push({ kind: 'hold', nodePool: name, health, held: vetoed, by: NodeHold.doNotRepair });
    }
    const heldFor = pool.conditions.find(
      (c) => c.type === NodePoolConditionType.nodeRepairBlocked && c.status === 'True',
    )?.reason;
    if (health.unhealthy > health.threshold && targets.length > 0) {
      if (heldFor !== RepairHold.unhealthyThreshold) {
        steps.push({ kind: 'block', pool, health, held: targets, by: RepairHold.unhealthyThreshold });
      }
      continue;
    }
    const used = budgetUse.get(name) ?? { nodes: 0, disrupting: 0 };
    const extra = unreadable + (disrupting.get(name) ?? 0) + (disrupting.get(ANY_POOL) ?? 0);
    const budget = poolBudget(pool, { ...used, disrupting: used.disrupting + extra }, nowMs);
    const { repair, held } = paceRepairs(targets, budget.allowed);
    if (heldFor !== undefined && held.length === 0) steps.push({ kind: 'unblock', pool, health });
    for (const target of repair) steps.push({ kind: 'repair', ...target, health, pool });
    if (held.length > 0 && heldFor !== RepairHold.budget) {
      steps.push({ kind: 'block', pool, health, held, by: RepairHold.budget, budget });
    }
  }
  if (standaloneDue.length > 0) {
    const nodes = input.nodes.length + unreadable;
    const health = { nodes, unhealthy: clusterUnhealthy + unreadable, threshold: unhealthyThreshold(nodes) };
    steps.push(...standaloneSteps([...standaloneDue].sort(longestUnhealthyFirst), health));
  }
  return { steps, tolerating, untimed };
}

/**
 * Standalone NodeClaims' due repairs, as Karpenter's: no NodePool budget paces them; none is
 * repaired while more than 20% of the cluster's nodes are unhealthy (`health`, the whole cluster).
 */
function standaloneSteps(due: readonly RepairTarget[], health: PoolHealth): RepairStep[] {
  const vetoed = due.filter((t) => doNotRepairOn(t.node, t.claim).length > 0);
  const targets = due.filter((t) => !vetoed.includes(t));
  const steps: RepairStep[] = [];
  if (vetoed.length > 0) steps.push({ kind: 'hold', health, held: vetoed, by: NodeHold.doNotRepair });
  if (targets.length === 0) return steps;
  if (health.unhealthy > health.threshold) {
    steps.push({ kind: 'hold', health, held: targets, by: NodeHold.clusterUnhealthy });
  } else {
    for (const target of targets) steps.push({ kind: 'repair', ...target, health });
  }
  return steps;
}

/** The key under which unreadable NodeClaims of no known NodePool are counted (not a valid name). */
const ANY_POOL = '';

/** Unreadable NodeClaims per NodePool (ANY_POOL: those whose NodePool is unknown). */
function unreadableDisrupting(
  claims: readonly Pick<UnreadableNodeClaim, 'nodePool' | 'standalone'>[],
): Map<string, number> {
  const byPool = new Map<string, number>();
  for (const claim of claims) {
    // A NodeClaim outside every NodePool uses no NodePool's budget.
    if (claim.standalone === true) continue;
    const key = claim.nodePool ?? ANY_POOL;
    byPool.set(key, (byPool.get(key) ?? 0) + 1);
  }
  return byPool;
}

/** The longest unhealthy first, then by node name, so the same reading always repairs the same nodes. */
function longestUnhealthyFirst(a: RepairTarget, b: RepairTarget): number {
  return b.unhealthyForMs - a.unhealthyForMs || a.node.name.localeCompare(b.node.name);
}

/** What a NodePool's budgets allow for `Unhealthy` now, given what its nodes already use. */
function poolBudget(pool: ClusterNodePool, counts: BudgetCounts, nowMs: number): PoolBudget {
  return { ...allowedDisruptions(pool.disruption.budgets, 'Unhealthy', counts, nowMs), counts };
}

/**
 * The targets (in order) repaired within `allowed` disruptions, and those held back. A node that
 * never initialized uses no budget, as it counts for none (Karpenter v1.15 repairs it regardless).
 */
function paceRepairs(
  targets: readonly RepairTarget[],
  allowed: number,
): { repair: RepairTarget[]; held: RepairTarget[] } {
  const repair: RepairTarget[] = [];
  const held: RepairTarget[] = [];
  let left = allowed;
  for (const target of targets) {
    if (!budgetStanding(target.claim, target.node, false, false).counted) repair.push(target);
    else if (left > 0) {
      left -= 1;
      repair.push(target);
    } else held.push(target);
  }
  return { repair, held };
}
