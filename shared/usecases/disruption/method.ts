import type {
  DaemonSet,
  InstanceType,
  NodeClaimPlan,
  Pod,
  PodBlocker,
  SolveResult,
  StaticPoolCounts,
} from '../../core/index.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  ClusterNodePool,
  DisruptionReason,
} from '../../ports/cluster.ts';

// The shape every voluntary disruption method shares (emptiness, static drift, drift, multi- and
// single-node consolidation): which nodes it may act on, and the commands it proposes for them. The
// disruption controller tries emptiness, static drift and drift in order and acts on the first that returns a command, as
// Karpenter does, then takes the consolidation command that saves most; forceful disruption (expiration, interruption) does not go through here.

/** The voluntary disruption methods, in the order the controller tries them. */
export const METHOD_NAMES = [
  'emptiness',
  'static-drift',
  'drift',
  'multi-node',
  'repack',
  'single-node',
] as const;
export type DisruptionMethodName = (typeof METHOD_NAMES)[number];

/** A node a method may disrupt: its NodeClaim, its Node and its NodePool. */
export interface DisruptionCandidate {
  readonly nodeClaim: ClusterNodeClaim;
  readonly node: ClusterNode;
  readonly nodePool: ClusterNodePool;
  /** Price of the running offering in USD per hour, when the catalog has it. */
  readonly pricePerHour?: number;
  /**
   * Karpenter's disruption cost, which orders candidates: 1 per reschedulable pod, adjusted for
   * deletion cost and priority, times the fraction of the NodeClaim's expireAfter lifetime left.
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

/** What one method decided: delete the candidates, launching the replacements first if any. */
export interface DisruptionCommand {
  readonly method: DisruptionMethodName | 'expiration';
  readonly reason: DisruptionReason;
  readonly candidates: readonly DisruptionCandidate[];
  readonly replacements: readonly NodeClaimPlan[];
  /** Consolidation: the policy and minimum savings that allowed the command. */
  readonly policy?: string;
  /** Consolidation: the pods that move. */
  readonly podsMoved?: number;
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
  /** The instance types (with offerings and prices) of a NodeClass. */
  readonly instanceTypes: (nodeClassName: string) => readonly InstanceType[];
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
export type DisruptionSimulation = SolveResult & { readonly pendingOnlyNodeClaims?: number };

/**
 * Schedules the pods of the given candidates as if those nodes were gone (the cluster state
 * minus the candidates, the same input the provisioner builds, its pending pods included). Pure
 * for a given state.
 */
export type SimulateScheduling = (
  candidates: readonly DisruptionCandidate[],
  options?: SimulationOptions,
) => DisruptionSimulation;

export interface DisruptionMethod {
  readonly name: DisruptionMethodName;
  readonly reason: DisruptionReason;
  /**
   * `graceful` commands wait the validation period and are simulated again before they run;
   * `eventual` ones (drift) run once their replacements are ready, without that wait.
   */
  readonly disruptionClass: 'graceful' | 'eventual';
  /**
   * The method looks at the nodes of static NodePools, and only at them; the other methods never
   * see those nodes. @default false
   */
  readonly staticNodePools?: boolean;
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

/** A command's decision word, as the decision log and Karpenter's events name it. */
export function commandDecision(command: DisruptionCommand): 'delete' | 'replace' {
  return command.replacements.length === 0 ? 'delete' : 'replace';
}
