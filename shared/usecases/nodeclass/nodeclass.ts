import { Finalizer, NodeClassConditionType } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { EC2NodeClass, EC2NodeClassStatus, NodeClassResolver } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim } from '../../ports/cluster.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, writeDecision } from '../decisions/decision.ts';
import { computeNodeClassStatus, isNodeClassStatusCurrent, sameNodeClassStatus } from './status.ts';

// The EC2NodeClass controller (Karpenter's nodeclass status, hash and termination controllers):
// resolves each class's selectors into its status when the class is new or changed and then at
// most once a refresh period (new AMI releases, retagged subnets), keeps the last good status when
// AWS fails for now, carries the `karpenter.k8s.aws/termination` finalizer, and on deletion waits
// for the class's NodeClaims before removing the instance profile it made.

/** The finalizer every EC2NodeClass carries while Flotilla may still launch with it. */

/** Karpenter's subnet, security-group and AMI refresh interval. */
export const NODECLASS_REFRESH_SECONDS = 60;

/** The ports the NodeClass controller uses. */
export interface NodeClassControllerPorts {
  readonly cluster: Cluster;
  readonly resolver: NodeClassResolver;
  /** Refresh gates: one resolution per class and period across concurrent invocations. */
  readonly leases: LeaseStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

export interface NodeClassControllerOptions {
  /** Who takes the refresh gates: the invocation id. */
  readonly holder: string;
  /**
   * `all`: every class, each resolved at most once per `refreshSeconds` unless its status is not
   * current (the scheduled pass). `stale`: only classes without a status for their generation
   * (the start of a provisioning run, so that a new class launches in the same invocation).
   */
  readonly scope: 'all' | 'stale';
  /** @default NODECLASS_REFRESH_SECONDS */
  readonly refreshSeconds?: number;
}

/** What the cluster already read for this pass, so the controller does not list it again. */
export interface NodeClassControllerInput {
  readonly nodeClasses: readonly EC2NodeClass[];
  /** Needed only for classes being deleted (the NodeClaims that still use them). */
  readonly nodeClaims: readonly ClusterNodeClaim[];
}

export interface NodeClassControllerResult {
  /** Every class as this pass leaves it (new statuses in place). */
  readonly nodeClasses: readonly EC2NodeClass[];
  readonly resolved: readonly string[];
  /** Classes whose status was written. */
  readonly updated: readonly string[];
  /** Classes with a part AWS could not answer for now (resolved again at the next pass). */
  readonly retrying: readonly { readonly nodeClass: string; readonly conditions: readonly string[] }[];
  /** Deleting classes whose finalizer was removed. */
  readonly finalized: readonly string[];
  /** Deleting classes still used by NodeClaims. */
  readonly waiting: readonly string[];
  /** Classes this pass could not handle, with the error (the next pass tries again). */
  readonly failed: readonly { readonly nodeClass: string; readonly error: unknown }[];
}

/**
 * One pass of the EC2NodeClass controller over `input.nodeClasses`. Each class is handled on its
 * own: an error with one is reported in `failed` and logged, and the others go on.
 */
export async function reconcileNodeClasses(
  ports: NodeClassControllerPorts,
  options: NodeClassControllerOptions,
  input: NodeClassControllerInput,
): Promise<NodeClassControllerResult> {
  const result = {
    nodeClasses: [] as EC2NodeClass[],
    resolved: [] as string[],
    updated: [] as string[],
    retrying: [] as { nodeClass: string; conditions: readonly string[] }[],
    finalized: [] as string[],
    waiting: [] as string[],
    failed: [] as { nodeClass: string; error: unknown }[],
  };
  for (const nodeClass of input.nodeClasses) {
    try {
      const next = nodeClass.deleting
        ? await finalize(ports, nodeClass, input.nodeClaims, result)
        : await reconcileOne(ports, options, nodeClass, result);
      if (next !== undefined) result.nodeClasses.push(next);
    } catch (error) {
      result.failed.push({ nodeClass: nodeClass.name, error });
      result.nodeClasses.push(nodeClass);
      ports.logger.error('ec2NodeClass not reconciled', {
        nodeClass: nodeClass.name,
        error,
        retry: 'next pass',
      });
    }
  }
  return result;
}

async function reconcileOne(
  ports: NodeClassControllerPorts,
  options: NodeClassControllerOptions,
  nodeClass: EC2NodeClass,
  result: {
    resolved: string[];
    updated: string[];
    retrying: { nodeClass: string; conditions: readonly string[] }[];
  },
): Promise<EC2NodeClass> {
  const { cluster, clock } = ports;
  if (!(nodeClass.finalizers ?? []).includes(Finalizer.nodeClassTermination)) {
    await cluster.patchNodeClassMetadata(nodeClass.name, { addFinalizers: [Finalizer.nodeClassTermination] });
  }
  const current = isNodeClassStatusCurrent(nodeClass);
  if (current && options.scope === 'stale') return nodeClass;
  // The gate opens a refresh period; a class without a current status is resolved even while
  // another invocation holds it (it may be resolving the previous generation).
  const gate = await ports.leases.acquire(
    `nodeclass-refresh#${nodeClass.name}`,
    options.holder,
    clock.now(),
    options.refreshSeconds ?? NODECLASS_REFRESH_SECONDS,
  );
  if (current && gate === undefined) return nodeClass;

  const resolution = await ports.resolver.resolve(nodeClass);
  const { status, retrying } = computeNodeClassStatus(nodeClass, resolution, clock.now());
  result.resolved.push(nodeClass.name);
  const changed = !sameNodeClassStatus(nodeClass.status, status);
  if (changed) {
    await cluster.patchNodeClassStatus(nodeClass.name, status);
    result.updated.push(nodeClass.name);
  }
  if (retrying.length > 0) {
    result.retrying.push({ nodeClass: nodeClass.name, conditions: retrying });
    // The next pass resolves again instead of waiting out the refresh period.
    if (gate !== undefined) await ports.leases.release(gate);
  }
  const ready = status.conditions.find((c) => c.type === NodeClassConditionType.ready);
  if (changed || retrying.length > 0) {
    writeDecision(ports, {
      kind: 'resolveNodeClass',
      reason: ready?.status === 'True' ? 'ready' : ready?.message || 'not ready',
      nodeClass: nodeClass.name,
      changed,
      ...(nodeClass.generation === undefined ? {} : { generation: nodeClass.generation }),
      ...(ready === undefined ? {} : { ready: ready.status }),
      retrying,
      subnets: status.subnets.length,
      securityGroups: status.securityGroups.length,
      amis: status.amis.slice(0, 10).map((a) => a.id),
      ...(status.instanceProfile === undefined ? {} : { instanceProfile: status.instanceProfile }),
    });
  } else {
    // A refresh that changes nothing is no decision.
    ports.logger.debug('ec2NodeClass unchanged', {
      nodeClass: nodeClass.name,
      generation: nodeClass.generation,
    });
  }
  await reportReadiness(ports, nodeClass, status);
  return { ...nodeClass, status };
}

/** A Warning Event when the class stops being Ready or why it is not changes. */
async function reportReadiness(
  ports: NodeClassControllerPorts,
  nodeClass: EC2NodeClass,
  status: EC2NodeClassStatus,
): Promise<void> {
  const ready = status.conditions.find((c) => c.type === NodeClassConditionType.ready);
  if (ready === undefined || ready.status === 'True') return;
  const before = nodeClass.status?.conditions.find((c) => c.type === NodeClassConditionType.ready);
  if (before?.status === ready.status && before.message === ready.message) return;
  const failing = status.conditions.find(
    (c) => c.type !== NodeClassConditionType.ready && c.status !== 'True',
  );
  await ports.cluster.recordEvent({
    subject: {
      kind: 'EC2NodeClass',
      name: nodeClass.name,
      ...(nodeClass.uid === undefined ? {} : { uid: nodeClass.uid }),
    },
    type: 'Warning',
    reason: failing?.reason || 'NotReady',
    message: `EC2NodeClass ${nodeClass.name} is not ready: ${ready.message}`,
  });
}

/** A class being deleted: wait for its NodeClaims, then release what it made and its finalizer. */
async function finalize(
  ports: NodeClassControllerPorts,
  nodeClass: EC2NodeClass,
  claims: readonly ClusterNodeClaim[],
  result: { finalized: string[]; waiting: string[] },
): Promise<EC2NodeClass | undefined> {
  if (!(nodeClass.finalizers ?? []).includes(Finalizer.nodeClassTermination)) return nodeClass;
  const users = claims
    .filter((c) => c.nodeClassRef.kind === 'EC2NodeClass' && c.nodeClassRef.name === nodeClass.name)
    .map((c) => c.name)
    .sort();
  if (users.length === 0) {
    // Releasing the class deletes its instance profile: no NodeClaim may use it, as the API server
    // itself lists them (a list from the cluster summary may miss one made seconds ago), and none
    // that cannot be read may be one of its users.
    const consistent = await ports.cluster.nodeClaims({ consistent: true });
    users.push(
      ...consistent.items
        .filter((c) => c.nodeClassRef.kind === 'EC2NodeClass' && c.nodeClassRef.name === nodeClass.name)
        .map((c) => c.name),
      ...consistent.unreadable.map((u) => `${u.name} (cannot be read)`),
    );
  }
  if (users.length > 0) {
    result.waiting.push(nodeClass.name);
    await ports.cluster.recordEvent({
      subject: {
        kind: 'EC2NodeClass',
        name: nodeClass.name,
        ...(nodeClass.uid === undefined ? {} : { uid: nodeClass.uid }),
      },
      type: 'Normal',
      reason: 'WaitingOnNodeClaimTermination',
      message: `Waiting on NodeClaim termination for ${users.slice(0, 10).join(', ')}${users.length > 10 ? ` and ${users.length - 10} more` : ''}`,
    });
    writeDecision(ports, {
      kind: 'waitForNodeClaims',
      nodeClass: nodeClass.name,
      reason: 'NodeClaims still use it',
      nodeClaims: users.slice(0, 10),
      nodeClaimCount: users.length,
    });
    return nodeClass;
  }
  await ports.resolver.release(nodeClass);
  await ports.cluster.patchNodeClassMetadata(nodeClass.name, {
    removeFinalizers: [Finalizer.nodeClassTermination],
  });
  result.finalized.push(nodeClass.name);
  writeDecision(ports, {
    kind: 'finalizeNodeClass',
    nodeClass: nodeClass.name,
    reason: 'no NodeClaim uses it',
    instanceProfileReleased: nodeClass.spec.role !== undefined,
  });
  return undefined;
}
