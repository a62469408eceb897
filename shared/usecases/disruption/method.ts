import type {
  DaemonSet,
  InstanceType,
  MethodDisruptionReason,
  NodeClaimPlan,
  Pod,
  PodBlocker,
  SolveResult,
  StaticPoolCounts,
  UnschedulablePod,
} from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { CommandMethodName, DisruptionMethodName } from '../state/command-record.ts';

// The shape every voluntary disruption method shares (emptiness, static drift, drift, multi- and
// single-node consolidation, repack): its name, the budget reason it counts against, its place in the
// controller's order and its policy; which nodes it may act on, and the commands it proposes for
// them. Each method is one file declaring itself with `disruptionMethod`, listed once in the
// registry (methods.ts), from which the method names are derived. The disruption controller tries
// the methods in order and, as Karpenter does, acts on the first command found; with repack switched
// on (next-command.ts), the consolidation methods' commands compete and the one that saves most is
// taken instead. Forceful disruption (expiration, interruption) does not go through here. A command carries its method, and
// what is done with it (its validation, its consolidation events, its record) follows the method's
// rules, never its name; a command read back from its record has its method resolved from the
// record's name (methods.ts), expiration's (`expirationMethod`) included.

/** A node a method may disrupt: its NodeClaim, its Node and its NodePool. */
export interface DisruptionCandidate {
  readonly nodeClaim: ClusterNodeClaim;
  readonly node: ClusterNode;
  readonly nodePool: ClusterNodePool;
  /** Price of the running offering in USD per hour, when the catalog has it. */
  readonly pricePerHour?: number;
  /** The catalog only assumes that price (Offering.priceAssumed). */
  readonly priceAssumed?: true;
  /**
   * Karpenter v1.14's cost of disrupting the node, which orders candidates and decides emptiness:
   * 1 for the node, plus each reschedulable pod's eviction cost (deletion cost and priority
   * adjusted) where it is above 0. A node at 1 is empty. No lifetime factor: v1.14 orders without it.
   */
  readonly disruptionCost: number;
  /** The pods that need a place elsewhere when the node goes (no DaemonSet or mirror pods). */
  readonly reschedulablePods: readonly Pod[];
  /**
   * What its pods say against voluntary disruption (do-not-disrupt, PodDisruptionBudgets); drift
   * of a NodeClaim with a terminationGracePeriod goes ahead regardless, as in Karpenter.
   */
  readonly blockers: readonly PodBlocker[];
}

/** A move's `Balanced` score in one NodePool: its savings and disruption as fractions of the NodePool's. */
export interface BalancedScore {
  readonly approved: boolean;
  readonly score: number;
  /** The $/hour the move saves over the NodePool's $/hour (0 when it cannot be told). */
  readonly savingsFraction: number;
  /** The move's disruption over the NodePool's (0 when it cannot be told). */
  readonly disruptionFraction: number;
}

/** The verdict of one `Balanced` NodePool on a move (balanced.ts). */
export interface BalancedVerdict extends BalancedScore {
  readonly nodePool: string;
}

/** What one method decided: delete the candidates, launching the replacements first if any. */
export interface DisruptionCommand {
  /** The method that proposed it (a method of the registry, methods.ts); its record keeps the name. */
  readonly method: DisruptionMethod;
  readonly reason: MethodDisruptionReason;
  readonly candidates: readonly DisruptionCandidate[];
  readonly replacements: readonly NodeClaimPlan[];
  /** Consolidation: the policy and minimum savings that allowed the command; a window's: what holds. */
  readonly policy?: string;
  /** Consolidation: the pods that move. */
  readonly podsMoved?: number;
  /** Consolidation: the verdict of each `Balanced` NodePool of its candidates, all approving. */
  readonly balanced?: readonly BalancedVerdict[];
  /**
   * Consolidation: the capacity types of the replacements whose cheapest price (the one the
   * command's saving counts) the catalog only assumes. @default none
   */
  readonly replacementsAssumed?: readonly string[];
  /** Annotations the replacements carry (a spot failure they inherit from their candidates). */
  readonly replacementAnnotations?: Readonly<Record<string, string>>;
  /**
   * Consolidation: the simulation options the command was decided with (a single node re-planned
   * onto one new node), so that its validation simulates the same way.
   */
  readonly simulation?: SimulationOptions;
}

/** What consolidation needs beyond the simulation: prices, and each NodePool's totals. */
export interface MethodContext {
  /**
   * The instance types (with offerings and prices) a NodePool launches from: its NodeClass's, with
   * the NodeOverlays that select them applied.
   */
  readonly instanceTypes: (nodePoolName: string, nodeClassName: string) => readonly InstanceType[];
  /**
   * Per NodePool, over all its nodes with a known price: their $/hour, and their disruption cost as
   * `Balanced` counts it (balancedDisruption: 1 per node plus its pods' eviction costs).
   */
  readonly poolTotals: ReadonlyMap<
    string,
    { readonly pricePerHour: number; readonly disruptionCost: number }
  >;
  readonly nowMs: number;
  /**
   * Whether spot candidates may be replaced by spot nodes (Karpenter's `SpotToSpotConsolidation`);
   * otherwise they are only deleted. @default false
   */
  readonly spotToSpot?: boolean;
  /** Per NodePool, when a consolidation replacement last failed to launch, epoch ms. */
  readonly spotFailedAtMs?: ReadonlyMap<string, number>;
  /** Per static NodePool, its NodeClaims as StaticDrift counts them. */
  readonly staticPools?: ReadonlyMap<string, StaticPoolCounts>;
  /** The cluster's DaemonSets: their pods are overhead on a static replacement. */
  readonly daemonSets?: readonly DaemonSet[];
  /** Told why a candidate a method looked at stays (Karpenter's `Unconsolidatable`). */
  readonly unconsolidatable?: (candidate: DisruptionCandidate, why: string) => void;
  /** Told of each consolidation move weighed, as Karpenter's Balanced evaluator counts it. */
  readonly move?: (move: ConsolidationMove) => void;
  /**
   * Told when a method looked at only some of its candidates (its cap a pass): finding nothing
   * then says nothing of the others, and the consolidated memo must not rest on it.
   */
  readonly partial?: () => void;
  /** Per NodePool a schedule's window holds below what it runs, how far over it is. @default none */
  readonly windowExcess?: ReadonlyMap<string, WindowExcess>;
}

/** What a NodePool's NodeClaims take beyond the limits its open windows hold it to (schedule-window.ts). */
export interface WindowExcess {
  /** By limited resource, the amount over its held limit (only those over). */
  readonly over: ReadonlyMap<string, number>;
  /** The windows that hold the pool, described. */
  readonly heldBy: string;
}

/** A consolidation move weighed in one NodePool: approved, or rejected by its Balanced score. */
export interface ConsolidationMove {
  readonly nodePool: string;
  readonly policy: string;
  readonly decision: 'approved' | 'rejected';
  /** The Balanced score, for a Balanced NodePool. */
  readonly score?: number;
}

/** How a consolidation simulation may place the pods beyond what the provisioner would do. */
export interface SimulationOptions {
  /**
   * At most this many new nodes: the pods that fit nowhere else go onto that many new NodeClaims
   * (the cheapest instance types that hold them all), else they are unschedulable. @default none
   */
  readonly maxNewNodeClaims?: number;
}

/**
 * A disruption simulation's result: `unschedulable` and `nodeClaims` are about the pods that are
 * not pending (the candidates', and those of nodes already going); the pending pods scheduled with
 * them take their room, and the new nodes only they need are counted apart (0 when not given).
 */
export type DisruptionSimulation = SolveResult & {
  readonly pendingOnlyNodeClaims?: number;
  /**
   * The candidates' pods kube-scheduler could leave without a node, binding the moved pods its way
   * rather than where this simulation put them (simulation.ts): worked out when first asked, as
   * only a command that holds on everything else needs it. Consolidation asks; drift does not (its
   * nodes go whatever happens, the provisioner launching for any pod left waiting). Absent when
   * the simulation already leaves a pod without a place, or moves none.
   */
  readonly kubeSchedulerLeftovers?: () => readonly UnschedulablePod[];
};

/**
 * Schedules the pods of the given candidates as if those nodes were gone (the cluster state
 * minus the candidates, the same input the provisioner builds, its pending pods included). Pure
 * for a given state.
 */
export type SimulateScheduling = (
  candidates: readonly DisruptionCandidate[],
  options?: SimulationOptions,
) => DisruptionSimulation;

/** How the controller treats a method's commands. */
export interface MethodPolicy {
  /**
   * `first`: the controller acts on the method's first command and tries no later method;
   * `mostSaving`: the same by default (Karpenter's order), but with repack switched on its first
   * command competes with those of the other `mostSaving` methods, and the one that saves most is
   * carried out (consolidation).
   */
  readonly pick: 'first' | 'mostSaving';
  /**
   * After the validation wait (graceful methods), and on the API server's objects before the first
   * write (every method, confirm-command.ts): `keepValid` carries the command out with the
   * candidates still valid; `allValid` abandons it when one is not; `simulateAgain` also simulates
   * it again as it was decided (consolidation).
   */
  readonly validation: 'keepValid' | 'allValid' | 'simulateAgain';
}

/** What a consolidation method's commands may be: the rules the one evaluation applies for it. */
export interface ConsolidationRules {
  /** The most new nodes a command may launch (Karpenter's methods: 1). */
  readonly maxReplacements: number;
  /**
   * A replacement that could be of a candidate's instance type must cost less than that candidate
   * by the minimum savings (a node is not replaced by an identical one).
   */
  readonly capSameType: boolean;
  /**
   * Karpenter's single-node spot-to-spot rule: an all-spot command is replaced by spot only with at
   * least 15 cheaper instance types, the 15 cheapest kept.
   */
  readonly spotToSpotFlexibility: boolean;
}

/**
 * What every command's method says of its commands, voluntary or forceful: what a command record
 * read back resolves to (methods.ts), so that the commands in flight follow their method's rules.
 */
export interface CommandMethod<N extends CommandMethodName = CommandMethodName> {
  /** Its name in decisions and command records, e.g. `single-node`. */
  readonly name: N;
  /** The reason its commands are recorded with (Karpenter's Empty, Drifted, Underutilized, or Expired). */
  readonly reason: MethodDisruptionReason | 'Expired';
  /**
   * Karpenter's disruption classes: `graceful` commands wait the validation period and are
   * simulated again before they run; `eventual` ones (drift) run once their replacements are ready,
   * without that wait; `forceful` ones (expiration) count against no budget and are not validated.
   */
  readonly disruptionClass: 'graceful' | 'eventual' | 'forceful';
  /**
   * A consolidation method's rules for its commands (consolidation.ts). A consolidation command
   * records its choice and rejection as Events, and a replacement of it that could not launch keeps
   * its NodePool's replacements off spot for a while (replacement-capacity.ts). @default none
   */
  readonly consolidation?: ConsolidationRules;
}

/**
 * Expiration, forceful: outside the registry and its budgets, its commands started by the
 * expiration step (expiration.ts) and resumed from their records by it alone.
 */
export const expirationMethod = {
  name: 'expiration',
  reason: 'Expired',
  disruptionClass: 'forceful',
} as const satisfies CommandMethod<'expiration'>;

export interface DisruptionMethod<N extends DisruptionMethodName = DisruptionMethodName>
  extends CommandMethod<N> {
  /** The budget reason its commands count against (Karpenter's Empty, Drifted, Underutilized). */
  readonly reason: MethodDisruptionReason;
  /** Its place in the controller's order: lower first. */
  readonly order: number;
  readonly policy: MethodPolicy;
  readonly disruptionClass: 'graceful' | 'eventual';
  /**
   * The method looks at the nodes of static NodePools, and only at them; the other methods never
   * see those nodes. @default false
   */
  readonly staticNodePools?: boolean;
  /**
   * The method looks at the nodes of NodePools a schedule's window holds below what they run
   * (nominated ones included), and only at them. @default false
   */
  readonly windowNodePools?: boolean;
  /**
   * After its candidates are validated (`keepValid`), those of them still needed on the read
   * again, given the per-NodePool excess that read has. @default all of them
   */
  keepNeeded?(
    valid: readonly DisruptionCandidate[],
    windowExcess: ReadonlyMap<string, WindowExcess>,
  ): readonly DisruptionCandidate[];
  /** Whether this method looks at the candidate at all (its condition, its NodePool's policy). */
  shouldDisrupt(candidate: DisruptionCandidate, nowMs: number): boolean;
  /**
   * The commands for the candidates this method accepted, within `allowed` (per NodePool, how many
   * more nodes may be disrupted for this method's reason now).
   */
  computeCommands(
    candidates: readonly DisruptionCandidate[],
    allowed: ReadonlyMap<string, number>,
    simulate: SimulateScheduling,
    context?: MethodContext,
  ): readonly DisruptionCommand[];
}

/** A consolidation method: a disruption method with its rules for its commands. */
export type ConsolidationMethod<N extends DisruptionMethodName = DisruptionMethodName> =
  DisruptionMethod<N> & {
    readonly consolidation: ConsolidationRules;
  };

/** Declares a disruption method, keeping its name's literal type for the registry (methods.ts). */
export function disruptionMethod<const N extends DisruptionMethodName>(
  method: DisruptionMethod<N>,
): DisruptionMethod<N> {
  return method;
}

/** Declares a consolidation method: a disruption method with its rules for its commands. */
export function consolidationMethod<const N extends DisruptionMethodName>(
  method: ConsolidationMethod<N>,
): ConsolidationMethod<N> {
  return method;
}

/** A command's decision word, as the decision log and Karpenter's events name it. */
export function commandDecision(command: DisruptionCommand): 'delete' | 'replace' {
  return command.replacements.length === 0 ? 'delete' : 'replace';
}
