import {
  type CapacityType,
  type PodRef,
  type SolveOptions,
  solve,
  type UnschedulablePod,
} from '../core/index.ts';
import type { Clock } from '../ports/clock.ts';
import type { Cloud, NodeClassResolver } from '../ports/cloud.ts';
import type { Cluster } from '../ports/cluster.ts';
import type { Lease, LeaseStore } from '../ports/lease.ts';
import type { Logger } from '../runtime/logger.ts';
import { buildSchedulingInput, type ClusterState, readClusterState } from './cluster-state.ts';
import { writeDecision } from './decision.ts';
import type { SkippedNodePool } from './eligibility.ts';
import { reconcileNodeClasses } from './nodeclass.ts';
import { batchPods } from './provision-batch.ts';
import { reportNominated, reportUnschedulable } from './provision-events.ts';
import { applyPlan, resumeUnlaunched } from './provision-launch.ts';

export { nodeClaimName, toLaunchRequest, toNewNodeClaim } from './provision-plan.ts';

/** Interval of lease attempts while waiting for another run to finish. */
const LEASE_POLL_MS = 250;

/** What provisioning reads and changes. */
export interface ProvisionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  /** Waits `ms` milliseconds (batching); tests pass one that advances a manual clock. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger: Logger;
  /**
   * When set, EC2NodeClasses without a status for their generation are resolved (and the status
   * written) before the first round, so a new class launches in the same run. Classes with a
   * current status are left to the NodeClass controller's scheduled pass.
   */
  readonly nodeClassResolver?: NodeClassResolver;
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
  /** Solve-and-launch rounds; a round after the first re-plans pods whose launch hit ICE. @default 3 */
  readonly maxRounds?: number;
  readonly solveOptions?: SolveOptions;
}

/** What happened to one planned NodeClaim. */
export type ClaimOutcome =
  | {
      readonly kind: 'launched';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      readonly instanceId: string;
      readonly instanceType: string;
      readonly zone: string;
      readonly capacityType: CapacityType;
      /** The launched offering's price in USD per hour, when the catalog has it. */
      readonly pricePerHour?: number;
    }
  | {
      readonly kind: 'insufficientCapacity';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      /** `<capacityType>:<instanceType>:<zone>` of the offerings now backed off. */
      readonly offerings: readonly string[];
    }
  | {
      /** The lease was lost before the launch: no EC2 call was made and the NodeClaim was removed. */
      readonly kind: 'fenced';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
    }
  | {
      readonly kind: 'failed';
      readonly nodeClaim: string;
      readonly nodePool: string;
      readonly pods: readonly PodRef[];
      readonly error: string;
    };

export type ProvisionResult =
  | { readonly kind: 'skipped'; readonly why: 'lease held' | 'no provisionable pods' }
  | {
      readonly kind: 'provisioned';
      readonly leaseToken: number;
      /** Provisionable pods seen by the last round. */
      readonly pods: number;
      readonly rounds: number;
      readonly claims: readonly ClaimOutcome[];
      /** Pods that fit capacity that exists or is on its way (last round). */
      readonly placed: number;
      readonly unschedulable: readonly UnschedulablePod[];
      /** NodePools left out, with why (not Ready, deleting, NodeClass not ready). */
      readonly skippedNodePools: readonly SkippedNodePool[];
      readonly leaseLost: boolean;
    };

/**
 * One provisioning decision for the cluster, as Karpenter's provisioner makes it: under the
 * provisioner lease, batch pending pods, solve against the current cluster state, create a
 * NodeClaim per planned node and launch it (fenced by the lease), re-plan pods whose launch hit
 * insufficient capacity, and tell unschedulable pods why. Safe to run concurrently (all but one
 * run skip) and to repeat (NodeClaim names derive from the decision).
 * @throws ClusterApiError / CloudApiError / CatalogUnavailableError when state cannot be read.
 */
export async function provision(ports: ProvisionPorts, options: ProvisionOptions): Promise<ProvisionResult> {
  const { leases, clock } = ports;
  const logger = ports.logger.child({ holder: options.holder });
  const leaseName = options.leaseName ?? 'provisioner';
  const ttl = options.leaseTtlSeconds ?? 120;
  const waitUntil = clock.now().getTime() + (options.leaseWaitMs ?? 0);
  let lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  while (lease === undefined && clock.now().getTime() < waitUntil) {
    await ports.sleep(LEASE_POLL_MS);
    lease = await leases.acquire(leaseName, options.holder, clock.now(), ttl);
  }
  if (lease === undefined) {
    writeDecision(logger, {
      kind: 'skip',
      reason: 'lease held',
      lease: leaseName,
      waitedMs: options.leaseWaitMs ?? 0,
    });
    return { kind: 'skipped', why: 'lease held' };
  }
  try {
    return await provisionUnderLease(ports, options, lease, logger);
  } finally {
    await leases.release(lease);
  }
}

async function provisionUnderLease(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  logger: Logger,
): Promise<ProvisionResult> {
  const batched = await batchPods(ports, logger, options.batchIdleMs ?? 1000, options.batchMaxMs ?? 10_000);
  if (batched.pods === 0) {
    writeDecision(logger, { kind: 'skip', reason: 'no provisionable pods', leaseToken: lease.token });
    return { kind: 'skipped', why: 'no provisionable pods' };
  }

  if (ports.nodeClassResolver !== undefined) {
    const [nodeClasses, nodeClaims] = await Promise.all([
      ports.cluster.nodeClasses(),
      ports.cluster.nodeClaims(),
    ]);
    await reconcileNodeClasses(
      { ...ports, logger, resolver: ports.nodeClassResolver },
      { holder: options.holder, scope: 'stale' },
      { nodeClasses: nodeClasses.items, nodeClaims: nodeClaims.items },
    );
  }

  const maxRounds = Math.max(1, options.maxRounds ?? 3);
  const claims: ClaimOutcome[] = [];
  let last: RoundResult | undefined;
  let rounds = 0;
  for (let round = 0; round < maxRounds; round++) {
    rounds = round + 1;
    const state = await readClusterState(ports.cluster, logger);
    if (state.pendingPods.length === 0) break;
    last = await runRound(ports, options, lease, logger, state, round);
    claims.push(...last.claims);
    if (last.leaseLost) break;
    if (!last.claims.some((c) => c.kind === 'insufficientCapacity')) break;
  }

  const unschedulable = last?.unschedulable ?? [];
  const skippedNodePools = last?.skippedNodePools ?? [];
  if (unschedulable.length > 0) {
    await reportUnschedulable(ports, logger, unschedulable, {
      eligible: last?.eligiblePools ?? 0,
      skipped: skippedNodePools,
    });
  }
  await reportNominated(ports, claims);

  return {
    kind: 'provisioned',
    leaseToken: lease.token,
    pods: last?.pods ?? 0,
    rounds,
    claims,
    placed: last?.placed ?? 0,
    unschedulable,
    skippedNodePools,
    leaseLost: last?.leaseLost ?? false,
  };
}

interface RoundResult {
  readonly pods: number;
  readonly claims: readonly ClaimOutcome[];
  readonly placed: number;
  readonly unschedulable: readonly UnschedulablePod[];
  /** NodePools that could launch in this round. */
  readonly eligiblePools: number;
  readonly skippedNodePools: readonly SkippedNodePool[];
  readonly leaseLost: boolean;
}

async function runRound(
  ports: ProvisionPorts,
  options: ProvisionOptions,
  lease: Lease,
  logger: Logger,
  state: ClusterState,
  round: number,
): Promise<RoundResult> {
  const input = await buildSchedulingInput(state, ports.cloud, {
    nowMs: ports.clock.now().getTime(),
    ...(options.solveOptions === undefined ? {} : { solveOptions: options.solveOptions }),
  });
  const skippedNodePools = [...input.selection.skipped];
  const typesByClass = input.instanceTypes;
  const pools = input.nodePools;
  const classes = input.nodeClasses;

  const claims: ClaimOutcome[] =
    round === 0
      ? await resumeUnlaunched(ports, logger, lease, state.nodeClaims, pools, classes, typesByClass)
      : [];
  if (claims.some((c) => c.kind === 'fenced')) {
    return {
      pods: state.pendingPods.length,
      claims,
      placed: 0,
      unschedulable: [],
      eligiblePools: pools.size,
      skippedNodePools,
      leaseLost: true,
    };
  }

  const result = solve(input.solve);

  let leaseLost = false;
  for (const plan of result.nodeClaims) {
    const pool = pools.get(plan.nodePoolName);
    const nodeClass = classes.get(plan.nodeClassName);
    const types = typesByClass.get(plan.nodeClassName) ?? [];
    if (pool === undefined || nodeClass === undefined) continue;
    const outcome = await applyPlan(ports, logger, lease, round, plan, pool, nodeClass, types);
    claims.push(outcome);
    if (outcome.kind === 'fenced') {
      leaseLost = true;
      break;
    }
  }
  return {
    pods: state.pendingPods.length,
    claims,
    placed: result.placements.length,
    unschedulable: result.unschedulable,
    eligiblePools: pools.size,
    skippedNodePools,
    leaseLost,
  };
}
