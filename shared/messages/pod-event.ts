import { z } from 'zod';
import type { Decoded } from './decoded.ts';
import {
  type NodeDeletion,
  nodeDeletionSchema,
  nodeDeletionVersion,
  type StandaloneNodeClaimMessage,
  standaloneNodeClaimSchema,
  standaloneNodeClaimVersion,
} from './node-deletion.ts';

/** Version tag of the pod events the shim sends to the pod-event queue. */
export const podEventVersion = 'flotilla.pod-event/v1';

/**
 * What the in-cluster shim sends when a pod becomes unschedulable: enough to trigger and log a
 * provisioning run, never the pod spec (the provisioner reads pods from the API server itself).
 */
export const podEventSchema = z.object({
  version: z.literal(podEventVersion),
  kind: z.literal('PodUnschedulable'),
  cluster: z.string().min(1),
  namespace: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
  /** When the shim saw the pod become unschedulable (RFC 3339). */
  observedAt: z.iso.datetime(),
});

export type PodEvent = z.infer<typeof podEventSchema>;

/** Parses one queue message body; a body of another shape or version is a typed failure, not a throw. */
export function parsePodEvent(body: string): { ok: true; event: PodEvent } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `not JSON: ${(error as Error).message}` };
  }
  const parsed = podEventSchema.safeParse(json);
  if (parsed.success) return { ok: true, event: parsed.data };
  return { ok: false, problem: z.prettifyError(parsed.error) };
}

/** Version tag of the provisioner's own follow-up messages on the pod-event queue. */
export const followUpVersion = 'flotilla.follow-up/v1';

/**
 * What the provisioner sends itself, delayed, while NodeClaims it launched have not initialized:
 * the next invocation registers their Nodes (lifting `karpenter.sh/unregistered`) without waiting
 * for the pending-pods schedule. Names are for the log; the invocation reads the cluster itself.
 */
export const followUpSchema = z.object({
  version: z.literal(followUpVersion),
  kind: z.literal('LifecycleFollowUp'),
  cluster: z.string().min(1),
  nodeClaims: z.array(z.string().min(1)).max(50),
  requestedAt: z.iso.datetime(),
});

export type FollowUp = z.infer<typeof followUpSchema>;

/** Version tag of the wake-ups EventBridge Scheduler sends when a NodePool's schedules change what they hold. */
export const wakeUpVersion = 'flotilla.wake-up/v1';

/**
 * What a NodePool's wake-up (a one-time EventBridge Scheduler schedule the provisioner arms at the
 * next opening or closing of one of its windows) puts on the queue: a provisioning run then, for
 * the pods a closing window lets launch and the replicas a window sets. Names are for the log.
 */
export const wakeUpSchema = z.object({
  version: z.literal(wakeUpVersion),
  kind: z.literal('ScheduleWakeUp'),
  cluster: z.string().min(1),
  nodePool: z.string().min(1),
  /** The instant the wake-up was armed for. */
  at: z.iso.datetime(),
});

export type WakeUp = z.infer<typeof wakeUpSchema>;

/**
 * A pod-event queue message: a pod event, a node deletion or a standalone NodeClaim from the shim,
 * a follow-up from the provisioner, or a NodePool's wake-up from EventBridge Scheduler.
 */
export type QueueMessage =
  | { readonly kind: 'podEvent'; readonly event: PodEvent }
  | { readonly kind: 'nodeDeletion'; readonly deletion: NodeDeletion }
  | { readonly kind: 'followUp'; readonly followUp: FollowUp }
  | { readonly kind: 'wakeUp'; readonly wakeUp: WakeUp }
  | { readonly kind: 'standaloneNodeClaim'; readonly nodeClaim: StandaloneNodeClaimMessage };

/** The cluster a queue message is for. */
export function queueMessageCluster(message: QueueMessage): string {
  switch (message.kind) {
    case 'podEvent':
      return message.event.cluster;
    case 'nodeDeletion':
      return message.deletion.cluster;
    case 'followUp':
      return message.followUp.cluster;
    case 'wakeUp':
      return message.wakeUp.cluster;
    case 'standaloneNodeClaim':
      return message.nodeClaim.cluster;
  }
}

/** Parses one pod-event queue body of any kind (by its version); anything else is a typed failure. */
export function parseQueueMessage(body: string): Decoded<QueueMessage> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `not JSON: ${(error as Error).message}` };
  }
  const version = (json as { version?: unknown } | null)?.version;
  if (version === followUpVersion) {
    const parsed = followUpSchema.safeParse(json);
    if (parsed.success) return { ok: true, message: { kind: 'followUp', followUp: parsed.data } };
    return { ok: false, problem: z.prettifyError(parsed.error) };
  }
  if (version === wakeUpVersion) {
    const parsed = wakeUpSchema.safeParse(json);
    if (parsed.success) return { ok: true, message: { kind: 'wakeUp', wakeUp: parsed.data } };
    return { ok: false, problem: z.prettifyError(parsed.error) };
  }
  if (version === standaloneNodeClaimVersion) {
    const parsed = standaloneNodeClaimSchema.safeParse(json);
    if (parsed.success) return { ok: true, message: { kind: 'standaloneNodeClaim', nodeClaim: parsed.data } };
    return { ok: false, problem: z.prettifyError(parsed.error) };
  }
  if (version === nodeDeletionVersion) {
    const parsed = nodeDeletionSchema.safeParse(json);
    if (parsed.success) return { ok: true, message: { kind: 'nodeDeletion', deletion: parsed.data } };
    return { ok: false, problem: z.prettifyError(parsed.error) };
  }
  const parsed = podEventSchema.safeParse(json);
  if (parsed.success) return { ok: true, message: { kind: 'podEvent', event: parsed.data } };
  return { ok: false, problem: z.prettifyError(parsed.error) };
}
