import {
  Annotation,
  assertNever,
  DISRUPTED_TAINT,
  Finalizer,
  Label,
  NodeClaimConditionType,
  parseInstanceId,
  WellKnownLabel,
} from '../../core/index.ts';
import { type Cloud, INSTANCE_LOOKUP_WINDOW_MS } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, EvictionOutcome, NodeInfo } from '../../ports/cluster.ts';
import { isNotFound } from '../../ports/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { type MetricsSink, nodeClaimFields, writeDecision } from '../decisions/decision.ts';
import { instanceLookupUntilMs } from '../state/launch-record.ts';
import {
  decideTermination,
  type TerminationDecision,
  type TerminationStep,
  terminationDeadlineMs,
} from './decide.ts';
import {
  awaitingVolumeDetachment,
  disrupted,
  evicted,
  failedDraining,
  failedTermination,
  terminationGracePeriodExpiring,
} from './events.ts';

export {
  DRAIN_TIERS,
  type DrainTier,
  decideTermination,
  drainTier,
  isDrainable,
  type TerminationDecision,
  type TerminationInput,
  type TerminationOutcome,
  type TerminationStep,
  terminationDeadlineMs,
} from './decide.ts';

/** The ports terminateNodeClaim uses. */
export interface TerminationPorts {
  readonly cluster: Cluster;
  readonly cloud: Cloud;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

/** What one pass did. */
export type TerminationResult =
  | { readonly kind: 'done'; readonly nodeClaim: string }
  | { readonly kind: 'skipped'; readonly nodeClaim: string; readonly why: string }
  | {
      readonly kind: 'continue';
      readonly nodeClaim: string;
      readonly afterSeconds: number;
      readonly waitingOn: 'drain' | 'volumes' | 'instance';
      readonly detail: string;
    };

/**
 * One termination pass over the NodeClaim `name`: reads it, its Node, the Node's pods and volume
 * attachments and its instance, decides (decideTermination) and applies the steps. Every step is
 * idempotent, so passes may repeat and overlap. Returns `continue` with the time to wait when the
 * drain, the volumes or the instance are not done yet.
 * @throws ClusterApiError, CloudApiError, InstanceNotOwnedError; the next pass resumes.
 */
export async function terminateNodeClaim(
  ports: TerminationPorts,
  name: string,
  now: Date,
): Promise<TerminationResult> {
  const { cluster, cloud } = ports;
  const claim = await cluster.nodeClaim(name);
  if (claim === undefined) return { kind: 'skipped', nodeClaim: name, why: 'nodeClaim is gone' };
  const node = claim.status.nodeName === undefined ? undefined : await cluster.node(claim.status.nodeName);
  const [podsRead, volumeAttachments] =
    node === undefined
      ? [{ items: [], problems: [] }, []]
      : await Promise.all([cluster.podsOnNode(node.name), cluster.volumeAttachments(node.name)]);
  const pods = podsRead.items;
  // A pod that cannot be read might still be running there: the drain waits (fails closed) until
  // it can be read or the terminationGracePeriod runs out.
  const deadlineMs = terminationDeadlineMs(claim);
  if (
    podsRead.problems.length > 0 &&
    claim.deleting &&
    (deadlineMs === undefined || now.getTime() < deadlineMs)
  ) {
    return {
      kind: 'continue',
      nodeClaim: name,
      afterSeconds: 5,
      waitingOn: 'drain',
      detail: `${podsRead.problems.length} pods on node ${node?.name ?? ''} cannot be read: ${podsRead.problems[0]?.message ?? ''}`,
    };
  }
  const instanceId = parseInstanceId(claim.status.providerId) ?? parseInstanceId(node?.providerId);
  // Without an instance id on the claim or Node, a launch may still have happened (a crash between
  // the launch and the status write): its instance is found by the claim's tag.
  const instance =
    instanceId === undefined ? await cloud.findByNodeClaim(claim.name) : await cloud.get(instanceId);
  const lookupUntilMs =
    instanceId === undefined && instance === undefined
      ? instanceLookupUntilMs(claim, INSTANCE_LOOKUP_WINDOW_MS)
      : undefined;
  const decision = decideTermination({
    claim,
    ...(node === undefined ? {} : { node }),
    pods,
    volumeAttachments,
    ...(instance === undefined ? {} : { instanceState: instance.state }),
    ...(instanceId === undefined && instance !== undefined ? { taggedInstanceId: instance.instanceId } : {}),
    ...(lookupUntilMs === undefined ? {} : { instanceLookupUntilMs: lookupUntilMs }),
    nowMs: now.getTime(),
  });
  for (const step of decision.steps) {
    try {
      await applyStep(ports, { claim, node, nowMs: now.getTime() }, decision, step);
    } catch (error) {
      // An overlapping pass finished first: the NodeClaim or Node is gone, so nothing is left to do.
      if (isNotFound(error)) return { kind: 'skipped', nodeClaim: name, why: 'removed by another pass' };
      throw error;
    }
  }

  const outcome = decision.outcome;
  switch (outcome.kind) {
    case 'done':
      return { kind: 'done', nodeClaim: name };
    case 'skip':
      return { kind: 'skipped', nodeClaim: name, why: outcome.why };
    case 'wait':
      if (outcome.on === 'volumes' && node !== undefined) {
        await cluster.recordEvent(awaitingVolumeDetachment(node.name, outcome.detail));
      }
      return {
        kind: 'continue',
        nodeClaim: name,
        afterSeconds: outcome.afterSeconds,
        waitingOn: outcome.on,
        detail: outcome.detail,
      };
    default:
      return assertNever(outcome);
  }
}

/** What a termination pass read: the NodeClaim, its Node, and when. */
interface PassRead {
  readonly claim: ClusterNodeClaim;
  readonly node: NodeInfo | undefined;
  readonly nowMs: number;
}

async function applyStep(
  ports: TerminationPorts,
  { claim, node, nowMs }: PassRead,
  decision: TerminationDecision,
  step: TerminationStep,
): Promise<void> {
  const { cluster, cloud } = ports;
  const fields = { reason: terminationCause(claim), ...nodeClaimFields(claim) };
  switch (step.kind) {
    case 'annotateDeadline':
      await cluster.patchNodeClaimMetadata(claim.name, {
        annotations: { [Annotation.terminationTimestamp]: step.timestamp },
      });
      for (const e of terminationGracePeriodExpiring(claim, step.timestamp)) await cluster.recordEvent(e);
      writeDecision(ports, { kind: 'deadline', ...fields, deadline: step.timestamp });
      return;
    case 'deleteNode':
      await cluster.deleteNode(step.nodeName);
      writeDecision(ports, { kind: 'deleteNode', ...fields, node: step.nodeName });
      return;
    case 'taintNode':
      await cluster.patchNode(step.nodeName, {
        addTaints: [DISRUPTED_TAINT],
        labels: { [WellKnownLabel.excludeFromLoadBalancers]: 'karpenter' },
      });
      writeDecision(ports, {
        kind: 'taint',
        ...fields,
        node: step.nodeName,
        taint: `${DISRUPTED_TAINT.key}:${DISRUPTED_TAINT.effect}`,
      });
      return;
    case 'forceDelete': {
      await Promise.all(step.pods.map((f) => cluster.deletePod(f.pod, f.gracePeriodSeconds)));
      const deadline = new Date(decision.deadlineMs ?? 0).toISOString();
      for (const f of step.pods) await cluster.recordEvent(disrupted(f, deadline));
      writeDecision(ports, {
        kind: 'drain',
        action: 'forceDelete',
        ...fields,
        ...(decision.deadlineMs === undefined
          ? {}
          : { deadline: new Date(decision.deadlineMs).toISOString() }),
        pods: step.pods.map((f) => f.pod),
      });
      return;
    }
    case 'evict': {
      const outcomes = await Promise.all(
        step.pods.map(
          async (pod): Promise<[typeof pod, EvictionOutcome]> => [pod, await cluster.evictPod(pod)],
        ),
      );
      const count = (o: EvictionOutcome) => outcomes.filter(([, x]) => x === o).length;
      for (const [pod, outcome] of outcomes) {
        if (outcome !== 'evicted') continue;
        await cluster.recordEvent(evicted(pod));
      }
      const blocked = outcomes.filter(([, x]) => x === 'blocked').map(([p]) => `${p.namespace}/${p.name}`);
      if (blocked.length > 0 && claim.status.nodeName !== undefined) {
        await cluster.recordEvent(failedDraining(claim.status.nodeName, blocked));
      }
      writeDecision(ports, {
        kind: 'drain',
        action: 'evict',
        ...fields,
        tier: step.tier,
        evicted: count('evicted'),
        blocked: count('blocked'),
        gone: count('gone'),
        blockedPods: blocked.slice(0, 10),
        ...(decision.remainingByTier === undefined ? {} : { remaining: decision.remainingByTier }),
      });
      return;
    }
    case 'condition':
      await cluster.patchNodeClaimStatus(claim.name, { conditions: [step.update] });
      return;
    case 'terminateInstance':
      try {
        await cloud.delete(step.instanceId);
      } catch (error) {
        // Told on the NodeClaim, then thrown: the next pass tries again.
        await cluster.recordEvent(failedTermination(claim, step.instanceId, error));
        throw error;
      }
      writeDecision(ports, { kind: 'terminate', ...fields, instanceId: step.instanceId });
      return;
    case 'removeNodeFinalizer':
      await cluster.patchNode(step.nodeName, { removeFinalizers: [Finalizer.termination] });
      writeDecision(ports, {
        kind: 'finalizeNode',
        ...fields,
        node: step.nodeName,
        ...(node === undefined ? {} : nodeLifetime(node, nowMs)),
        ...(drained(claim, decision) ? { drained: true } : {}),
      });
      return;
    case 'removeClaimFinalizer':
      await cluster.patchNodeClaimMetadata(claim.name, { removeFinalizers: [Finalizer.termination] });
      writeDecision(ports, {
        kind: 'finalizeNodeClaim',
        ...fields,
        ...launchedWhere(claim),
        ...claimTermination(claim, nowMs),
      });
      return;
    default:
      assertNever(step);
  }
}

/** The capacity type and zone a NodeClaim's labels say it launched with (none before it launched). */
function launchedWhere(claim: ClusterNodeClaim): { capacityType?: string; zone?: string } {
  const capacityType = claim.labels[Label.capacityType];
  const zone = claim.labels[Label.zone];
  return {
    ...(capacityType === undefined ? {} : { capacityType }),
    ...(zone === undefined ? {} : { zone }),
  };
}

const secondsSince = (fromMs: number, nowMs: number) => Math.max(0, Math.round((nowMs - fromMs) / 100) / 10);

/** A Node's zone, and how long since its deletion and its creation (for Karpenter's node metrics). */
export function nodeLifetime(
  node: NodeInfo,
  nowMs: number,
): { zone?: string; terminationSeconds?: number; lifetimeSeconds?: number } {
  const zone = node.labels[Label.zone];
  return {
    ...(zone === undefined ? {} : { zone }),
    ...(node.deletedAtMs === undefined ? {} : { terminationSeconds: secondsSince(node.deletedAtMs, nowMs) }),
    ...(node.createdAtMs === undefined ? {} : { lifetimeSeconds: secondsSince(node.createdAtMs, nowMs) }),
  };
}

/** How long since a NodeClaim's deletion and since its InstanceTerminating condition, when known. */
function claimTermination(
  claim: ClusterNodeClaim,
  nowMs: number,
): { terminationSeconds?: number; instanceTerminationSeconds?: number } {
  const terminating = claim.status.conditions.find(
    (c) => c.type === NodeClaimConditionType.instanceTerminating && c.status === 'True',
  );
  const sinceMs = terminating === undefined ? Number.NaN : Date.parse(terminating.lastTransitionTime);
  return {
    ...(claim.deletedAtMs === undefined
      ? {}
      : { terminationSeconds: secondsSince(claim.deletedAtMs, nowMs) }),
    ...(Number.isNaN(sinceMs) ? {} : { instanceTerminationSeconds: secondsSince(sinceMs, nowMs) }),
  };
}

/** The NodeClaim's drain finished: its Drained condition is True, as read or as this pass sets it. */
function drained(claim: ClusterNodeClaim, decision: TerminationDecision): boolean {
  const isDrained = (c: { type: string; status: string }) =>
    c.type === NodeClaimConditionType.drained && c.status === 'True';
  return (
    claim.status.conditions.some(isDrained) ||
    decision.steps.some((s) => s.kind === 'condition' && isDrained(s.update))
  );
}

/** Why a NodeClaim terminates: its `DisruptionReason` condition (e.g. `SpotInterruption`), else `deleted`. */
function terminationCause(claim: ClusterNodeClaim): string {
  const condition = claim.status.conditions.find(
    (c) => c.type === NodeClaimConditionType.disruptionReason && c.status === 'True',
  );
  return condition?.reason || 'deleted';
}
