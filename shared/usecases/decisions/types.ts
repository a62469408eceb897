import type { CapacityType } from '../../core/index.ts';
import type { ConsistencyDecision } from './consistency.ts';
import type {
  AdoptedDecision,
  DisruptDecision,
  DisruptionPassDecision,
  DriftedDecision,
  ObserveDecision,
  UnconsolidatableDecision,
} from './disruption.ts';
import type { HandleInterruptionDecision, IgnoreInterruptionDecision } from './interruption.ts';
import type { DeleteDecision, InitializeDecision, RegisterDecision, WaitDecision } from './lifecycle.ts';
import type { RepairDecision } from './node-repair.ts';
import type {
  FinalizeNodeClassDecision,
  ReservationEndDecision,
  ResolveNodeClassDecision,
  WaitForNodeClaimsDecision,
} from './nodeclass.ts';
import type { UpdateNodeOverlayDecision } from './nodeoverlay.ts';
import type { RejectNodePoolDecision, UpdateNodePoolDecision } from './nodepool.ts';
import type { CompareDecision } from './shadow.ts';

// The decision values: what each use case decided, one union on `kind`. decision.ts writes them
// (one log line each, and their metrics) and re-exports these types.

/** A pod as a decision names it. */
export interface PodName {
  readonly namespace: string;
  readonly name: string;
}

/** What became of a planned NodeClaim's launch. */
export type LaunchOutcome = 'launched' | 'insufficientCapacity' | 'fenced' | 'failed';

/**
 * A NodeClaim launched (or not) for pending pods. `instanceTypes` are the candidates offered to the
 * cloud; `capacityType` is the launched instance's when `outcome` is `launched`, else the expected one.
 */
export interface LaunchDecision {
  readonly kind: 'launch';
  /**
   * `provisioning`: planned for pending pods; `resumed`: created by an earlier run and launched
   * now; `static`: a replica of a static NodePool; `standalone`: a NodeClaim a user made outside
   * every NodePool.
   */
  readonly reason: 'provisioning' | 'resumed' | 'static' | 'standalone';
  readonly outcome: LaunchOutcome;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
  readonly nodeClaim: string;
  readonly pods: readonly PodName[];
  readonly instanceTypes: readonly string[];
  readonly capacityType: CapacityType;
  readonly round: number;
  readonly leaseToken: number;
  /** When launched: the instance, its type, zone and offering price in USD per hour. */
  readonly instanceId?: string;
  readonly instanceType?: string;
  readonly zone?: string;
  readonly pricePerHour?: number;
  /** The catalog only assumes that price (a spot price at its default discount, say). */
  readonly priceAssumed?: true;
  /** When failed: what went wrong. */
  readonly error?: string;
  /** When failed because EC2 refused the launch: EC2's error code. */
  readonly errorCode?: string;
  /** When insufficient capacity: `<capacityType>:<instanceType>:<zone>` of the offerings backed off. */
  readonly offerings?: readonly string[];
  /**
   * When not launched for a cause the outcome does not name, the Event reason recorded on the
   * NodeClaim: `SpotServiceLinkedRoleCreationFailure` (a spot launch refused for want of the EC2
   * Spot service-linked role; the outcome is `insufficientCapacity`, as Karpenter treats it), or
   * `NodeClassNotReady` (the outcome is `failed` and the NodeClaim was removed).
   */
  readonly failureReason?: 'SpotServiceLinkedRoleCreationFailure' | 'NodeClassNotReady';
  /** Its minValues were relaxed to launch it (the `karpenter.sh/nodeclaim-min-values-relaxed` annotation). */
  readonly minValuesRelaxed?: true;
  /** When launched: the instance type's vCPUs and memory in bytes, as the catalog lists them. */
  readonly instanceTypeCpu?: number;
  readonly instanceTypeMemoryBytes?: number;
  /** How many of `pods` are on nodes being deleted (planned for while their node drains). */
  readonly deletingNodePods?: number;
}

/** A provisioning run that decided nothing. */
export interface SkipDecision {
  readonly kind: 'skip';
  readonly reason: 'lease held' | 'no provisionable pods';
  readonly lease?: string;
  readonly waitedMs?: number;
  readonly leaseToken?: number;
  /** Pending pods that could not be read, and so were left out. @default 0 */
  readonly ignoredPods?: number;
}

/** The batch of pending pods a provisioning run plans for, and why it closed (quiet or max window). */
export interface BatchDecision {
  readonly kind: 'batch';
  readonly reason: 'idle' | 'max';
  readonly pods: readonly PodName[];
  readonly durationMs: number;
  readonly batchIdleMs: number;
  readonly batchMaxMs: number;
  /** For a run a pod event triggered: how long before the run's first read the shim observed it. */
  readonly sinceEventMs?: number;
}

/**
 * What a provisioning run with pods to place planned, once its rounds are done: its queue, how long
 * the scheduling simulation took, what it could not place, and how long the oldest pod has waited.
 */
export interface PlanDecision {
  readonly kind: 'plan';
  readonly reason: 'planned';
  /** Pods the last round planned for: pending ones and those of nodes being deleted. */
  readonly queued: number;
  /** Pods that fit capacity that exists or is on its way (the others went to new NodeClaims or nowhere). */
  readonly placed: number;
  /** Pods no NodePool could host (the pods of the `unschedulable` decisions). */
  readonly unschedulable: number;
  readonly rounds: number;
  /** NodeClaims the run launched or tried to. */
  readonly nodeClaims: number;
  /** Time the scheduling simulation (solve) took, summed over the rounds, by the run's clock. */
  readonly planMs: number;
  /** Since the creation of the oldest pending pod the run read (0 when none). */
  readonly oldestPendingSeconds: number;
  /** Pending pods that could not be read, and so were left out. @default 0 */
  readonly ignoredPods?: number;
  /**
   * Planned NodeClaims not launched because the capacity type they were planned for ran out
   * during the run (see `fallsBack`): their pods were planned again in the next round.
   */
  readonly replannedNodeClaims?: number;
}

/** Pods no NodePool can host, grouped by the reason they are told (one decision per reason). */
export interface UnschedulableDecision {
  readonly kind: 'unschedulable';
  /** The message of the pods' FailedScheduling Event. */
  readonly reason: string;
  readonly pods: readonly PodName[];
}

/**
 * The termination decisions share `reason`: why the NodeClaim terminates (its `DisruptionReason`
 * condition, e.g. `SpotInterruption`, else `deleted`).
 */
interface TerminationFields {
  readonly reason: string;
  readonly nodeClaim: string;
  /** Absent for a standalone NodeClaim. */
  readonly nodePool?: string;
}

/** The termination deadline (terminationGracePeriod) was written on the NodeClaim. */
export interface DeadlineDecision extends TerminationFields {
  readonly kind: 'deadline';
  readonly deadline: string;
}

/** The terminating NodeClaim's Node was deleted (its finalizer holds it until the drain is done). */
export interface DeleteNodeDecision extends TerminationFields {
  readonly kind: 'deleteNode';
  readonly node: string;
}

/** The terminating NodeClaim's Node got the `karpenter.sh/disrupted:NoSchedule` taint. */
export interface TaintDecision extends TerminationFields {
  readonly kind: 'taint';
  readonly node: string;
  readonly taint: string;
}

/** One drain step: evict a tier's pods, or force-delete pods past the termination deadline. */
export type DrainDecision = TerminationFields & { readonly kind: 'drain' } & (
    | {
        readonly action: 'evict';
        readonly tier: string;
        readonly evicted: number;
        readonly blocked: number;
        readonly gone: number;
        readonly blockedPods: readonly string[];
        /** Pods left per tier, when the drain counted them. */
        readonly remaining?: Readonly<Record<string, number>>;
      }
    | { readonly action: 'forceDelete'; readonly deadline?: string; readonly pods: readonly PodName[] }
  );

/** An instance was terminated: a drained NodeClaim's, or a deleted Node's that had no NodeClaim. */
export interface TerminateDecision {
  readonly kind: 'terminate';
  readonly reason: string;
  readonly instanceId: string;
  readonly nodeClaim?: string;
  readonly nodePool?: string;
  readonly node?: string;
}

/** A Node's termination finalizer was removed (its instance is gone). */
export interface FinalizeNodeDecision {
  readonly kind: 'finalizeNode';
  readonly reason: string;
  readonly node: string;
  readonly nodeClaim?: string;
  readonly nodePool?: string;
  /** Its `topology.kubernetes.io/zone` label. */
  readonly zone?: string;
  /** From its deletion, and from its creation, to now (whole seconds, when known). */
  readonly terminationSeconds?: number;
  readonly lifetimeSeconds?: number;
  /** Its NodeClaim's drain finished (the Drained condition is True). */
  readonly drained?: true;
}

/** A NodeClaim's termination finalizer was removed: drained, instance gone, the NodeClaim goes. */
export interface FinalizeNodeClaimDecision extends TerminationFields {
  readonly kind: 'finalizeNodeClaim';
  /** Its `karpenter.sh/capacity-type` and `topology.kubernetes.io/zone` labels, once launched. */
  readonly capacityType?: string;
  readonly zone?: string;
  /** From its deletion to now (seconds, when known). */
  readonly terminationSeconds?: number;
  /** From its InstanceTerminating condition to now (seconds), when it has one. */
  readonly instanceTerminationSeconds?: number;
}

/** A termination invocation's budget ends before the NodeClaim's termination does: it goes on later. */
export interface ContinueDecision {
  readonly kind: 'continue';
  /** What the termination waits for, in words. */
  readonly reason: string;
  readonly nodeClaim: string;
  readonly waitingOn: 'drain' | 'volumes' | 'instance';
  readonly afterSeconds: number;
  /** Handed on through a delayed termination message (else the sweep finds it). */
  readonly queued: boolean;
}

/** The provisioner asked for another invocation soon: NodeClaims it launched have not initialized. */
export interface FollowUpDecision {
  readonly kind: 'followUp';
  readonly reason: 'nodeClaims not initialized yet';
  /** The first DECISION_SAMPLE_SIZE of them. */
  readonly nodeClaims: readonly string[];
  readonly nodeClaimCount: number;
  readonly delaySeconds: number;
}

/**
 * A disruption schedule tick asked for passes before the next tick (delayed messages on the
 * disruption queue), so that passes run every `intervalSeconds` where EventBridge fires once a minute.
 */
export interface SchedulePassesDecision {
  readonly kind: 'schedulePasses';
  readonly reason: string;
  readonly intervalSeconds: number;
  /** When the schedule fired (ISO 8601). */
  readonly tickAt: string;
  /** When each pass asked for is due (ISO 8601). */
  readonly dueAt: readonly string[];
}

/**
 * The runaway guard paused a NodePool's launches (`start`: its NodeClaims keep failing; `reason`
 * is the failure kind) or let them resume (`end`: `reason` is expired, recovered or
 * nodePoolChanged).
 */
export interface LaunchBackoffDecision {
  readonly kind: 'launchBackoff';
  readonly reason: string;
  readonly action: 'start' | 'end';
  readonly nodePool: string;
  /** Failed NodeClaims in a row after this decision. */
  readonly failures: number;
  /** The failed NodeClaim (start) or the one that proved the pool works (end, recovered). */
  readonly nodeClaim?: string;
  readonly detail?: string;
  readonly backoffSeconds?: number;
  /** RFC 3339. */
  readonly pausedUntil?: string;
}

/**
 * What the clean-up when the cluster goes found of Flotilla's (`planned`, written before anything
 * is removed, and alone for a dry run) and what it removed (`done`). `reason` is the trigger:
 * `stackDeleted`, `clusterDeleted` or `dryRun`.
 */
export interface CleanUpDecision {
  readonly kind: 'cleanUp';
  readonly reason: 'stackDeleted' | 'clusterDeleted' | 'dryRun';
  readonly action: 'planned' | 'done';
  readonly cluster: string;
  /** The first DECISION_SAMPLE_SIZE instance ids, and how many there are. */
  readonly instances: readonly string[];
  readonly instanceCount: number;
  /** The first DECISION_SAMPLE_SIZE launch template names, and how many there are. */
  readonly launchTemplates: readonly string[];
  readonly launchTemplateCount: number;
}

/**
 * Drift and expiration replacements of a NodePool wait (`start`: an alarm it names is in ALARM or
 * cannot be read; `reason` says which) or go on again (`end`: its alarms are out of ALARM, or it
 * names none any more).
 */
export interface RolloutHoldDecision {
  readonly kind: 'rolloutHold';
  readonly reason: string;
  readonly action: 'start' | 'end';
  readonly nodePool: string;
  /** The alarms that hold it (start), or the ones it names (end). */
  readonly alarms: readonly string[];
  readonly detail: string;
}

/**
 * What a static NodePool needed to hold `replicas` nodes: `launch` (the launches follow as their
 * own `launch` lines), `delete` (the surplus handed to termination), `atLimit` (short, but
 * `limits.nodes` leaves no room), `blocked` (short, but the pool cannot launch now, its
 * launches paused by the runaway guard among other things; `reason` says why) or `disabled` (off
 * its replicas, left so: Karpenter's StaticCapacity feature gate is off). A pool that holds its
 * replicas is no decision.
 */
export interface StaticCapacityDecision {
  readonly kind: 'staticCapacity';
  readonly reason: string;
  readonly action: 'launch' | 'delete' | 'atLimit' | 'blocked' | 'disabled';
  readonly nodePool: string;
  readonly replicas: number;
  /** Its NodeClaims not being deleted, before this decision. */
  readonly current: number;
  /** NodeClaims to launch (launch) or deleted (delete). */
  readonly count: number;
  readonly nodeClaims?: readonly string[];
  /** Fewer launch than the pool is short: `limits.nodes`, or the runaway guard's one probe. */
  readonly limitedBy?: 'limits.nodes' | 'launchBackoff';
  readonly leaseToken: number;
  /** The schedule that sets `replicas` in place of `spec.replicas` now (Flotilla's own). */
  readonly replicasHeldBy?: string;
}

/** Garbage collection: an orphaned instance terminated, or a NodeClaim whose instance is gone deleted. */
export interface CollectDecision {
  readonly kind: 'collect';
  readonly reason: 'orphaned instance' | 'instance gone';
  readonly action: 'terminateInstance' | 'deleteNodeClaim';
  readonly instanceId: string;
  /** The instance's state when read (`not found` when EC2 no longer knows it). */
  readonly instanceState: string;
  readonly ageSeconds?: number;
  readonly nodeClaim?: string;
  readonly nodePool?: string;
  /** The NodeClaim's `karpenter.sh/capacity-type` label, when it has one. */
  readonly capacityType?: string;
  readonly node?: string;
  readonly handedOver?: 'termination queue' | 'termination sweep';
}

/** Everything Flotilla decides, one log line each. */
export type Decision = WithoutLineKeys<
  | SkipDecision
  | BatchDecision
  | LaunchDecision
  | UnschedulableDecision
  | PlanDecision
  | FollowUpDecision
  | SchedulePassesDecision
  | LaunchBackoffDecision
  | RolloutHoldDecision
  | CleanUpDecision
  | RegisterDecision
  | InitializeDecision
  | WaitDecision
  | DeleteDecision
  | ResolveNodeClassDecision
  | WaitForNodeClaimsDecision
  | FinalizeNodeClassDecision
  | ReservationEndDecision
  | UpdateNodePoolDecision
  | RejectNodePoolDecision
  | UpdateNodeOverlayDecision
  | HandleInterruptionDecision
  | IgnoreInterruptionDecision
  | DeadlineDecision
  | DeleteNodeDecision
  | TaintDecision
  | DrainDecision
  | TerminateDecision
  | FinalizeNodeDecision
  | FinalizeNodeClaimDecision
  | ContinueDecision
  | CollectDecision
  | StaticCapacityDecision
  | RepairDecision
  | ConsistencyDecision
  | DisruptDecision
  | DriftedDecision
  | AdoptedDecision
  | UnconsolidatableDecision
  | DisruptionPassDecision
  | ObserveDecision
  | CompareDecision
>;

/** Keys a decision's line writes itself (toDecisionLine, the logger). */
type LineKey = 'decision' | 'message' | 'level' | 'time';

/**
 * The decision kinds none of whose fields is named like a key of the line: a kind that has one
 * drops out of `Decision`, so writing it fails to compile instead of overwriting the line's key.
 */
type WithoutLineKeys<D> = D extends unknown
  ? [Extract<keyof D, LineKey>] extends [never]
    ? D
    : never
  : never;

export type DecisionKind = Decision['kind'];
