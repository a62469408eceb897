import type { CapacityType, PodRef, SolveOptions, UnschedulablePod } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Cloud, NodeClassResolver } from '../../ports/cloud.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { MetricsSink } from '../decisions/decision.ts';
import type { SkippedNodePool } from '../state/eligibility.ts';

// The provisioner's ports, options and results, shared by provision.ts and its parts.

/** What provisioning reads and changes. */
export interface ProvisionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  /** Waits `ms` milliseconds (batching); tests pass one that advances a manual clock. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /**
   * When set, EC2NodeClasses without a status for their generation are resolved (and the status
   * written) before the first round, so a new class launches in the same run. Classes with a
   * current status are left to the NodeClass controller's scheduled pass.
   */
  readonly nodeClassResolver?: NodeClassResolver;
  /**
   * Hands a NodeClaim the run deleted (a static NodePool's surplus) to termination at once; without
   * it, the termination sweep finds the NodeClaim on its schedule.
   */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
}

export interface ProvisionOptions {
  /** Who takes the lease: the invocation id. */
  readonly holder: string;
  /** @default 'provisioner' */
  readonly leaseName?: string;
  /** Longer than one invocation can run. @default 120 */
  readonly leaseTtlSeconds?: number;
  /**
   * How long to keep trying for a lease another run holds. A run triggered by a pod that arrived
   * after the holder's batch closed waits its turn instead of leaving the pod for the next
   * trigger. @default 0 (give up at once)
   */
  readonly leaseWaitMs?: number;
  /** Batching ends once no new pod appeared for this long. @default 1000 (BATCH_IDLE_DURATION) */
  readonly batchIdleMs?: number;
  /** Batching ends after this long in any case. @default 10000 (BATCH_MAX_DURATION) */
  readonly batchMaxMs?: number;
  /**
   * When the shim observed the latest pod event that triggered this run (epoch ms). The first idle
   * window counts from it, as Karpenter's batcher counts from the pod's arrival, so the time the
   * event spent reaching the run is not waited again. Absent for scheduled runs.
   */
  readonly podEventAtMs?: number;
  /**
   * Solve-and-launch rounds; a round after the first re-plans the pods whose launches were refused
   * for capacity, with the offerings those refusals backed off left out. @default 20
   */
  readonly maxRounds?: number;
  /**
   * A round after the first starts only this long after the first began (the run's clock), so a
   * shortage that keeps refusing leaves the rest of the Lambda's time to what was launched.
   * @default 30_000
   */
  readonly replanWithinMs?: number;
  /**
   * With no pod pending, read the NodeClaims to launch from the API server itself rather than the
   * cluster summary: a message asked for this run (the disruption Lambda's replacement may be too new
   * for the summary). @default false (the schedule's idle check reads the summary)
   */
  readonly consistentResume?: boolean;
  readonly solveOptions?: SolveOptions;
  /**
   * Karpenter's NodeOverlay feature gate: NodeOverlays change the instance types planned with.
   * Off, they are not read. @default false (Karpenter's default)
   */
  readonly nodeOverlay?: boolean;
  /**
   * Karpenter's StaticCapacity feature gate: each run brings static NodePools (`spec.replicas`) to
   * their replicas. Off, it launches and removes nothing for them and says so per pool (a
   * `staticCapacity` decision, `disabled`). @default false (Karpenter's default)
   */
  readonly staticCapacity?: boolean;
  /**
   * Flotilla's runaway guard (the stack's `runawayGuard`): NodePools whose new NodeClaims keep
   * failing pause their launches. False, as Karpenter has no guard. @default true
   */
  readonly runawayGuard?: boolean;
  /**
   * Karpenter's AMI_REFRESH_INTERVAL in seconds: the refresh period of the EC2NodeClasses a run
   * resolves. @default NODECLASS_REFRESH_SECONDS (60)
   */
  readonly nodeClassRefreshSeconds?: number;
  /**
   * A shadow stack's run (its ports write nothing): it plans and "launches" as a live run does, and
   * resumes no unlaunched NodeClaim, those being the live autoscaler's. @default false
   */
  readonly shadow?: boolean;
}

/** What happened to one planned NodeClaim. */
export type ClaimOutcome =
  | {
      readonly kind: 'launched';
      readonly nodeClaim: string;
      /** Absent for a standalone NodeClaim. */
      readonly nodePool?: string;
      readonly pods: readonly PodRef[];
      readonly instanceId: string;
      readonly instanceType: string;
      readonly zone: string;
      readonly capacityType: CapacityType;
      /** The launched offering's price in USD per hour, when the catalog has it. */
      readonly pricePerHour?: number;
      /** The catalog only assumes that price. */
      readonly priceAssumed?: true;
      /** The type's vCPUs and memory in bytes (its `karpenter.k8s.aws/instance-cpu` and `-memory` labels). */
      readonly instanceTypeCpu?: number;
      readonly instanceTypeMemoryBytes?: number;
    }
  | {
      readonly kind: 'insufficientCapacity';
      readonly nodeClaim: string;
      /** Absent for a standalone NodeClaim. */
      readonly nodePool?: string;
      readonly pods: readonly PodRef[];
      /** `<capacityType>:<instanceType>:<zone>` of the offerings now backed off. */
      readonly offerings: readonly string[];
      /** Why, when more than no capacity: `SpotServiceLinkedRoleCreationFailure`. */
      readonly failureReason?: 'SpotServiceLinkedRoleCreationFailure';
    }
  | {
      /** The lease was lost before the launch: no EC2 call was made and the NodeClaim was removed. */
      readonly kind: 'fenced';
      readonly nodeClaim: string;
      /** Absent for a standalone NodeClaim. */
      readonly nodePool?: string;
      readonly pods: readonly PodRef[];
    }
  | {
      readonly kind: 'failed';
      readonly nodeClaim: string;
      /** Absent for a standalone NodeClaim. */
      readonly nodePool?: string;
      readonly pods: readonly PodRef[];
      readonly error: string;
      /** EC2's error code, when EC2 refused the launch. */
      readonly errorCode?: string;
      /** `NodeClassNotReady`: the NodeClaim was removed because its EC2NodeClass is not ready. */
      readonly failureReason?: 'NodeClassNotReady';
    };

export type ProvisionResult =
  | { readonly kind: 'skipped'; readonly why: 'lease held' | 'no provisionable pods' }
  | {
      readonly kind: 'provisioned';
      readonly leaseToken: number;
      /** Provisionable pods seen by the last round. */
      readonly pods: number;
      /** Pods of nodes being deleted the last round planned for with them. */
      readonly deletingNodePods: number;
      readonly rounds: number;
      readonly claims: readonly ClaimOutcome[];
      /** Pods that fit capacity that exists or is on its way (last round). */
      readonly placed: number;
      readonly unschedulable: readonly UnschedulablePod[];
      /** NodePools left out, with why (not Ready, deleting, NodeClass not ready). */
      readonly skippedNodePools: readonly SkippedNodePool[];
      readonly leaseLost: boolean;
      /** NodeClaims of scaled-down static NodePools deleted by the run. */
      readonly staticDeleted?: readonly string[];
    };
