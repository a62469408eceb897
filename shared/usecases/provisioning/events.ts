import { NO_COMPATIBLE_INSTANCE_TYPES, type UnschedulablePod } from '../../core/index.ts';
import type { ClusterEvent } from '../../ports/cluster.ts';
import { type DecisionOutput, type PodName, writeDecision } from '../decisions/decision.ts';
import { type SkippedNodePool, unschedulableMessage } from '../state/eligibility.ts';
import type { ClaimOutcome, ProvisionPorts } from './types.ts';

// What provisioning tells pods: why nothing can host them, and which NodeClaim is for them; and
// NodePools whose requirements leave no instance type. Keyed as Karpenter keys them: a pod's
// FailedScheduling by the pod (a 5-minute window), its Nominated by the pod, a NodePool's
// NoCompatibleInstanceTypes by the NodePool (a 1-minute window).

/** Karpenter's windows for a pod's FailedScheduling and a NodePool's NoCompatibleInstanceTypes. */
export const FAILED_SCHEDULING_DEDUPE_SECONDS = 5 * 60;
export const NO_COMPATIBLE_DEDUPE_SECONDS = 60;

type EventPorts = Pick<ProvisionPorts, 'cluster'>;

/**
 * One Event per pod nothing can host, with the solver's reason per NodePool, one unschedulable
 * decision per distinct reason (most pods first), and a Warning on each NodePool whose
 * requirements leave no instance type with an available offering.
 */
export async function reportUnschedulable(
  ports: EventPorts,
  out: DecisionOutput,
  unschedulable: readonly UnschedulablePod[],
  selection: { readonly eligible: number; readonly skipped: readonly SkippedNodePool[] },
): Promise<void> {
  const byReason = new Map<string, PodName[]>();
  for (const u of unschedulable) {
    const reason = unschedulableMessage(u, selection);
    const pods = byReason.get(reason);
    if (pods === undefined) byReason.set(reason, [u.pod]);
    else pods.push(u.pod);
  }
  for (const [reason, pods] of [...byReason].sort(([, a], [, b]) => b.length - a.length)) {
    writeDecision(out, { kind: 'unschedulable', reason, pods });
  }
  await recordEvents(
    ports,
    unschedulable.map((u) => ({
      subject: { kind: 'Pod', namespace: u.pod.namespace, name: u.pod.name, uid: u.pod.uid },
      type: 'Warning',
      reason: 'FailedScheduling',
      message: `Failed to schedule pod: ${unschedulableMessage(u, selection)}`,
      dedupeValues: [u.pod.uid],
      dedupeSeconds: FAILED_SCHEDULING_DEDUPE_SECONDS,
    })),
  );
  await recordEvents(ports, noCompatibleInstanceTypes(unschedulable));
}

/** Karpenter's NoCompatibleInstanceTypes: NodePools the solver found no instance type for. Pure. */
export function noCompatibleInstanceTypes(unschedulable: readonly UnschedulablePod[]): ClusterEvent[] {
  const pools = new Map<string, string>();
  for (const u of unschedulable) {
    for (const r of u.reasons) {
      if (r.nodePool !== '' && r.reason.startsWith(NO_COMPATIBLE_INSTANCE_TYPES))
        pools.set(r.nodePool, r.reason);
    }
  }
  return [...pools].map(([nodePool, reason]) => ({
    subject: { kind: 'NodePool', name: nodePool },
    type: 'Warning',
    reason: 'NoCompatibleInstanceTypes',
    message: `NodePool requirements leave no instance type to launch: ${reason}`,
    dedupeValues: [],
    dedupeSeconds: NO_COMPATIBLE_DEDUPE_SECONDS,
  }));
}

/** Pods nominated per run at most: one Event each, as Karpenter records them. */
const MAX_NOMINATED_EVENTS = 200;

/** Tells each pod a launched NodeClaim is for where it should land (Karpenter's `Nominated`). */
export async function reportNominated(ports: EventPorts, claims: readonly ClaimOutcome[]): Promise<void> {
  const events: ClusterEvent[] = [];
  for (const claim of claims) {
    if (claim.kind !== 'launched') continue;
    for (const pod of claim.pods) {
      events.push({
        subject: { kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid },
        type: 'Normal',
        reason: 'Nominated',
        message: `Pod should schedule on: nodeclaim/${claim.nodeClaim}`,
        dedupeValues: [pod.uid],
      });
    }
  }
  await recordEvents(ports, events.slice(0, MAX_NOMINATED_EVENTS));
}

/**
 * Karpenter AWS's `SpotServiceLinkedRoleCreationFailure` on a NodeClaim whose spot launch EC2
 * refused for want of the EC2 Spot service-linked role. Keyed by the NodeClaim alone, as Karpenter
 * keys it (by its uid), so replays of the same launch record it once. Pure.
 */
export function spotServiceLinkedRoleEvent(nodeClaim: string): ClusterEvent {
  return {
    subject: { kind: 'NodeClaim', name: nodeClaim },
    type: 'Warning',
    reason: 'SpotServiceLinkedRoleCreationFailure',
    message:
      'Attempted to launch a spot instance but failed with "AuthFailure.ServiceLinkedRoleCreationNotPermitted": the account has no EC2 Spot service-linked role (create it once: aws iam create-service-linked-role --aws-service-name spot.amazonaws.com); spot offerings are backed off',
    dedupeValues: [],
  };
}

/** Bounded fan-out of Events (the adapter limits concurrent API calls as well). */
async function recordEvents(ports: EventPorts, events: readonly ClusterEvent[]): Promise<void> {
  const queue = [...events];
  const worker = async () => {
    for (let e = queue.shift(); e !== undefined; e = queue.shift()) await ports.cluster.recordEvent(e);
  };
  await Promise.all(Array.from({ length: Math.min(4, queue.length) }, worker));
}
