import type {
  CapacityType,
  DisruptionReason,
  DriftReason,
  MethodDisruptionReason,
} from '../../core/index.ts';
import type { CommandMethodName } from '../state/command-record.ts';
import type {
  ConsolidationMoveTally,
  NodePoolNodeTotals,
  ObservedConditions,
  ObservedTerminations,
} from './observation.ts';

// The disruption controller's decisions (one log line each, written through decision.ts).

/** A node a command disrupts, as its line names it. */
export interface DisruptedNode {
  readonly nodeClaim: string;
  readonly node: string;
  /** Absent for a standalone NodeClaim (expiration only). */
  readonly nodePool?: string;
  readonly instanceType?: string;
  readonly capacityType?: CapacityType;
  readonly pricePerHour?: number;
  /** The catalog only assumes `pricePerHour` (a spot price at its default discount, say). */
  readonly priceAssumed?: true;
}

/** A replacement a command launches before its candidates go. */
export interface ReplacementNode {
  readonly nodeClaim: string;
  readonly nodePool: string;
  /** The cheapest few candidates, cheapest first. */
  readonly instanceTypes: readonly string[];
  /** The cheapest candidate's price in USD per hour. */
  readonly pricePerHour?: number;
  /** The catalog only assumes `pricePerHour`. */
  readonly priceAssumed?: true;
}

/**
 * What happened to a disruption command: `started` (candidates marked, replacements created),
 * `deleted` (candidates deleted: the drain starts), `abandoned` (it no longer held after the
 * validation wait, or a candidate changed), `failed` (a replacement went away or the command timed
 * out: candidates un-tainted).
 */
export type DisruptionOutcome = 'started' | 'deleted' | 'abandoned' | 'failed';

/** One disruption command: the method, its candidates and replacements, and the cost before and after. */
export interface DisruptDecision {
  readonly kind: 'disrupt';
  readonly reason: MethodDisruptionReason | 'Expired';
  readonly method: CommandMethodName;
  /** Karpenter's decision word: delete the candidates, or replace them. */
  readonly action: 'delete' | 'replace';
  readonly outcome: DisruptionOutcome;
  readonly commandId: string;
  readonly candidates: readonly DisruptedNode[];
  readonly replacements: readonly ReplacementNode[];
  /** USD per hour of the candidates, and of the replacements (0 when none). */
  readonly pricePerHourBefore: number;
  readonly pricePerHourAfter: number;
  /**
   * For abandoned and failed commands: why. For expiration: why some pods got no replacement
   * (`podsWithoutReplacement` of them). For emptiness: which candidates its validation dropped.
   */
  readonly why?: string;
  readonly podsWithoutReplacement?: number;
  /**
   * Consolidation: the policy (and minimum savings) that allowed it, and the pods that move. A
   * schedule's window: the schedule that holds each NodePool, and until when.
   */
  readonly policy?: string;
  readonly podsMoved?: number;
  /** Candidates that failed the validation after the wait (all of an abandoned command's, or those dropped). */
  readonly failedValidations?: number;
}

/** A NodeClaim found drifted (its `Drifted` condition set). */
export interface DriftedDecision {
  readonly kind: 'drifted';
  readonly reason: DriftReason;
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  /** What drifted, in words. */
  readonly detail: string;
}

/**
 * A NodeClaim whose hashes were written by something else (Karpenter, when Flotilla takes a cluster
 * over) given Flotilla's hashes of its NodePool and EC2NodeClass as they are now: it is not
 * drifted by them, and a later change drifts it.
 */
export interface AdoptedDecision {
  readonly kind: 'adopted';
  readonly reason: string;
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  /** The hash versions found, as `nodepool=v3 ec2nodeclass=v6` (`none` when absent). */
  readonly previous: string;
}

/**
 * A node consolidation looked at and keeps, logged when the reason changes (not every pass); the
 * same text is its `Unconsolidatable` Event.
 */
export interface UnconsolidatableDecision {
  readonly kind: 'unconsolidatable';
  /** Why it stays, e.g. `can't replace with a cheaper node`, `pdb apps/web prevents pod evictions`. */
  readonly reason: string;
  readonly nodeClaim: string;
  readonly node: string;
  readonly nodePool: string;
  /** The reason logged before this one, if any. */
  readonly previous?: string;
}

/** A disruption pass's phases in the order it goes through them. */
export type DisruptionPassPhase = 'read' | 'inFlight' | 'commands' | 'report' | 'writes';

/** One disruption pass: what it looked at and why it did or did not act. */
export interface DisruptionPassDecision {
  readonly kind: 'disruptionPass';
  readonly reason:
    | 'lease held'
    | 'no candidates'
    | 'nothing to do'
    | 'commands started'
    | 'blocked'
    /** No (further) command started: the invocation's deadline was too near for one to finish. */
    | 'deadline'
    /** No (further) command started: a renewal found the lease taken. */
    | 'lease lost';
  readonly candidates: number;
  readonly empty: number;
  readonly drifted: number;
  readonly expired: number;
  /** Candidates kept by their pods (do-not-disrupt, PDBs) or node annotation. */
  readonly blocked: number;
  /** NodePool/reason pairs whose budget allowed nothing, e.g. `default/Drifted`. */
  readonly budgetBlocked: readonly string[];
  /** The first nodes left out of disruption with a reason users should see (DisruptionBlocked). */
  readonly excluded?: readonly { readonly nodeClaim: string; readonly node: string; readonly why: string }[];
  readonly commands: number;
  /**
   * Candidates of the pass's commands that failed their validation after the wait (every candidate
   * of an abandoned command, and those emptiness dropped), as Karpenter's failed validations.
   */
  readonly failedValidations: number;
  readonly inFlight: number;
  /** Nodes a method would disrupt (its shouldDisrupt accepts them), by reason: Empty, Drifted, Underutilized. */
  readonly eligible: Readonly<Partial<Record<DisruptionReason, number>>>;
  /**
   * Nodes left alone, each under its first why: `doNotDisruptNode`, `nominated`, `podUnreadable`
   * (excluded), `doNotDisruptPod`, `pdb` (their pods), `budget` (eligible, but the NodePool's budget
   * for that reason allowed nothing).
   */
  readonly blockedBy: Readonly<Record<string, number>>;
  /** Per NodePool, the nodes its budgets allow to disrupt now, by reason (allowedDisruptions). */
  readonly allowed: Readonly<Record<string, Readonly<Partial<Record<DisruptionReason, number>>>>>;
  /**
   * Per NodePool, the nodes its budgets allow by reason before the nodes being disrupted are
   * counted against them (Karpenter's `karpenter_nodepools_allowed_disruptions`; the node count
   * where no budget holds). @default none
   */
  readonly budgetNodes?: Readonly<Record<string, Readonly<Partial<Record<DisruptionReason, number>>>>>;
  /** Per NodePool with any, its nodes being disrupted (what its budgets count as used). @default none */
  readonly disrupting?: Readonly<Record<string, number>>;
  /** The consolidation moves the pass weighed, by NodePool, policy and verdict. @default none */
  readonly consolidationMoves?: readonly ConsolidationMoveTally[];
  /** NodeClaims whose conditions the pass wrote, and those it left to the next pass. @default none */
  readonly conditionWrites?: { readonly written: number; readonly deferred: number };
  /** Milliseconds in each phase: read, inFlight, commands, report, writes (waiting for them). @default none */
  readonly phasesMs?: Readonly<Partial<Record<DisruptionPassPhase, number>>>;
}

/**
 * What one NodePool's nodes are and cost, as a disruption pass read them (the cluster summary and
 * the offering catalog: nothing read for it alone).
 */
export interface NodePoolObservation extends NodePoolNodeTotals {
  /** Its Nodes (the Node list). */
  readonly nodes: number;
  /** cpu (cores) and memory (bytes) of its Nodes' capacity, as its status.resources counts them. */
  readonly cpu: number;
  readonly memoryBytes: number;
  /** `spec.limits`, cpu in cores, memory in bytes, other resources as given. */
  readonly limits?: Readonly<Record<string, number>>;
  /** Its dollar limit (`flotilla.io/max-cost-per-hour`), USD per hour, when it has one it can read. */
  readonly costLimitPerHour?: number;
  /**
   * Its launched NodeClaims' offering prices (instance type, zone and capacity type labels × the
   * catalog the pass read, whichever EC2NodeClass lists the offering), USD per hour. NodeClaims
   * whose offering the catalog does not know are left out and counted in `unpricedNodeClaims`.
   */
  readonly pricePerHour: number;
  /** Per priced node, price × (1 − the larger of cpu and memory requested ÷ allocatable), summed. */
  readonly idlePricePerHour: number;
  /** Launched NodeClaims whose offering has no price in the catalog (not in `pricePerHour`). @default 0 */
  readonly unpricedNodeClaims?: number;
  /** Those offerings, `instance type/zone/capacity type`, the first 10. */
  readonly unpricedOfferings?: readonly string[];
  /** Launched NodeClaims in `pricePerHour` at a price the catalog only assumes. @default 0 */
  readonly assumedPriceNodeClaims?: number;
  /** Pod requests ÷ allocatable over its Nodes, percent. */
  readonly cpuUtilization: number;
  readonly memoryUtilization: number;
}

/** The NodeClaims that one observation window saw created (or deleted). */
export interface ObservedChanges {
  readonly count: number;
  /** Their offering prices summed, USD per hour (unpriced ones left out). */
  readonly pricePerHour: number;
  /** The first of them by time, each with its offering and price when known. */
  readonly nodeClaims: readonly ObservedNodeClaim[];
}

/** One NodeClaim an observation names. */
export interface ObservedNodeClaim {
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  /** When it was created (or its deletion began), RFC 3339. */
  readonly at: string;
  readonly instanceType?: string;
  readonly zone?: string;
  readonly capacityType?: string;
  readonly pricePerHour?: number;
}

/**
 * The cluster as each disruption pass finds it, per NodePool, and the pods seen started since the
 * previous pass: the periodic observation the capacity, cost and pod startup metrics come from.
 */
export interface ObserveDecision {
  readonly kind: 'observe';
  readonly reason: 'disruption pass';
  readonly nodePools: Readonly<Record<string, NodePoolObservation>>;
  /** The cluster's dollar limit (the stack's `maxCostPerHour`), USD per hour, when it has one. */
  readonly clusterCostLimitPerHour?: number;
  /**
   * For the pods bound to the pass's Nodes whose `status.startTime` is after `since` and at or
   * before `until`: seconds from their creation to that start, rounded to tenths. Consecutive
   * passes' windows join, so each pod's start falls in exactly one.
   */
  readonly podStartupSeconds: readonly number[];
  /**
   * NodeClaims created within the window, and NodeClaims whose deletion began from its start to
   * the pass's read (whoever made or deleted them: beside a shadow stack, what the live autoscaler
   * did), the first `OBSERVED_CHANGES_SAMPLE` of each, priced as `nodePools` prices them. Absent
   * when none, or on a pass without a window. A deletion may be named by two consecutive
   * observations; a NodeClaim created and gone between two passes is in neither list.
   */
  readonly nodeClaimsCreated?: ObservedChanges;
  readonly nodeClaimsDeleted?: ObservedChanges;
  /** The status conditions of the NodeClaims, NodePool Nodes, NodePools and EC2NodeClasses read. */
  readonly conditions?: ObservedConditions;
  /** The longest terminations under way, when any NodeClaim or NodePool Node is terminating. */
  readonly terminating?: ObservedTerminations;
  /** Where the previous observing pass's window ended, RFC 3339; none on the first pass. */
  readonly since?: string;
  /**
   * Where this window ends, RFC 3339: the pass's last read less the age its data may have (a
   * cluster summary up to a minute old), so every pod started by then is in what it read.
   */
  readonly until?: string;
}
