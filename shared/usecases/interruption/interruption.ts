import {
  Annotation,
  type CapacityType,
  Label,
  NodeClaimConditionType,
  parseInstanceId,
} from '../../core/index.ts';
import {
  type Interruption,
  type InterruptionKind,
  interruptionKindRow,
} from '../../messages/interruption-kinds.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import { type Cloud, type OfferingKey, offeringKeyString } from '../../ports/cloud.ts';
import type { Cluster, ClusterEvent, ClusterNodeClaim } from '../../ports/cluster.ts';
import type { TerminationQueue } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import { handToTermination, viaQueue } from '../termination/handover.ts';

// Interruption handling (Karpenter's AWS interruption controller): EC2 and AWS Health events,
// already parsed into kinds at the edge, become graceful NodeClaim deletions, Events and ICE
// back-offs. The drain itself is the termination use case's. What each kind does is its row in
// shared/messages/interruption-kinds.ts.

export type { Interruption, InterruptionKind };

/** What Flotilla does about an interruption kind. */
export type InterruptionAction = 'cordonAndDrain' | 'forcefulTermination' | 'event' | 'none';

/** What to do with EC2 Instance Rebalance Recommendations. Karpenter only records an Event. */
export type RebalanceAction = 'event' | 'drain';

export interface InterruptionOptions {
  /** @default 'event' */
  readonly rebalance?: RebalanceAction;
}

interface KindPolicy {
  readonly action: InterruptionAction;
  /** The Event recorded on the NodeClaim (and its Node), Karpenter's AWS reasons. */
  readonly event?: Omit<ClusterEvent, 'subject'>;
  /** The `DisruptionReason` condition reason of a drain. */
  readonly disruptionReason?: string;
  /** Whether a drain backs off the NodeClaim's spot offering. */
  readonly backsOffSpotOffering?: boolean;
}

/**
 * The action and Event of each kind, as Karpenter's actionForMessage: the kind's row, with the
 * rebalance setting applied to the kinds it governs. Pure.
 */
export function interruptionPolicy(kind: InterruptionKind, options: InterruptionOptions = {}): KindPolicy {
  if (kind === 'noop') return { action: 'none' };
  const row = interruptionKindRow(kind);
  const drainBySetting =
    'actionSetting' in row &&
    row.actionSetting === 'rebalanceAction' &&
    (options.rebalance ?? 'event') === 'drain';
  return {
    action: drainBySetting ? 'cordonAndDrain' : row.action,
    disruptionReason: row.disruptionReason,
    event: row.event,
    backsOffSpotOffering: row.backsOffSpotOffering,
  };
}

/**
 * The offering an interruption backs off (of capacity type `of`: a spot interruption's spot
 * offering), from the NodeClaim's labels; undefined if incomplete or of another capacity type.
 * A reserved offering is its reservation's (`karpenter.k8s.aws/capacity-reservation-id`).
 */
export function interruptedOffering(
  claim: Pick<ClusterNodeClaim, 'labels'>,
  of: CapacityType = 'spot',
): OfferingKey | undefined {
  const instanceType = claim.labels['node.kubernetes.io/instance-type'];
  const zone = claim.labels['topology.kubernetes.io/zone'];
  const capacityType = claim.labels['karpenter.sh/capacity-type'] as CapacityType | undefined;
  if (instanceType === undefined || zone === undefined || capacityType !== of) return undefined;
  if (capacityType !== 'reserved') return { instanceType, zone, capacityType };
  const reservationId = claim.labels[Label.capacityReservationId];
  return reservationId === undefined ? undefined : { instanceType, zone, capacityType, reservationId };
}

export interface InterruptionPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly terminationQueue: TerminationQueue;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
  /**
   * Tells the provisioner that a NodeClaim's deletion began, so it plans for the node's pods while
   * they drain. When absent, or when it fails, the shim's report of the deletion and the
   * pending-pods schedule start that run.
   */
  readonly reportDeletion?: (claim: { readonly name: string; readonly uid: string }) => Promise<void>;
  /** The time a forceful termination's deadline is set to. @default systemClock */
  readonly clock?: Clock;
}

/** NodeClaims by the instance id of their `status.providerId`. */
export type NodeClaimIndex = ReadonlyMap<string, ClusterNodeClaim>;

/** Reads every NodeClaim once and indexes it by instance id (one read per batch of events). */
export async function indexNodeClaims(cluster: Cluster): Promise<NodeClaimIndex> {
  // The API server itself: a NodeClaim the summary does not show yet would leave the event unhandled.
  const claims = await cluster.nodeClaims({ consistent: true });
  const index = new Map<string, ClusterNodeClaim>();
  for (const claim of claims.items) {
    const id = parseInstanceId(claim.status.providerId);
    if (id !== undefined) index.set(id, claim);
  }
  return index;
}

/** What was done for one instance of an interruption. */
export interface InterruptionOutcome {
  readonly instanceId: string;
  readonly nodeClaim?: string;
  readonly action: InterruptionAction | 'alreadyDeleting' | 'noNodeClaim';
}

/**
 * Acts on one interruption: for each instance with a NodeClaim, records the Events, and for a
 * drain backs off a spot offering (spot interruptions), marks the NodeClaim's `DisruptionReason`,
 * deletes it gracefully and asks the termination queue to start the drain now. A NodeClaim
 * already being deleted is left alone, so a repeated event changes nothing.
 * @throws ClusterApiError, CloudApiError, QueueSendError; the event is then retried.
 */
export async function handleInterruption(
  ports: InterruptionPorts,
  interruption: Interruption & { readonly time?: string },
  claims: NodeClaimIndex,
  options: InterruptionOptions = {},
): Promise<readonly InterruptionOutcome[]> {
  const { cluster, cloud, terminationQueue, logger } = ports;
  const policy = interruptionPolicy(interruption.kind, options);
  const base = { interruption: interruption.kind, eventId: interruption.eventId };
  // A queue message's age when handled, on the decision of its first instance (Karpenter's
  // message latency), by the clock that dates the decision's metrics.
  const sentMs = interruption.time === undefined ? Number.NaN : Date.parse(interruption.time);
  const ageMs = ports.metrics.now().getTime() - sentMs;
  const queued = Number.isNaN(ageMs) ? {} : { queuedSeconds: Math.max(0, Math.round(ageMs / 100) / 10) };
  if (policy.action === 'none') {
    writeDecision(ports, {
      kind: 'ignoreInterruption',
      reason: interruption.why ?? 'not acted on',
      ...base,
      ...queued,
    });
    return [];
  }
  const outcomes: InterruptionOutcome[] = [];
  for (const [index, instanceId] of interruption.instanceIds.entries()) {
    // The message is counted once, with its first instance's decision.
    const message = index === 0 ? queued : { laterInstance: true as const };
    // Read again: an earlier event of the batch may have deleted it meanwhile. What is done is
    // decided on that read: the NodeClaim must be the instance's there too (the index may come
    // from a read the cluster summary serves).
    const indexed = claims.get(instanceId);
    const read = indexed === undefined ? undefined : await cluster.nodeClaim(indexed.name);
    const claim =
      read !== undefined && parseInstanceId(read.status.providerId) === instanceId ? read : undefined;
    if (read !== undefined && claim === undefined) {
      logger.warn('interruption not applied to a NodeClaim of another instance', {
        ...base,
        instanceId,
        nodeClaim: read.name,
        providerId: read.status.providerId ?? '(none)',
      });
    }
    if (claim === undefined) {
      writeDecision(ports, {
        kind: 'handleInterruption',
        reason: 'no NodeClaim has this instance',
        action: 'noNodeClaim',
        ...base,
        instanceId,
        ...message,
      });
      outcomes.push({ instanceId, action: 'noNodeClaim' });
      continue;
    }
    const capacityType = claim.labels[Label.capacityType];
    const fields = {
      ...base,
      instanceId,
      ...nodeClaimFields(claim),
      ...(capacityType === undefined ? {} : { capacityType }),
      ...message,
    };
    if (claim.deleting && policy.action !== 'event') {
      writeDecision(ports, {
        kind: 'handleInterruption',
        reason: 'nodeClaim is already terminating',
        action: 'alreadyDeleting',
        ...fields,
      });
      outcomes.push({ instanceId, nodeClaim: claim.name, action: 'alreadyDeleting' });
      continue;
    }
    if (policy.event !== undefined) await recordOn(cluster, claim, policy.event);
    if (policy.action === 'event') {
      writeDecision(ports, {
        kind: 'handleInterruption',
        reason: policy.event?.reason ?? 'event',
        action: 'event',
        ...fields,
      });
      outcomes.push({ instanceId, nodeClaim: claim.name, action: 'event' });
      continue;
    }

    // A spot interruption backs off its spot offering; a capacity-reservation interruption the
    // reserved offering, so that no new NodeClaim is planned into the reservation being reclaimed.
    const offering =
      policy.backsOffSpotOffering === true
        ? interruptedOffering(claim)
        : interruption.kind === 'capacityReservationInterruption'
          ? interruptedOffering(claim, 'reserved')
          : undefined;
    if (offering !== undefined)
      await cloud.markUnavailable(
        [offering],
        offering.capacityType === 'spot' ? 'spot interruption' : 'capacity reservation interruption',
      );
    // A broken instance is not drained gracefully: the deadline is now, so termination deletes its
    // pods without waiting on PodDisruptionBudgets, as Karpenter's forceful termination does.
    if (policy.action === 'forcefulTermination') {
      await cluster.patchNodeClaimMetadata(claim.name, {
        annotations: { [Annotation.terminationTimestamp]: rfc3339((ports.clock ?? systemClock).now()) },
      });
    }
    await cluster.patchNodeClaimStatus(claim.name, {
      conditions: [
        {
          type: NodeClaimConditionType.disruptionReason,
          status: 'True',
          reason: policy.disruptionReason ?? 'Interrupted',
          message: `${interruption.kind} event ${interruption.eventId}`,
        },
      ],
    });
    await cluster.deleteNodeClaim(claim.name);
    await recordOn(cluster, claim, {
      type: 'Warning',
      reason: 'TerminatingOnInterruption',
      message: 'Interruption triggered termination for the NodeClaim',
    });
    const handedOver = await handToTermination(viaQueue(terminationQueue), claim.name, logger, fields);
    await reportDeletion(ports, claim);
    writeDecision(ports, {
      kind: 'handleInterruption',
      reason: policy.event?.reason ?? policy.disruptionReason ?? 'interrupted',
      action: policy.action,
      handedOver,
      ...fields,
      ...(offering === undefined ? {} : { unavailableOffering: offeringKeyString(offering) }),
    });
    outcomes.push({ instanceId, nodeClaim: claim.name, action: policy.action });
  }
  return outcomes;
}

/** RFC 3339 to the second, as Karpenter writes the termination timestamp. */
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

async function recordOn(
  cluster: Cluster,
  claim: ClusterNodeClaim,
  event: Omit<ClusterEvent, 'subject'>,
): Promise<void> {
  await cluster.recordEvent({ ...event, subject: { kind: 'NodeClaim', name: claim.name, uid: claim.uid } });
  if (claim.status.nodeName !== undefined) {
    await cluster.recordEvent({ ...event, subject: { kind: 'Node', name: claim.status.nodeName } });
  }
}

/**
 * Tells the provisioner of the deletion. The NodeClaim is deleted and its drain asked for whatever
 * happens here, so a failure does not fail the event: the shim reports the same deletion, and the
 * pending-pods schedule finds it within a minute.
 */
async function reportDeletion(ports: InterruptionPorts, claim: ClusterNodeClaim): Promise<void> {
  if (ports.reportDeletion === undefined) return;
  try {
    await ports.reportDeletion({ name: claim.name, uid: claim.uid });
  } catch (error) {
    ports.logger.warn('provisioner not told of the deletion', {
      error,
      nodeClaim: claim.name,
      fallback: 'the shim and the pending-pods schedule',
    });
  }
}
