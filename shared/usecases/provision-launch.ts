import { Finalizer, type InstanceType, Label, type NodeClaimPlan, type PodRef } from '../core/index.ts';
import {
  type Cloud,
  type EC2NodeClass,
  InsufficientCapacityError,
  type LaunchRequest,
  NodeClassNotReadyError,
} from '../ports/cloud.ts';
import { type ClusterNodeClaim, type ClusterNodePool, isConditionTrue } from '../ports/cluster.ts';
import { ignoreNotFound } from '../ports/errors.ts';
import type { Lease } from '../ports/lease.ts';
import type { Logger } from '../runtime/logger.ts';
import { type LaunchDecision, writeDecision } from './decision.ts';
import {
  expectedCapacityType,
  launchedLabels,
  launchedStatus,
  nodeClaimName,
  toLaunchRequest,
  toNewNodeClaim,
} from './provision-plan.ts';
import type { ClaimOutcome, ProvisionPorts } from './provision-types.ts';

// Applying a provisioning plan: each planned NodeClaim is created, then launched under the lease
// (fencing), and NodeClaims an earlier run created but never launched are launched first.

type LaunchPorts = Pick<ProvisionPorts, 'cluster' | 'cloud' | 'leases' | 'clock'>;

/** Removes a NodeClaim that never launched an instance: nothing is left for its finalizer to clean up. */
async function discardUnlaunched(ports: LaunchPorts, name: string): Promise<void> {
  await ignoreNotFound(
    ports.cluster.patchNodeClaimMetadata(name, { removeFinalizers: [Finalizer.termination] }),
  );
  await ports.cluster.deleteNodeClaim(name);
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function applyPlan(
  ports: LaunchPorts,
  logger: Logger,
  lease: Lease,
  round: number,
  plan: NodeClaimPlan,
  pool: ClusterNodePool,
  nodeClass: EC2NodeClass,
  types: readonly InstanceType[],
): Promise<ClaimOutcome> {
  const name = nodeClaimName({
    nodePoolName: plan.nodePoolName,
    podUids: plan.pods.map((p) => p.uid),
    leaseToken: lease.token,
    round,
  });
  const byName = new Map(types.map((t) => [t.name, t]));
  const request = toLaunchRequest(name, plan, nodeClass, byName);
  const base = { nodeClaim: name, nodePool: plan.nodePoolName, pods: plan.pods };

  const outcome = await (async (): Promise<ClaimOutcome> => {
    if (request.instanceTypes.length === 0) {
      return {
        kind: 'failed',
        ...base,
        error: 'none of the planned instance types is offered for the NodeClass',
      };
    }
    try {
      await ports.cluster.createNodeClaim(toNewNodeClaim(name, plan, pool, nodeClass));
    } catch (error) {
      return { kind: 'failed', ...base, error: `creating the NodeClaim failed: ${describeError(error)}` };
    }
    return launchCreated(ports, lease, request, types, plan.labels, base);
  })();
  writeDecision(logger, launchDecision(lease, round, request, outcome, 'provisioning'));
  return outcome;
}

/** The launch decision of a NodeClaim: what was asked of the cloud and what came of it. */
function launchDecision(
  lease: Lease,
  round: number,
  request: LaunchRequest,
  outcome: ClaimOutcome,
  reason: LaunchDecision['reason'],
): LaunchDecision {
  return {
    kind: 'launch',
    reason,
    outcome: outcome.kind,
    nodePool: request.nodePoolName,
    nodeClaim: request.nodeClaimName,
    pods: outcome.pods,
    instanceTypes: request.instanceTypes.map((t) => t.name),
    capacityType:
      outcome.kind === 'launched'
        ? outcome.capacityType
        : expectedCapacityType(request.requirements, request.instanceTypes),
    round,
    leaseToken: lease.token,
    ...(outcome.kind === 'launched'
      ? {
          instanceId: outcome.instanceId,
          instanceType: outcome.instanceType,
          zone: outcome.zone,
          ...(outcome.pricePerHour === undefined ? {} : { pricePerHour: outcome.pricePerHour }),
        }
      : {}),
    ...(outcome.kind === 'failed' ? { error: outcome.error } : {}),
    ...(outcome.kind === 'insufficientCapacity' ? { offerings: outcome.offerings.slice(0, 10) } : {}),
  };
}

/**
 * Launches a NodeClaim that exists in the cluster: checks the lease first (fencing), then
 * `cloud.create`, then writes the launched status and labels. Claims that cannot launch are
 * removed so their pods are planned again.
 */
async function launchCreated(
  ports: LaunchPorts,
  lease: Lease,
  request: LaunchRequest,
  types: readonly InstanceType[],
  userLabels: Readonly<Record<string, string>>,
  base: { readonly nodeClaim: string; readonly nodePool: string; readonly pods: readonly PodRef[] },
): Promise<ClaimOutcome> {
  const { cluster, cloud } = ports;
  const name = request.nodeClaimName;
  // Fencing: a run that lost its lease makes no EC2 call.
  if (!(await ports.leases.isHeld(lease, ports.clock.now()))) {
    await discardUnlaunched(ports, name);
    return { kind: 'fenced', ...base };
  }
  let instance: Awaited<ReturnType<Cloud['create']>>;
  try {
    instance = await cloud.create(request);
  } catch (error) {
    if (error instanceof InsufficientCapacityError) {
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name },
        type: 'Warning',
        reason: 'InsufficientCapacityError',
        message: `NodeClaim ${name} event: ${error.message}`,
      });
      await discardUnlaunched(ports, name);
      return {
        kind: 'insufficientCapacity',
        ...base,
        offerings: error.offerings.map((o) => `${o.capacityType}:${o.instanceType}:${o.zone}`),
      };
    }
    if (error instanceof NodeClassNotReadyError) {
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name },
        type: 'Warning',
        reason: 'NodeClassNotReady',
        message: error.message,
      });
      await discardUnlaunched(ports, name);
      return { kind: 'failed', ...base, error: error.message };
    }
    // An instance may or may not exist: delete the claim but keep its finalizer, so termination
    // looks for an instance tagged with the claim before the claim goes.
    const message = describeError(error).slice(0, 300);
    await cluster.recordEvent({
      subject: { kind: 'NodeClaim', name },
      type: 'Warning',
      reason: 'LaunchFailed',
      message,
    });
    await cluster.deleteNodeClaim(name);
    return { kind: 'failed', ...base, error: message };
  }
  const type = types.find((t) => t.name === instance.instanceType);
  await cluster.patchNodeClaimMetadata(name, launchedLabels(instance, type, userLabels));
  await cluster.patchNodeClaimStatus(name, launchedStatus(instance, type));
  const price = type?.offerings.find(
    (o) => o.zone === instance.zone && o.capacityType === instance.capacityType,
  )?.priceUsdPerHour;
  return {
    kind: 'launched',
    ...base,
    instanceId: instance.instanceId,
    instanceType: instance.instanceType,
    zone: instance.zone,
    capacityType: instance.capacityType,
    ...(price === undefined ? {} : { pricePerHour: price }),
  };
}

/** A NodeClaim that exists but has no instance yet: not deleting, no provider ID, not Launched. */
export function isUnlaunched(claim: ClusterNodeClaim): boolean {
  return (
    !claim.deleting &&
    claim.status.providerId === undefined &&
    !isConditionTrue(claim.status.conditions, 'Launched')
  );
}

/**
 * Launches the NodeClaims an earlier run created but never launched (it crashed or timed out
 * between the create and the launch). The scheduler counts pods on them, so nothing else would
 * launch for those pods; `cloud.create` is idempotent per claim name, so a launch that did
 * happen is found again rather than repeated.
 */
export async function resumeUnlaunched(
  ports: LaunchPorts,
  logger: Logger,
  lease: Lease,
  claims: readonly ClusterNodeClaim[],
  pools: ReadonlyMap<string, ClusterNodePool>,
  classes: ReadonlyMap<string, EC2NodeClass>,
  typesByClass: ReadonlyMap<string, readonly InstanceType[]>,
): Promise<ClaimOutcome[]> {
  const out: ClaimOutcome[] = [];
  for (const claim of claims) {
    if (!isUnlaunched(claim)) continue;
    const pool = pools.get(claim.nodePoolName);
    const nodeClass = pool === undefined ? undefined : classes.get(pool.nodeClassRef.name);
    if (pool === undefined || nodeClass === undefined) continue;
    const byName = new Map((typesByClass.get(nodeClass.name) ?? []).map((t) => [t.name, t]));
    const allowed =
      claim.requirements.find((r) => r.key === Label.instanceType && r.operator === 'In')?.values ?? [];
    const request: LaunchRequest = {
      nodeClaimName: claim.name,
      nodePoolName: claim.nodePoolName,
      nodeClass,
      instanceTypes: allowed.flatMap((n) => {
        const type = byName.get(n);
        return type === undefined ? [] : [type];
      }),
      requirements: claim.requirements,
      labels: claim.labels,
      taints: claim.taints,
      startupTaints: claim.startupTaints,
    };
    const base = { nodeClaim: claim.name, nodePool: claim.nodePoolName, pods: [] };
    const outcome: ClaimOutcome =
      request.instanceTypes.length === 0
        ? {
            kind: 'failed',
            ...base,
            error: "none of the NodeClaim's instance types is offered for the NodeClass",
          }
        : await launchCreated(ports, lease, request, [...byName.values()], pool.pool.labels ?? {}, base);
    writeDecision(logger, launchDecision(lease, 0, request, outcome, 'resumed'));
    out.push(outcome);
    if (outcome.kind === 'fenced') break;
  }
  return out;
}
