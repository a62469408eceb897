import {
  Annotation,
  DISRUPTED_TAINT,
  doNotDisruptValue,
  Finalizer,
  NodeClaimConditionType,
  parseGoDurationMs,
  parseInstanceId,
  type Taint,
  tolerates,
  WellKnownLabel,
} from '../../core/index.ts';
import type { InstanceState } from '../../ports/cloud.ts';
import type {
  ClusterNode,
  ClusterNodeClaim,
  Condition,
  ConditionUpdate,
  DrainPod,
  VolumeAttachment,
} from '../../ports/cluster.ts';

// Node termination (Karpenter's node termination controller and NodeClaim finalization) as a pure
// function from what one pass observed of a deleting NodeClaim to the steps that move it on and
// what to wait for. termination.ts applies the steps; nothing here reads a clock or does I/O.

/** A pod terminating longer than this past its deletionTimestamp is stuck and no longer waited on. */
export const STUCK_POD_MS = 60_000;
const CRITICAL_PRIORITY_CLASSES: ReadonlySet<string> = new Set([
  'system-cluster-critical',
  'system-node-critical',
]);

/** Karpenter's eviction tiers, drained in this order; a tier starts only when the one before is empty. */
export type DrainTier = 'nonCritical' | 'nonCriticalDaemonSet' | 'critical' | 'criticalDaemonSet';
export const DRAIN_TIERS: readonly DrainTier[] = [
  'nonCritical',
  'nonCriticalDaemonSet',
  'critical',
  'criticalDaemonSet',
];

export function drainTier(pod: Pick<DrainPod, 'priorityClassName' | 'daemonSet'>): DrainTier {
  const critical =
    pod.priorityClassName !== undefined && CRITICAL_PRIORITY_CLASSES.has(pod.priorityClassName);
  if (critical) return pod.daemonSet ? 'criticalDaemonSet' : 'critical';
  return pod.daemonSet ? 'nonCriticalDaemonSet' : 'nonCritical';
}

/**
 * Whether the drain waits for the pod: not tolerating `karpenter.sh/disrupted:NoSchedule`, not a
 * mirror pod, not finished, and not stuck terminating for more than a minute.
 */
export function isDrainable(pod: DrainPod, nowMs: number): boolean {
  if (pod.mirror) return false;
  if (pod.phase === 'Succeeded' || pod.phase === 'Failed') return false;
  if (pod.deletedAtMs !== undefined && nowMs - pod.deletedAtMs > STUCK_POD_MS) return false;
  return !pod.tolerations.some((t) => tolerates(t, DISRUPTED_TAINT));
}

/** The termination deadline in epoch ms: the annotation when set, else deletion time + TGP. */
export function terminationDeadlineMs(claim: ClusterNodeClaim): number | undefined {
  const annotated = claim.annotations[Annotation.terminationTimestamp];
  if (annotated !== undefined) {
    const ms = Date.parse(annotated);
    if (!Number.isNaN(ms)) return ms;
  }
  if (claim.deletedAtMs === undefined || claim.terminationGracePeriod === undefined) return undefined;
  const tgpMs = parseGoDurationMs(claim.terminationGracePeriod);
  return tgpMs === undefined ? undefined : claim.deletedAtMs + tgpMs;
}

/** A pod to force-delete with the grace period it gets. */
export interface ForcedDelete {
  readonly pod: DrainPod;
  readonly gracePeriodSeconds: number;
}

/** One thing to do, applied in order. */
export type TerminationStep =
  | { readonly kind: 'annotateDeadline'; readonly timestamp: string }
  | { readonly kind: 'deleteNode'; readonly nodeName: string }
  | { readonly kind: 'taintNode'; readonly nodeName: string }
  | { readonly kind: 'forceDelete'; readonly pods: readonly ForcedDelete[] }
  | { readonly kind: 'evict'; readonly tier: DrainTier; readonly pods: readonly DrainPod[] }
  | { readonly kind: 'condition'; readonly update: ConditionUpdate }
  | { readonly kind: 'terminateInstance'; readonly instanceId: string }
  | { readonly kind: 'removeNodeFinalizer'; readonly nodeName: string }
  | { readonly kind: 'removeClaimFinalizer' };

/** What the pass ends with: finished, nothing to do, or a wait before the next pass. */
export type TerminationOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'skip'; readonly why: string }
  | {
      readonly kind: 'wait';
      readonly on: 'drain' | 'volumes' | 'instance';
      readonly afterSeconds: number;
      readonly detail: string;
    };

export interface TerminationDecision {
  readonly steps: readonly TerminationStep[];
  readonly outcome: TerminationOutcome;
  readonly deadlineMs?: number;
  /** Drainable pods still on the node, by tier (before this pass's steps). */
  readonly remainingByTier?: Readonly<Record<DrainTier, number>>;
}

/** What one termination pass saw of a NodeClaim. */
export interface TerminationInput {
  readonly claim: ClusterNodeClaim;
  /** The claim's Node (by `status.nodeName`), when it exists. */
  readonly node?: ClusterNode;
  /** Pods bound to the Node (empty without one). */
  readonly pods: readonly DrainPod[];
  readonly volumeAttachments: readonly VolumeAttachment[];
  /** The instance's state, or undefined when EC2 no longer knows it (or none was launched). */
  readonly instanceState?: InstanceState;
  /**
   * The instance found by its `karpenter.sh/nodeclaim` tag when neither the claim nor its Node
   * names one (a launch that crashed before writing the claim's status).
   */
  readonly taggedInstanceId?: string;
  /**
   * When no instance was found but a launch was recorded on the claim: until when (epoch ms) EC2
   * may still not list it. The finalizer stays until then.
   */
  readonly instanceLookupUntilMs?: number;
  readonly nowMs: number;
}

const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;

function changed(conditions: readonly Condition[], update: ConditionUpdate): ConditionUpdate | undefined {
  const current = conditions.find((c) => c.type === update.type);
  return current?.status === update.status &&
    current.reason === update.reason &&
    current.message === update.message
    ? undefined
    : update;
}

/**
 * The next steps of terminating one deleting NodeClaim, in Karpenter's order: record the
 * deadline, delete and taint the Node, drain it tier by tier through the Eviction API
 * (force-deleting pods whose grace period would outlast the terminationGracePeriod), wait for
 * volume attachments (not past the deadline), terminate the instance, then remove the Node's and
 * the NodeClaim's finalizers. Repeating a pass over an unchanged cluster repeats only idempotent
 * steps.
 */
export function decideTermination(input: TerminationInput): TerminationDecision {
  const { claim, node, nowMs } = input;
  if (!claim.deleting) return { steps: [], outcome: { kind: 'skip', why: 'nodeClaim is not being deleted' } };
  if (!claim.finalizers.includes(Finalizer.termination)) {
    return { steps: [], outcome: { kind: 'skip', why: 'nodeClaim has no termination finalizer' } };
  }
  const steps: TerminationStep[] = [];
  const conditions = claim.status.conditions;
  const setCondition = (update: ConditionUpdate) => {
    const c = changed(conditions, update);
    if (c !== undefined) steps.push({ kind: 'condition', update: c });
  };

  const deadlineMs = terminationDeadlineMs(claim);
  const withDeadline = deadlineMs === undefined ? {} : { deadlineMs };
  if (deadlineMs !== undefined && claim.annotations[Annotation.terminationTimestamp] === undefined) {
    steps.push({
      kind: 'annotateDeadline',
      timestamp: new Date(deadlineMs).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
  }
  const pastDeadline = deadlineMs !== undefined && nowMs >= deadlineMs;
  const instanceId =
    parseInstanceId(claim.status.providerId) ?? parseInstanceId(node?.providerId) ?? input.taggedInstanceId;
  const instanceGone = input.instanceState === undefined || input.instanceState === 'terminated';

  let remainingByTier: Record<DrainTier, number> | undefined;
  // A NotReady node whose instance is gone has nothing left to drain (Karpenter lets it go at once).
  const abandoned = node !== undefined && !node.ready && instanceGone;
  // The Node goes with its NodeClaim either way (its finalizer keeps it until the drain is done).
  if (node !== undefined && !node.deleting) steps.push({ kind: 'deleteNode', nodeName: node.name });
  if (node !== undefined && !abandoned) {
    const tainted = (node.taints ?? []).some((t) => sameTaint(t, DISRUPTED_TAINT));
    if (!tainted || node.labels[WellKnownLabel.excludeFromLoadBalancers] === undefined) {
      steps.push({ kind: 'taintNode', nodeName: node.name });
    }

    const drainable = input.pods.filter((p) => isDrainable(p, nowMs));
    remainingByTier = { nonCritical: 0, nonCriticalDaemonSet: 0, critical: 0, criticalDaemonSet: 0 };
    for (const p of drainable) remainingByTier[drainTier(p)] += 1;

    // Past the deadline a pod already being deleted no longer holds the drain up.
    const waitingOn = drainable.filter((p) => !(pastDeadline && p.deletedAtMs !== undefined));
    if (waitingOn.length > 0) {
      const forced: ForcedDelete[] = [];
      if (deadlineMs !== undefined) {
        for (const pod of waitingOn) {
          if (pod.deletedAtMs !== undefined && !pastDeadline) continue;
          const remainingSeconds = Math.floor((deadlineMs - nowMs) / 1000);
          if (pastDeadline || remainingSeconds <= pod.terminationGracePeriodSeconds) {
            forced.push({
              pod,
              gracePeriodSeconds: Math.max(1, Math.min(pod.terminationGracePeriodSeconds, remainingSeconds)),
            });
          }
        }
      }
      if (forced.length > 0) steps.push({ kind: 'forceDelete', pods: forced });
      const forcedUids = new Set(forced.map((f) => f.pod.uid));
      const tier = DRAIN_TIERS.find((t) => waitingOn.some((p) => drainTier(p) === t));
      const evict = waitingOn.filter(
        (p) =>
          drainTier(p) === tier &&
          p.deletedAtMs === undefined &&
          !forcedUids.has(p.uid) &&
          // As Karpenter: do-not-disrupt pods are waited on, interruption or not, until the
          // terminationGracePeriod force-deletes them.
          !doNotDisruptValue(p.annotations[Annotation.doNotDisrupt], p.startedAtMs, nowMs).protected,
      );
      if (tier !== undefined && evict.length > 0) steps.push({ kind: 'evict', tier, pods: evict });
      const detail = `draining ${waitingOn.length} pods`;
      setCondition({
        type: NodeClaimConditionType.drained,
        status: 'Unknown',
        reason: 'Draining',
        message: detail,
      });
      return {
        steps,
        outcome: { kind: 'wait', on: 'drain', afterSeconds: 1, detail },
        ...withDeadline,
        remainingByTier,
      };
    }
    setCondition({
      type: NodeClaimConditionType.drained,
      status: 'True',
      reason: NodeClaimConditionType.drained,
      message: '',
    });

    // Attachments of pods the drain does not wait for (e.g. DaemonSet-tolerating ones) do not count.
    const kept = new Set(input.pods.filter((p) => !isDrainable(p, nowMs)).flatMap((p) => p.volumeNames));
    const attached = input.volumeAttachments.filter(
      (a) => a.persistentVolumeName === undefined || !kept.has(a.persistentVolumeName),
    );
    if (attached.length > 0 && !pastDeadline) {
      const detail = `awaiting deletion of ${attached.length} VolumeAttachments bound to node`;
      setCondition({
        type: NodeClaimConditionType.volumesDetached,
        status: 'Unknown',
        reason: 'AwaitingVolumeDetachment',
        message: detail,
      });
      return {
        steps,
        outcome: { kind: 'wait', on: 'volumes', afterSeconds: 1, detail },
        ...withDeadline,
        remainingByTier,
      };
    }
    setCondition(
      attached.length > 0
        ? {
            type: NodeClaimConditionType.volumesDetached,
            status: 'False',
            reason: 'TerminationGracePeriodElapsed',
            message: 'TerminationGracePeriodElapsed',
          }
        : {
            type: NodeClaimConditionType.volumesDetached,
            status: 'True',
            reason: NodeClaimConditionType.volumesDetached,
            message: '',
          },
    );
  }

  if (instanceId !== undefined && !instanceGone) {
    if (input.instanceState !== 'shutting-down') steps.push({ kind: 'terminateInstance', instanceId });
    setCondition({
      type: NodeClaimConditionType.instanceTerminating,
      status: 'True',
      reason: NodeClaimConditionType.instanceTerminating,
      message: '',
    });
    return {
      steps,
      outcome: {
        kind: 'wait',
        on: 'instance',
        afterSeconds: 5,
        detail: `instance ${instanceId} is terminating`,
      },
      ...withDeadline,
      ...(remainingByTier === undefined ? {} : { remainingByTier }),
    };
  }

  // A launch was sent and EC2 may not list its instance yet: look again until the window closes.
  if (
    instanceId === undefined &&
    input.instanceLookupUntilMs !== undefined &&
    nowMs < input.instanceLookupUntilMs
  ) {
    return {
      steps,
      outcome: {
        kind: 'wait',
        on: 'instance',
        afterSeconds: 5,
        detail: `looking for the instance launched for the NodeClaim until ${new Date(input.instanceLookupUntilMs).toISOString()}`,
      },
      ...withDeadline,
      ...(remainingByTier === undefined ? {} : { remainingByTier }),
    };
  }
  if (node?.finalizers.includes(Finalizer.termination))
    steps.push({ kind: 'removeNodeFinalizer', nodeName: node.name });
  steps.push({ kind: 'removeClaimFinalizer' });
  return {
    steps,
    outcome: { kind: 'done' },
    ...withDeadline,
    ...(remainingByTier === undefined ? {} : { remainingByTier }),
  };
}
