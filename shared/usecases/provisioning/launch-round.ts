import {
  applyNodeOverlays,
  type InstanceType,
  type NodeClaimPlan,
  type OverlayResolution,
} from '../../core/index.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodePool } from '../../ports/cluster.ts';
import type { Lease } from '../../ports/lease.ts';
import type { DecisionOutput } from '../decisions/decision.ts';
import { fallsBack } from '../state/new-nodeclaim.ts';
import { applyPlan } from './launch.ts';
import type { ClaimOutcome, ProvisionPorts } from './types.ts';

/**
 * How many planned NodeClaims a round creates and launches at once. Karpenter creates a batch's
 * NodeClaims in parallel and its NodeClaim lifecycle controller launches up to 100 at once before
 * its rate limiter paces the rest (10 a second); a Lambda has no such pacing, so this bounds the
 * round instead. Each launch's Kubernetes calls still go through the client's own bound.
 */
export const LAUNCH_CONCURRENCY = 100;

/** What one round launches from: the plan and what it was made with. */
export interface LaunchRoundInput {
  readonly round: number;
  /** The run's last round: a claim is launched even if it would now fall back to another capacity type. */
  readonly last: boolean;
  readonly plans: readonly NodeClaimPlan[];
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  /** The instance types the plan gave each NodePool and class. */
  readonly typesOf: (plan: NodeClaimPlan) => readonly InstanceType[];
  readonly overlays: OverlayResolution;
  /** NodePools that launch one NodeClaim a run until one succeeds (the runaway guard's probes). */
  readonly probing: ReadonlySet<string>;
  /** Uids of the pods of nodes being deleted that the plan places, counted on the decisions. */
  readonly deletingNodePods: ReadonlySet<string>;
  /** @default LAUNCH_CONCURRENCY */
  readonly concurrency?: number;
}

export interface LaunchRoundResult {
  /** One outcome per NodeClaim launched or tried, in the plan's order. */
  readonly claims: readonly ClaimOutcome[];
  /** Planned NodeClaims left for the next round: they would have fallen back to another capacity type. */
  readonly replanned: number;
  readonly leaseLost: boolean;
}

/**
 * Creates and launches a round's planned NodeClaims, up to `concurrency` at once, in the plan's
 * order. Once any launch of the round is refused for capacity, the offerings are read again (the
 * back-offs it added) and each claim not yet started is checked against them: one planned for spot
 * that would now launch on-demand at its spot-sized shape is left for the next round, where its pods
 * are planned again with the others that failed (unless this is the last round). A launch that finds
 * the lease lost stops the round: no further claim starts.
 */
export async function launchRound(
  ports: Pick<ProvisionPorts, 'cluster' | 'cloud' | 'leases' | 'clock'>,
  out: DecisionOutput,
  lease: Lease,
  input: LaunchRoundInput,
): Promise<LaunchRoundResult> {
  const { round, last, pools, classes } = input;
  const outcomes: (ClaimOutcome | undefined)[] = [];
  const probed = new Set<string>();
  // Offerings as they are now, per NodePool (overlays applied), once a capacity error came back.
  let current: Map<string, Promise<ReadonlyMap<string, InstanceType>>> | undefined;
  const plannedByPool = new Map<string, ReadonlyMap<string, InstanceType>>();
  let replanned = 0;
  let leaseLost = false;
  let failure: { readonly error: unknown } | undefined;
  let next = 0;

  const currentTypes = (plan: NodeClaimPlan, nodeClass: EC2NodeClass) => {
    const byPool = current ?? new Map();
    current = byPool;
    let now = byPool.get(plan.nodePoolName);
    if (now === undefined) {
      now = ports.cloud
        .instanceTypes(nodeClass)
        .then(
          (fresh) =>
            new Map(applyNodeOverlays(input.overlays, plan.nodePoolName, fresh).map((t) => [t.name, t])),
        );
      byPool.set(plan.nodePoolName, now);
    }
    return now;
  };

  const launchOne = async (index: number, plan: NodeClaimPlan): Promise<void> => {
    const pool = pools.get(plan.nodePoolName);
    const nodeClass = classes.get(plan.nodeClassName);
    if (pool === undefined || nodeClass === undefined) return;
    const types = input.typesOf(plan);
    if (current !== undefined && !last) {
      let planned = plannedByPool.get(plan.nodePoolName);
      if (planned === undefined) {
        planned = new Map(types.map((t) => [t.name, t]));
        plannedByPool.set(plan.nodePoolName, planned);
      }
      if (fallsBack(plan, planned, await currentTypes(plan, nodeClass))) {
        replanned += 1;
        return;
      }
      // Another launch may have lost the lease or failed while the offerings were read.
      if (leaseLost || failure !== undefined) return;
    }
    const outcome = await applyPlan(ports, out, lease, round, plan, pool, nodeClass, types, {
      deletingNodePods: input.deletingNodePods,
    });
    // A capacity error makes the offerings be read again for the claims that start after it.
    if (outcome.kind === 'insufficientCapacity') current = new Map();
    if (outcome.kind === 'fenced') leaseLost = true;
    outcomes[index] = outcome;
  };

  const worker = async (): Promise<void> => {
    while (!leaseLost && failure === undefined && next < input.plans.length) {
      const index = next++;
      const plan = input.plans[index] as NodeClaimPlan;
      // A pool whose NodeClaims failed lately launches one NodeClaim a run until one succeeds; the
      // pods of the others wait for a later run.
      if (input.probing.has(plan.nodePoolName)) {
        if (probed.has(plan.nodePoolName)) continue;
        probed.add(plan.nodePoolName);
      }
      try {
        await launchOne(index, plan);
      } catch (error) {
        // No further claim starts; the launches under way finish before the error is thrown.
        failure ??= { error };
      }
    }
  };
  const width = Math.max(1, Math.min(input.concurrency ?? LAUNCH_CONCURRENCY, input.plans.length));
  await Promise.all(Array.from({ length: width }, worker));
  if (failure !== undefined) throw failure.error;
  return {
    claims: outcomes.filter((o): o is ClaimOutcome => o !== undefined),
    replanned,
    leaseLost,
  };
}
