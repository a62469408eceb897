import {
  assertNever,
  isConditionTrue,
  Label,
  NodeClaimConditionType,
  NodePoolConditionType,
  UNREGISTERED_TAINT,
} from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Cloud, NodeClassResolver } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, ConditionUpdate, NodeInfo } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { WakeUps } from '../../ports/wake-ups.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import type { DeleteReason } from '../decisions/lifecycle.ts';
import { type NodeClassControllerResult, reconcileNodeClasses } from '../nodeclass/nodeclass.ts';
import { type ReservedNodeClaimsResult, reconcileReservedNodeClaims } from '../nodeclass/reservations.ts';
import { reconcileNodeOverlayStatus } from '../nodeoverlay/status.ts';
import { reconcileNodePoolStatus } from '../nodepool/status.ts';
import { armWakeUps } from '../nodepool/wake-ups.ts';
import { reconcileLaunchBackoff, type TimedOutNodeClaim } from '../runaway-guard/index.ts';
import { nodesByProviderId } from '../state/node-index.ts';
import { handToTermination } from '../termination/handover.ts';
import { decideLifecycle, type LifecycleStep } from './decide.ts';
import { nameInstances } from './instance-names.ts';

export {
  decideLifecycle,
  initializationBlocker,
  LAUNCH_TIMEOUT_MS,
  type LifecycleInput,
  type LifecycleStep,
  REGISTRATION_TIMEOUT_MS,
} from './decide.ts';
export type { DeleteReason };

/** The ports reconcileLifecycle uses. */
export interface LifecyclePorts {
  readonly cluster: Cluster;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /**
   * When set, the pass starts with the EC2NodeClass controller (each class resolved at most once
   * a refresh period, see reconcileNodeClasses), so NodePool status follows its class.
   */
  readonly nodeClasses?: {
    readonly resolver: NodeClassResolver;
    readonly leases: LeaseStore;
    readonly clock: Clock;
    /** The invocation id, for the refresh gates. */
    readonly holder: string;
    /** Karpenter's AMI_REFRESH_INTERVAL in seconds. @default NODECLASS_REFRESH_SECONDS */
    readonly refreshSeconds?: number;
  };
  /**
   * Hands a NodeClaim this pass deleted to termination at once (a termination request); without
   * it, the termination sweep finds the claim on its schedule.
   */
  readonly requestTermination?: (nodeClaim: string) => Promise<void>;
  /**
   * When set, the pass ends with the NodeOverlay status controller: every overlay resolved against
   * the NodePools (their classes' instance types read from here), its conditions written on change.
   * Unset with Karpenter's NodeOverlay feature gate off: overlays get no status.
   */
  readonly nodeOverlays?: { readonly cloud: Pick<Cloud, 'instanceTypes'> };
  /** Flotilla's runaway guard (the stack's `runawayGuard`): false turns it off. @default true */
  readonly runawayGuard?: boolean;
  /** The NodePools' wake-ups, armed after their status (nodepool/wake-ups.ts). @default none */
  readonly wakeUps?: WakeUps;
  /** Tags registered NodeClaims' instances with their node's name (instance-names.ts). @default none */
  readonly instanceNames?: Pick<Cloud, 'nameInstance'>;
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
  /** NodeOverlays whose status was written (when the NodeOverlay controller ran). */
  readonly nodeOverlaysUpdated?: readonly string[];
  /** What the EC2NodeClass controller did, when it ran. */
  readonly nodeClasses?: NodeClassControllerResult;
  /** What it did about NodeClaims whose capacity reservation ended or is ending, when it ran. */
  readonly reservations?: ReservedNodeClaimsResult;
  /**
   * NodeClaims still on their way after this pass: not deleting and not Initialized, with their
   * creation time. While young ones remain, the caller should run another pass soon (their Nodes
   * are about to join; see decideFollowUp).
   */
  readonly uninitialized: readonly UninitializedNodeClaim[];
}

/** A NodeClaim not initialized yet, and when it was created (epoch ms), when known. */
export interface UninitializedNodeClaim {
  readonly name: string;
  readonly createdAtMs?: number;
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
 * One level-triggered pass of the controllers that keep the cluster's Karpenter objects current:
 * the EC2NodeClass controller (when wired: NodeClaims whose capacity reservation ended are
 * relabelled on-demand and those of an ending capacity block deleted, then the classes' statuses), then the NodeClaim lifecycle after launch (registers
 * NodeClaims whose Node has joined, initializes registered ones whose Node is ready, keeps their
 * Ready condition, deletes NodeClaims that did not launch in 5 min or register in 15 and hands
 * them to termination), then every NodePool's status. Idempotent: a second pass over an unchanged
 * cluster writes nothing. `now` drives the timeouts.
 * @throws ClusterApiError (ClusterNotFoundError when an object vanished mid-pass); the next pass
 *   resumes where this stopped. A class the NodeClass controller could not handle is reported in
 *   `nodeClasses.failed` instead.
 */
export async function reconcileLifecycle(ports: LifecyclePorts, now: Date): Promise<LifecycleResult> {
  const { cluster, logger, metrics } = ports;
  // The Nodes without their pods: only the runaway guard may need the pods, and reads them itself.
  const [claimsRead, nodesRead, poolsRead, classesRead] = await Promise.all([
    cluster.nodeClaims(),
    cluster.nodeInfos(),
    cluster.nodePools(),
    cluster.nodeClasses(),
  ]);
  // Reservations first: a reservation that ended leaves the class's status with it, and its nodes
  // are on-demand by then rather than drifted for it.
  const reservations =
    ports.nodeClasses === undefined
      ? undefined
      : await reconcileReservedNodeClaims(
          {
            cluster,
            logger,
            metrics,
            resolver: ports.nodeClasses.resolver,
            clock: ports.nodeClasses.clock,
            ...(ports.requestTermination === undefined
              ? {}
              : { requestTermination: ports.requestTermination }),
          },
          { nodeClaims: claimsRead.items, nodes: nodesRead.items },
        );
  const nodeClasses =
    ports.nodeClasses === undefined
      ? undefined
      : await reconcileNodeClasses(
          { cluster, logger, metrics, ...ports.nodeClasses },
          {
            holder: ports.nodeClasses.holder,
            scope: 'all',
            ...(ports.nodeClasses.refreshSeconds === undefined
              ? {}
              : { refreshSeconds: ports.nodeClasses.refreshSeconds }),
          },
          { nodeClasses: classesRead.items, nodeClaims: claimsRead.items },
        );
  const byProviderId = nodesByProviderId(nodesRead.items);

  const result = { registered: [] as string[], initialized: [] as string[], waiting: [] as string[] };
  const deleted: { name: string; reason: DeleteReason }[] = [];
  const health = new Map<string, ConditionUpdate>();
  const deletedNames = new Set<string>(reservations?.expired ?? []);
  const timedOut: TimedOutNodeClaim[] = [];

  let consistentNodes: readonly NodeInfo[] | undefined;
  for (const read of claimsRead.items) {
    // Deleted above for its capacity block: termination has it now.
    if (deletedNames.has(read.name)) continue;
    let claim = read;
    const nodes =
      claim.status.providerId === undefined ? [] : (byProviderId.get(claim.status.providerId) ?? []);
    let steps = decideLifecycle({ claim, nodes, nowMs: now.getTime() });
    if (steps.some((s) => s.kind === 'delete')) {
      // A timeout deletes the NodeClaim: decided again on the API server's own NodeClaim and Nodes,
      // as the list may come from the cluster summary, seconds behind a Node that just joined.
      const fresh = await cluster.nodeClaim(claim.name);
      consistentNodes ??= (await cluster.nodeInfos({ consistent: true })).items;
      const providerId = fresh?.status.providerId;
      steps =
        fresh === undefined || fresh.deleting
          ? []
          : decideLifecycle({
              claim: fresh,
              nodes:
                providerId === undefined ? [] : consistentNodes.filter((n) => n.providerId === providerId),
              nowMs: now.getTime(),
            });
      claim = fresh ?? claim;
    }
    const registering = steps.find((s) => s.kind === 'register');
    if (registering !== undefined) {
      // Registration sets the Node's taints and labels from what it reads of them: decided again
      // on the NodeClaim and Node as the API server has them, as the list may be seconds behind
      // (another invocation may have registered it, and an agent lifted a startup taint since).
      const [fresh, node] = await Promise.all([
        cluster.nodeClaim(claim.name),
        cluster.node(registering.nodeName),
      ]);
      steps =
        fresh === undefined || fresh.deleting
          ? []
          : decideLifecycle({
              claim: fresh,
              nodes: node !== undefined && node.providerId === fresh.status.providerId ? [node] : [],
              nowMs: now.getTime(),
            });
      claim = fresh ?? claim;
    }
    for (const step of steps) {
      // A Node or NodeClaim deleted since the read (drained by termination meanwhile) has nothing
      // left for the lifecycle; the next pass reads it as it is.
      if ((await ignoreNotFound(applyStep(ports, claim, step).then(() => true))) === undefined) break;
      switch (step.kind) {
        case 'register':
          result.registered.push(claim.name);
          // A failure seen in the same pass outweighs a success. A standalone NodeClaim has no NodePool.
          if (claim.nodePoolName !== undefined && health.get(claim.nodePoolName)?.status !== 'False') {
            health.set(claim.nodePoolName, healthy());
          }
          break;
        case 'initialize':
          result.initialized.push(claim.name);
          break;
        case 'condition':
          if (!result.waiting.includes(claim.name)) result.waiting.push(claim.name);
          break;
        case 'ready':
          break;
        case 'delete':
          deleted.push({ name: claim.name, reason: step.reason });
          deletedNames.add(claim.name);
          timedOut.push({ claim, reason: step.reason, message: step.message });
          if (claim.nodePoolName !== undefined) {
            health.set(claim.nodePoolName, unhealthy(step.reason, step.message));
          }
          break;
        default:
          assertNever(step);
      }
    }
  }

  // The runaway guard: timed-out NodeClaims count as failures, and pauses whose time is up end.
  await reconcileLaunchBackoff(
    { cluster, logger, metrics },
    {
      kind: 'lifecycle',
      pools: poolsRead.items,
      claims: claimsRead.items,
      nodes: async () => (await cluster.nodes()).items,
      timedOut,
      nowMs: now.getTime(),
      enabled: ports.runawayGuard !== false,
    },
  );
  const pools = await reconcileNodePoolStatus(
    { cluster, logger, metrics },
    {
      pools: poolsRead.items,
      malformedPools: poolsRead.problems,
      nodeClasses: nodeClasses?.nodeClasses ?? classesRead.items,
      claims: claimsRead.items.filter((c) => !deletedNames.has(c.name)),
      nodes: nodesRead.items,
      registrationHealth: health,
      nowMs: now.getTime(),
    },
  );
  if (ports.wakeUps !== undefined) await armWakeUps(ports.wakeUps, poolsRead.items, now.getTime(), logger);
  // Registered by an earlier pass: this pass's registrations are named by the next one.
  if (ports.instanceNames !== undefined) {
    const registered = claimsRead.items.filter((c) => !deletedNames.has(c.name));
    const classesNamingInstances = new Set(
      classesRead.items.filter((c) => c.spec.tags?.['Name'] !== undefined).map((c) => c.name),
    );
    await nameInstances({ cluster, cloud: ports.instanceNames, logger, classesNamingInstances }, registered);
  }
  // NodeOverlays last: the pass's other work does not wait on the catalog read they need.
  const overlays =
    ports.nodeOverlays === undefined
      ? undefined
      : await reconcileNodeOverlayStatus({ cluster, logger, metrics }, ports.nodeOverlays.cloud, {
          overlays: (await cluster.nodeOverlays()).items,
          pools: poolsRead.items,
          nodeClasses: nodeClasses?.nodeClasses ?? classesRead.items,
        });
  const done = new Set([...deletedNames, ...result.initialized]);
  const uninitialized = claimsRead.items
    .filter(
      (c) =>
        !c.deleting &&
        !done.has(c.name) &&
        !isConditionTrue(c.status.conditions, NodeClaimConditionType.initialized),
    )
    .map((c) => ({ name: c.name, ...(c.createdAtMs === undefined ? {} : { createdAtMs: c.createdAtMs }) }));
  return {
    ...result,
    deleted,
    nodePoolsUpdated: pools.updated,
    ...(overlays === undefined ? {} : { nodeOverlaysUpdated: overlays.updated }),
    uninitialized,
    ...(nodeClasses === undefined ? {} : { nodeClasses }),
    ...(reservations === undefined ? {} : { reservations }),
  };
}

async function applyStep(ports: LifecyclePorts, claim: ClusterNodeClaim, step: LifecycleStep): Promise<void> {
  const { cluster, logger } = ports;
  const fields = nodeClaimFields(claim);
  switch (step.kind) {
    case 'register': {
      const zone = claim.labels[Label.zone];
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
      writeDecision(ports, {
        kind: 'register',
        reason: 'node joined',
        ...fields,
        node: step.nodeName,
        ...(claim.status.providerId === undefined ? {} : { providerId: claim.status.providerId }),
        unregisteredTaintMissing: step.unregisteredTaintMissing,
        taintsAdded: (step.nodePatch.addTaints ?? []).length,
        ...(zone === undefined ? {} : { zone }),
      });
      return;
    }
    case 'initialize':
      await cluster.patchNode(step.nodeName, step.nodePatch);
      await cluster.patchNodeClaimStatus(claim.name, step.statusPatch);
      writeDecision(ports, { kind: 'initialize', reason: 'node ready', ...fields, node: step.nodeName });
      return;
    case 'condition':
      await cluster.patchNodeClaimStatus(claim.name, { conditions: [step.update] });
      writeDecision(ports, {
        kind: 'wait',
        reason: step.update.reason,
        ...fields,
        condition: step.update.type,
        status: step.update.status,
        detail: step.update.message,
      });
      return;
    case 'ready':
      await cluster.patchNodeClaimStatus(claim.name, { conditions: [step.update] });
      return;
    case 'delete': {
      // Termination terminates the instance (when one was launched) and then releases the
      // finalizer: the NodeClaim stays until the instance is gone, so nothing is left running.
      await cluster.deleteNodeClaim(claim.name);
      await cluster.recordEvent({
        subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid },
        type: 'Warning',
        reason: step.reason === 'launch_timeout' ? 'LaunchTimeout' : 'RegistrationTimeout',
        message: step.message,
      });
      const handedOver = await handToTermination(ports.requestTermination, claim.name, logger, fields);
      const capacityType = claim.labels[Label.capacityType];
      writeDecision(ports, {
        kind: 'delete',
        reason: step.reason,
        ...fields,
        ...(claim.status.providerId === undefined ? {} : { providerId: claim.status.providerId }),
        ...(capacityType === undefined ? {} : { capacityType }),
        handedOver,
      });
      return;
    }
    default:
      assertNever(step);
  }
}
