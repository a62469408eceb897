import { assertNever } from '../core/index.ts';
import type { Cloud } from '../ports/cloud.ts';
import {
  type Cluster,
  type ClusterNode,
  type ClusterNodeClaim,
  type ConditionUpdate,
  isConditionTrue,
} from '../ports/cluster.ts';
import type { Logger } from '../runtime/logger.ts';
import {
  type DeleteReason,
  decideLifecycle,
  type LifecycleStep,
  TERMINATION_FINALIZER,
  UNREGISTERED_TAINT,
} from './lifecycle-decide.ts';
import { NodePoolConditionType, reconcileNodePoolStatus } from './nodepool-status.ts';

export {
  ConditionType,
  type DeleteReason,
  decideLifecycle,
  initializationBlocker,
  LAUNCH_TIMEOUT_MS,
  type LifecycleInput,
  type LifecycleStep,
  parseInstanceId,
  REGISTRATION_TIMEOUT_MS,
} from './lifecycle-decide.ts';

/** The ports reconcileLifecycle uses. */
export interface LifecyclePorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly logger: Logger;
}

/** What one lifecycle pass did, by NodeClaim name. */
export interface LifecycleResult {
  readonly registered: readonly string[];
  readonly initialized: readonly string[];
  readonly deleted: readonly { readonly name: string; readonly reason: DeleteReason }[];
  /** NodeClaims whose Registered or Initialized condition changed while waiting for their node. */
  readonly waiting: readonly string[];
  /** NodePools whose status was written. */
  readonly nodePoolsUpdated: readonly string[];
  /**
   * NodeClaims still on their way after this pass: not deleting and not Initialized. While any
   * remain, the caller should run another pass soon (their Nodes are about to join).
   */
  readonly uninitialized: readonly string[];
}

const healthy = (): ConditionUpdate => ({
  type: NodePoolConditionType.nodeRegistrationHealthy,
  status: 'True',
  reason: NodePoolConditionType.nodeRegistrationHealthy,
  message: '',
});

const unhealthy = (reason: DeleteReason, message: string): ConditionUpdate => ({
  type: NodePoolConditionType.nodeRegistrationHealthy,
  status: 'False',
  reason: reason === 'launch_timeout' ? 'LaunchTimeout' : 'RegistrationTimeout',
  message,
});

/**
 * One level-triggered pass of the NodeClaim lifecycle after launch: registers NodeClaims whose
 * Node has joined, initializes registered ones whose Node is ready, deletes NodeClaims that did
 * not launch (5 min) or register (15 min) in time, then brings every NodePool's status up to date.
 * Idempotent: a second pass over an unchanged cluster writes nothing. `now` drives the timeouts.
 * @throws ClusterApiError (ClusterNotFoundError when an object vanished mid-pass) and
 *   CloudApiError / InstanceNotOwnedError from the ports; the next pass resumes where this stopped.
 */
export async function reconcileLifecycle(ports: LifecyclePorts, now: Date): Promise<LifecycleResult> {
  const { cluster, logger } = ports;
  const [claimsRead, nodesRead, poolsRead, classesRead] = await Promise.all([
    cluster.nodeClaims(),
    cluster.nodes(),
    cluster.nodePools(),
    cluster.nodeClasses(),
  ]);
  const byProviderId = new Map<string, ClusterNode[]>();
  for (const node of nodesRead.items) {
    if (node.providerId === undefined) continue;
    byProviderId.set(node.providerId, [...(byProviderId.get(node.providerId) ?? []), node]);
  }

  const result = { registered: [] as string[], initialized: [] as string[], waiting: [] as string[] };
  const deleted: { name: string; reason: DeleteReason }[] = [];
  const health = new Map<string, ConditionUpdate>();
  const deletedNames = new Set<string>();

  for (const claim of claimsRead.items) {
    const nodes =
      claim.status.providerId === undefined ? [] : (byProviderId.get(claim.status.providerId) ?? []);
    const steps = decideLifecycle({ claim, nodes, nowMs: now.getTime() });
    for (const step of steps) {
      await applyStep(ports, claim, step);
      switch (step.kind) {
        case 'register':
          result.registered.push(claim.name);
          // A failure seen in the same pass outweighs a success.
          if (health.get(claim.nodePoolName)?.status !== 'False') health.set(claim.nodePoolName, healthy());
          break;
        case 'initialize':
          result.initialized.push(claim.name);
          break;
        case 'condition':
          if (!result.waiting.includes(claim.name)) result.waiting.push(claim.name);
          break;
        case 'delete':
          deleted.push({ name: claim.name, reason: step.reason });
          deletedNames.add(claim.name);
          health.set(claim.nodePoolName, unhealthy(step.reason, step.message));
          break;
        default:
          assertNever(step);
      }
    }
  }

  const pools = await reconcileNodePoolStatus(
    { cluster, logger },
    {
      pools: poolsRead.items,
      malformedPools: poolsRead.problems,
      nodeClasses: classesRead.items,
      claims: claimsRead.items.filter((c) => !deletedNames.has(c.name)),
      nodes: nodesRead.items,
      registrationHealth: health,
    },
  );
  const done = new Set([...deletedNames, ...result.initialized]);
  const uninitialized = claimsRead.items
    .filter((c) => !c.deleting && !done.has(c.name) && !isConditionTrue(c.status.conditions, 'Initialized'))
    .map((c) => c.name);
  return { ...result, deleted, nodePoolsUpdated: pools.updated, uninitialized };
}

async function applyStep(ports: LifecyclePorts, claim: ClusterNodeClaim, step: LifecycleStep): Promise<void> {
  const { cluster, cloud, logger } = ports;
  const fields = { nodeClaim: claim.name, nodePool: claim.nodePoolName };
  switch (step.kind) {
    case 'register': {
      await cluster.patchNode(step.nodeName, step.nodePatch);
      if (step.unregisteredTaintMissing) {
        await cluster.recordEvent({
          subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
          type: 'Warning',
          reason: 'UnregisteredTaintMissing',
          message: `Missing ${UNREGISTERED_TAINT.key}:${UNREGISTERED_TAINT.effect} taint which prevents registration related race conditions on Karpenter-managed nodes`,
        });
      }
      await cluster.patchNodeClaimStatus(claim.name, step.statusPatch);
      logger.info('registered nodeclaim', {
        ...fields,
        decision: 'register',
        node: step.nodeName,
        providerId: claim.status.providerId,
        unregisteredTaintMissing: step.unregisteredTaintMissing,
        taintsAdded: (step.nodePatch.addTaints ?? []).length,
      });
      return;
    }
    case 'initialize':
      await cluster.patchNode(step.nodeName, step.nodePatch);
      await cluster.patchNodeClaimStatus(claim.name, step.statusPatch);
      logger.info('initialized nodeclaim', { ...fields, decision: 'initialize', node: step.nodeName });
      return;
    case 'condition':
      await cluster.patchNodeClaimStatus(claim.name, { conditions: [step.update] });
      logger.info('waiting for node', {
        ...fields,
        decision: 'wait',
        condition: step.update.type,
        status: step.update.status,
        reason: step.update.reason,
        detail: step.update.message,
      });
      return;
    case 'delete':
      // Terminate first: if the pass dies after that, the NodeClaim is still there to retry.
      if (step.instanceId !== undefined) await cloud.delete(step.instanceId);
      // No Node ever registered, so there is nothing to drain: finish the termination here. The
      // finalizer goes before the delete so that a repeated pass never patches a vanished object.
      if (claim.finalizers.includes(TERMINATION_FINALIZER)) {
        await cluster.patchNodeClaimMetadata(claim.name, { removeFinalizers: [TERMINATION_FINALIZER] });
      }
      await cluster.deleteNodeClaim(claim.name);
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
        type: 'Warning',
        reason: step.reason === 'launch_timeout' ? 'LaunchTimeout' : 'RegistrationTimeout',
        message: step.message,
      });
      logger.info('deleted nodeclaim', {
        ...fields,
        decision: 'delete',
        reason: step.reason,
        ...(step.instanceId === undefined ? {} : { instanceId: step.instanceId }),
      });
      return;
    default:
      assertNever(step);
  }
}
