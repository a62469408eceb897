import { doNotDisrupt } from '../../core/index.ts';
import type { Cluster, ClusterEvent, ClusterNodeClaim, EventSubject } from '../../ports/cluster.ts';
import { assumedPriceNote, commandAssumed } from './assumed-price.ts';
import { describeBalanced, isBalancedRejection } from './balanced.ts';
import type { DisruptionCandidate, DisruptionCommand } from './method.ts';

// The Events of voluntary disruption, on the objects Karpenter records them on, with its reasons,
// types and dedupe keys: the pass's commands (ConsolidationCandidate, ConsolidationApproved and
// ConsolidationRejected under `Balanced`, ConsolidationRejected at validation, DisruptionLaunching, DisruptionWaitingReadiness, DisruptionTerminating), what holds a node
// (DisruptionBlocked, Unconsolidatable) and what a pod's `karpenter.sh/do-not-disrupt` value means
// (InvalidDoNotDisruptAnnotation, DoNotDisruptUntil, DoNotDisruptGracePeriodElapsed). Pure but for
// recordAll.

/** Karpenter's windows: a node's Unconsolidatable Event, a NodePool's blocking budget. */
export const UNCONSOLIDATABLE_DEDUPE_SECONDS = 15 * 60;
export const NODEPOOL_BLOCKED_DEDUPE_SECONDS = 60;

/** Events recorded per call at most; the next pass records those left out. */
export const MAX_EVENTS_PER_CALL = 100;

type Normal = Omit<ClusterEvent, 'type' | 'subject'>;

/** A Node as an Event names it: by name, and by uid when the caller has it. */
export type NodeRef = string | { readonly name: string; readonly uid: string };

/** The NodeClaim and, once it has one, its Node: the two objects a node's Event goes on. */
function onNodeAndClaim(claim: ClusterNodeClaim, node: NodeRef | undefined, e: Normal): ClusterEvent[] {
  const claimSubject: EventSubject = { kind: 'NodeClaim', name: claim.name, uid: claim.uid };
  const nodeSubject: EventSubject | undefined =
    node === undefined
      ? undefined
      : typeof node === 'string'
        ? { kind: 'Node', name: node }
        : { kind: 'Node', name: node.name, uid: node.uid };
  return [
    ...(nodeSubject === undefined ? [] : [{ ...e, type: 'Normal' as const, subject: nodeSubject }]),
    { ...e, type: 'Normal', subject: claimSubject },
  ];
}

/** A replacement NodeClaim a command launched (Karpenter records it each time it looks). */
export function disruptionLaunching(replacement: string, reason: string): ClusterEvent {
  return {
    subject: { kind: 'NodeClaim', name: replacement },
    type: 'Normal',
    reason: 'DisruptionLaunching',
    message: `Launched to replace nodes disrupted for ${reason}`,
    dedupeValues: [reason],
  };
}

/** A replacement the command waits on before it deletes its candidates. */
export function disruptionWaitingReadiness(replacement: string): ClusterEvent {
  return {
    subject: { kind: 'NodeClaim', name: replacement },
    type: 'Normal',
    reason: 'DisruptionWaitingReadiness',
    message: 'Disruption waits for this replacement to be initialized before deleting the nodes it replaces',
    dedupeValues: [],
  };
}

/** A candidate deleted by its command: on its Node and its NodeClaim. */
export function disruptionTerminating(claim: ClusterNodeClaim, reason: string): ClusterEvent[] {
  return onNodeAndClaim(claim, claim.status.nodeName, {
    reason: 'DisruptionTerminating',
    message: `Disrupting for ${reason}: deleted, to be drained and terminated`,
    dedupeValues: [reason],
  });
}

/** A node voluntary disruption may not take, and why: on its Node and its NodeClaim. */
export function disruptionBlocked(claim: ClusterNodeClaim, node: NodeRef, why: string): ClusterEvent[] {
  return onNodeAndClaim(claim, node, {
    reason: 'DisruptionBlocked',
    message: `Cannot disrupt: ${why}`,
    dedupeValues: [],
  });
}

/** A NodePool whose budgets allow no disruption for `reason` now. */
export function nodePoolDisruptionBlocked(nodePool: string, reason: string, uid?: string): ClusterEvent {
  return {
    subject: { kind: 'NodePool', name: nodePool, ...(uid === undefined ? {} : { uid }) },
    type: 'Normal',
    reason: 'DisruptionBlocked',
    message: `No allowed disruptions for disruption reason ${reason} due to blocking budget`,
    dedupeValues: [reason],
    dedupeSeconds: NODEPOOL_BLOCKED_DEDUPE_SECONDS,
  };
}

/**
 * Why consolidation keeps a node: on its Node and its NodeClaim. Karpenter keys it by the object
 * alone and tells it every pass; Flotilla tells it only when the reason changes
 * (unconsolidatable.ts), so the reason is part of the key and every change lands.
 */
export function unconsolidatable(claim: ClusterNodeClaim, node: NodeRef, why: string): ClusterEvent[] {
  return onNodeAndClaim(claim, node, {
    reason: 'Unconsolidatable',
    message: why,
    dedupeValues: [why],
    dedupeSeconds: UNCONSOLIDATABLE_DEDUPE_SECONDS,
  });
}

/** What a consolidation command does, as its Events name it: `delete` or `replace with N`. */
export function commandSummary(command: DisruptionCommand): string {
  const n = command.replacements.length;
  return n === 0 ? 'delete' : `replace with ${n} cheaper NodeClaim${n === 1 ? '' : 's'}`;
}

/** The $/hour a command saves: its candidates' prices less its replacements' cheapest (unknown: 0). */
export function commandSavingsPerHour(command: DisruptionCommand): number {
  const before = command.candidates.reduce((s, c) => s + (c.pricePerHour ?? 0), 0);
  const after = command.replacements.reduce((s, p) => s + (p.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
  return Math.round((before - after) * 100) / 100;
}

/** The $/hour a command saves, in words: `$0.05/hour`, and whether it rests on an assumed price. */
function savingsText(command: DisruptionCommand): string {
  return `$${commandSavingsPerHour(command).toFixed(2)}/hour${assumedPriceNote(commandAssumed(command))}`;
}

/** A consolidation command chosen for its candidates, before its validation. */
export function consolidationCandidate(command: DisruptionCommand): ClusterEvent[] {
  const summary = commandSummary(command);
  const savings = savingsText(command);
  return command.candidates.flatMap((c) =>
    onNodeAndClaim(c.nodeClaim, c.node, {
      reason: 'ConsolidationCandidate',
      message: `Consolidation chose this node: ${summary}, saving ${savings}`,
      dedupeValues: [summary],
    }),
  );
}

/**
 * The `Balanced` NodePools that approved a consolidation command, with the score: on the Node and
 * NodeClaim of a single candidate, on each NodePool for a move of several (the score is the
 * move's, not one node's), as Karpenter records them. None for a command no Balanced NodePool scored.
 */
export function consolidationApproved(command: DisruptionCommand): ClusterEvent[] {
  const verdicts = (command.balanced ?? []).filter((v) => v.approved);
  const summary = commandSummary(command);
  // The score's savings rest on the command's prices.
  const note = assumedPriceNote(commandAssumed(command));
  const [only, ...others] = command.candidates;
  if (only !== undefined && others.length === 0) {
    return verdicts.flatMap((v) =>
      onNodeAndClaim(only.nodeClaim, only.node, {
        reason: 'ConsolidationApproved',
        message: `Consolidation may ${summary}: ${describeBalanced(v)}${note}`,
        dedupeValues: [summary],
      }),
    );
  }
  const names = command.candidates.map((c) => c.nodeClaim.name).sort();
  return verdicts.map((v) => {
    const uid = command.candidates.find((c) => c.nodePool.pool.name === v.nodePool)?.nodePool.uid;
    return {
      subject: { kind: 'NodePool', name: v.nodePool, ...(uid === undefined ? {} : { uid }) },
      type: 'Normal',
      reason: 'ConsolidationApproved',
      message: `Consolidation may ${summary} for ${names.length} nodes (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''}): ${describeBalanced(v)}${note}`,
      dedupeValues: [summary, ...names],
    };
  });
}

/** The Events of a consolidation command chosen, before its validation: its candidates, its score. */
export function consolidationChosen(command: DisruptionCommand): ClusterEvent[] {
  return [...consolidationCandidate(command), ...consolidationApproved(command)];
}

/**
 * A node a `Balanced` NodePool keeps because the move's score is too low (the reason a method
 * found, `why`, is balancedRejection's): ConsolidationRejected with the score on its Node and
 * NodeClaim, told with its Unconsolidatable reason, so once per reason. None for another reason.
 */
export function balancedRejected(claim: ClusterNodeClaim, node: NodeRef, why: string): ClusterEvent[] {
  if (!isBalancedRejection(why)) return [];
  return onNodeAndClaim(claim, node, {
    reason: 'ConsolidationRejected',
    message: `Consolidation keeps this node: ${why}`,
    dedupeValues: ['Balanced', why],
    dedupeSeconds: UNCONSOLIDATABLE_DEDUPE_SECONDS,
  });
}

/** A consolidation command its validation turned down, and why. */
export function consolidationRejected(command: DisruptionCommand, why: string): ClusterEvent[] {
  const summary = commandSummary(command);
  const savings = savingsText(command);
  return command.candidates.flatMap((c) =>
    onNodeAndClaim(c.nodeClaim, c.node, {
      reason: 'ConsolidationRejected',
      message: `Consolidation dropped this node at validation (${summary}, ${savings}): ${why}`,
      dedupeValues: [summary, why],
    }),
  );
}

/**
 * What each pod's `karpenter.sh/do-not-disrupt` value means on the nodes a pass looked at, as
 * Karpenter tells it on the pod: a value neither "true" nor a positive duration is ignored
 * (InvalidDoNotDisruptAnnotation, Warning); a duration still running says until when
 * (DoNotDisruptUntil); one run out says the pod may be disrupted (DoNotDisruptGracePeriodElapsed).
 * "true" and pods without the annotation say nothing.
 */
export function doNotDisruptEvents(candidates: readonly Pick<DisruptionCandidate, 'node'>[], nowMs: number) {
  const out: ClusterEvent[] = [];
  for (const { node } of candidates) {
    for (const pod of node.pods) {
      const value = pod.disruption?.doNotDisrupt;
      if (value === undefined || value === 'true') continue;
      const subject = { kind: 'Pod' as const, namespace: pod.namespace, name: pod.name, uid: pod.uid };
      const verdict = doNotDisrupt(pod, nowMs);
      if (verdict.problem !== undefined) {
        out.push({
          subject,
          type: 'Warning',
          reason: 'InvalidDoNotDisruptAnnotation',
          message: verdict.problem,
          dedupeValues: [pod.uid, value],
        });
        continue;
      }
      // Not started: protected from a start not known yet; Karpenter says nothing either.
      if (pod.disruption?.startedAtMs === undefined) continue;
      if (verdict.untilMs !== undefined) {
        const until = new Date(verdict.untilMs).toISOString();
        out.push({
          subject,
          type: 'Normal',
          reason: 'DoNotDisruptUntil',
          message: `karpenter.sh/do-not-disrupt "${value}" protects this pod from voluntary disruption until ${until}`,
          dedupeValues: [pod.uid, until],
        });
      } else {
        out.push({
          subject,
          type: 'Normal',
          reason: 'DoNotDisruptGracePeriodElapsed',
          message: `karpenter.sh/do-not-disrupt "${value}" has run out: this pod may be disrupted`,
          dedupeValues: [pod.uid],
        });
      }
    }
  }
  return out;
}

/** Records Events one after the other, at most MAX_EVENTS_PER_CALL (the adapter dedupes repeats). */
export async function recordAll(cluster: Pick<Cluster, 'recordEvent'>, events: readonly ClusterEvent[]) {
  for (const e of events.slice(0, MAX_EVENTS_PER_CALL)) await cluster.recordEvent(e);
}
