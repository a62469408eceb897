import {
  Finalizer,
  type InstanceType,
  isConditionTrue,
  Label,
  NodeClaimConditionType,
  type NodeClaimPlan,
  type PodRef,
} from '../../core/index.ts';
import {
  type CloudInstance,
  type EC2NodeClass,
  InsufficientCapacityError,
  type LaunchRecord,
  LaunchRejectedError,
  type LaunchRequest,
  NodeClassNotReadyError,
  offeringKeyString,
  SpotServiceLinkedRoleError,
} from '../../ports/cloud.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { Lease } from '../../ports/lease.ts';
import { type DecisionOutput, type LaunchDecision, writeDecision } from '../decisions/decision.ts';
import { LAUNCH_ANNOTATION, launchAnnotation } from '../state/launch-record.ts';
import {
  expectedCapacityType,
  launchedLabels,
  launchedStatus,
  nodeClaimName,
  toLaunchRequest,
  toNewNodeClaim,
} from '../state/new-nodeclaim.ts';
import { spotServiceLinkedRoleEvent } from './events.ts';
import type { ClaimOutcome, ProvisionPorts } from './types.ts';

// Applying a provisioning plan: each planned NodeClaim is created, then launched under the lease
// (fencing), and NodeClaims an earlier run created but never launched are launched first.

export type LaunchPorts = Pick<ProvisionPorts, 'cluster' | 'cloud' | 'leases' | 'clock'>;

/** Removes a NodeClaim that never launched an instance: nothing is left for its finalizer to clean up. */
export async function discardUnlaunched(ports: LaunchPorts, name: string): Promise<void> {
  await ignoreNotFound(
    ports.cluster.patchNodeClaimMetadata(name, { removeFinalizers: [Finalizer.termination] }),
  );
  await ports.cluster.deleteNodeClaim(name);
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Creates the NodeClaim of a plan and launches it under the lease. Its name derives from the
 * decision: by default from the plan's pods, the lease token and the round; a plan without pods
 * (a static NodePool's replica) passes its own `named` name.
 */
export async function applyPlan(
  ports: LaunchPorts,
  out: DecisionOutput,
  lease: Lease,
  round: number,
  plan: NodeClaimPlan,
  pool: ClusterNodePool,
  nodeClass: EC2NodeClass,
  types: readonly InstanceType[],
  launch: {
    /** A name and reason of the caller's (static NodePools); otherwise derived from the plan. */
    readonly named?: { readonly name: string; readonly reason: LaunchDecision['reason'] };
    /** Uids of the pods of nodes being deleted that the run plans for: counted on the decision. */
    readonly deletingNodePods?: ReadonlySet<string>;
  } = {},
): Promise<ClaimOutcome> {
  const name =
    launch.named?.name ??
    nodeClaimName({
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
  const moving = plan.pods.filter((p) => launch.deletingNodePods?.has(p.uid) === true).length;
  writeDecision(out, {
    ...launchDecision(
      lease,
      round,
      request,
      outcome,
      launch.named?.reason ?? 'provisioning',
      plan.minValuesRelaxed,
    ),
    ...(moving === 0 ? {} : { deletingNodePods: moving }),
  });
  return outcome;
}

/** The launch decision of a NodeClaim: what was asked of the cloud and what came of it. */
export function launchDecision(
  lease: Lease,
  round: number,
  request: Pick<LaunchRequest, 'nodeClaimName' | 'nodePoolName' | 'instanceTypes' | 'requirements'>,
  outcome: ClaimOutcome,
  reason: LaunchDecision['reason'],
  minValuesRelaxed: boolean,
): LaunchDecision {
  return {
    kind: 'launch',
    reason,
    outcome: outcome.kind,
    ...(request.nodePoolName === undefined ? {} : { nodePool: request.nodePoolName }),
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
          ...(outcome.priceAssumed === true ? { priceAssumed: true } : {}),
          ...(outcome.instanceTypeCpu === undefined ? {} : { instanceTypeCpu: outcome.instanceTypeCpu }),
          ...(outcome.instanceTypeMemoryBytes === undefined
            ? {}
            : { instanceTypeMemoryBytes: outcome.instanceTypeMemoryBytes }),
        }
      : {}),
    ...(outcome.kind === 'failed'
      ? {
          error: outcome.error,
          ...(outcome.errorCode === undefined ? {} : { errorCode: outcome.errorCode }),
          ...(outcome.failureReason === undefined ? {} : { failureReason: outcome.failureReason }),
        }
      : {}),
    ...(minValuesRelaxed ? { minValuesRelaxed: true } : {}),
    ...(outcome.kind === 'insufficientCapacity' ? { offerings: outcome.offerings.slice(0, 10) } : {}),
    ...(outcome.kind === 'insufficientCapacity' && outcome.failureReason !== undefined
      ? { failureReason: outcome.failureReason }
      : {}),
  };
}

/**
 * Launches a NodeClaim that exists in the cluster: checks the lease first (fencing), decides the
 * launch once and records it on the NodeClaim (or takes the record an earlier run left), sends it,
 * then writes the launched status and labels. The record makes the launch replayable: a run that
 * resumes sends the same request with the same idempotency token, so one NodeClaim never gets two
 * instances. Claims the cloud answered with "nothing launched" are removed so their pods are
 * planned again; claims whose launch may or may not have happened are kept for the next run.
 * A standalone NodeClaim (`standalone`, a user's) is removed only when EC2 has no capacity for it,
 * as Karpenter removes one: a fenced run leaves it for the lease holder, and a refused launch
 * leaves it `Launched=Unknown` with EC2's answer until the launch timeout.
 */
export async function launchCreated(
  ports: LaunchPorts,
  lease: Lease,
  request: LaunchRequest,
  types: readonly InstanceType[],
  userLabels: Readonly<Record<string, string>>,
  base: { readonly nodeClaim: string; readonly nodePool?: string; readonly pods: readonly PodRef[] },
  recorded?: LaunchRecord,
  standalone = false,
): Promise<ClaimOutcome> {
  const { cluster, cloud } = ports;
  const name = request.nodeClaimName;
  const warn = (reason: string, message: string) =>
    cluster.recordEvent({ subject: { kind: 'NodeClaim', name }, type: 'Warning', reason, message });
  // Fencing: a run that lost its lease makes no EC2 call. A claim with a record may have an
  // instance, so it stays for the lease holder to resume.
  if (!(await ports.leases.isHeld(lease, ports.clock.now()))) {
    if (recorded === undefined && !standalone) await discardUnlaunched(ports, name);
    return { kind: 'fenced', ...base };
  }
  let record: LaunchRecord;
  if (recorded === undefined) {
    try {
      record = await cloud.planLaunch(request);
    } catch (error) {
      if (error instanceof InsufficientCapacityError) {
        await warn('InsufficientCapacityError', `NodeClaim ${name} event: ${error.message}`);
        await discardUnlaunched(ports, name);
        return { kind: 'insufficientCapacity', ...base, offerings: [] };
      }
      if (error instanceof NodeClassNotReadyError) {
        await warn('NodeClassNotReady', error.message);
        await discardUnlaunched(ports, name);
        return { kind: 'failed', ...base, error: error.message, failureReason: 'NodeClassNotReady' };
      }
      // Nothing was sent: the claim stays unlaunched and the next run plans its launch again.
      return { kind: 'failed', ...base, error: `planning the launch failed: ${describeError(error)}` };
    }
  } else {
    record = recorded;
  }
  // Recorded (with the time of this send) before anything is sent, so a crash after the send is
  // resumed by replaying this record and termination knows to look for an instance.
  try {
    await cluster.patchNodeClaimMetadata(name, {
      annotations: { [LAUNCH_ANNOTATION]: launchAnnotation(record, ports.clock.now().getTime()) },
    });
  } catch (error) {
    return { kind: 'failed', ...base, error: `recording the launch failed: ${describeError(error)}` };
  }
  let instance: CloudInstance;
  try {
    instance = await cloud.launch(request, record, { firstSend: recorded === undefined });
  } catch (error) {
    // The cloud answered that nothing was launched for this record: the claim can go at once.
    if (error instanceof InsufficientCapacityError) {
      const roleMissing = error instanceof SpotServiceLinkedRoleError;
      if (roleMissing) await cluster.recordEvent(spotServiceLinkedRoleEvent(name));
      await warn('InsufficientCapacityError', `NodeClaim ${name} event: ${error.message}`);
      await discardUnlaunched(ports, name);
      return {
        kind: 'insufficientCapacity',
        ...base,
        offerings: error.offerings.map(offeringKeyString),
        ...(roleMissing ? { failureReason: 'SpotServiceLinkedRoleCreationFailure' as const } : {}),
      };
    }
    if (error instanceof LaunchRejectedError) {
      await warn('LaunchFailed', error.message.slice(0, 300));
      if (standalone) {
        // EC2 launched nothing for this record: the next run plans the launch afresh.
        await ignoreNotFound(
          cluster.patchNodeClaimMetadata(name, { annotations: { [LAUNCH_ANNOTATION]: null } }),
        );
        await ignoreNotFound(
          cluster.patchNodeClaimStatus(name, {
            conditions: [
              {
                type: NodeClaimConditionType.launched,
                status: 'Unknown',
                reason: 'LaunchFailed',
                message: error.message.slice(0, 300),
              },
            ],
          }),
        );
        return { kind: 'failed', ...base, error: error.message, errorCode: error.awsCode };
      }
      await discardUnlaunched(ports, name);
      return { kind: 'failed', ...base, error: error.message, errorCode: error.awsCode };
    }
    // No answer (throttled past the retries, a timeout): an instance may exist. The claim and its
    // record stay, and the next run sends the same record, which cannot launch a second one.
    const message = describeError(error).slice(0, 300);
    await warn('LaunchFailed', `${message}; the same launch is sent again on the next run`);
    return { kind: 'failed', ...base, error: message };
  }
  const type = types.find((t) => t.name === instance.instanceType);
  await cluster.patchNodeClaimMetadata(name, launchedLabels(instance, type, userLabels));
  await cluster.patchNodeClaimStatus(name, launchedStatus(instance, type));
  const offering = type?.offerings.find(
    (o) => o.zone === instance.zone && o.capacityType === instance.capacityType,
  );
  const price = offering?.priceUsdPerHour;
  const cpu = Number(type?.labels[Label.instanceCpu]);
  const memoryMib = Number(type?.labels[Label.instanceMemory]);
  return {
    kind: 'launched',
    ...base,
    instanceId: instance.instanceId,
    instanceType: instance.instanceType,
    zone: instance.zone,
    capacityType: instance.capacityType,
    ...(price === undefined ? {} : { pricePerHour: price }),
    ...(offering?.priceAssumed === true ? { priceAssumed: true } : {}),
    ...(Number.isFinite(cpu) && cpu > 0 ? { instanceTypeCpu: cpu } : {}),
    ...(Number.isFinite(memoryMib) && memoryMib > 0
      ? { instanceTypeMemoryBytes: memoryMib * 1024 * 1024 }
      : {}),
  };
}

/** A NodeClaim that exists but has no instance yet: not deleting, no provider ID, not Launched. */
export function isUnlaunched(claim: ClusterNodeClaim): boolean {
  return (
    !claim.deleting &&
    claim.status.providerId === undefined &&
    !isConditionTrue(claim.status.conditions, NodeClaimConditionType.launched)
  );
}
