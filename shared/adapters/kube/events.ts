import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { KARPENTER_GROUP, KARPENTER_VERSION } from '../../apis/index.ts';
import { type Cluster, eventDedupeKey } from '../../ports/cluster.ts';
import { retryOnConflict } from './call.ts';
import { EC2NODECLASSES, type KubeContext, MERGE_PATCH, seg, send } from './context.ts';
import {
  ClusterConflictError,
  ClusterNotFoundError,
  isNamespaceGone,
  isNamespaceTerminating,
} from './errors.ts';

/** Cluster-scoped objects' events go to `default`, as kubectl and client-go do. */
const CLUSTER_EVENT_NAMESPACE = 'default';

/** Event names one container remembers at most (forgotten all at once past it). */
const MAX_REMEMBERED = 10_000;

export interface KubeEventOptions {
  /** A repeated event within this window is dropped; later ones bump its count. */
  readonly dedupeSeconds: number;
  /** `source.component` / `reportingComponent` of events. */
  readonly component: string;
  /** `reportingInstance` of events. */
  readonly instance: string;
}

/**
 * Events without an event correlator between invocations: an Event's name derives from its dedupe
 * key (subject, reason, dedupe values; eventDedupeKey), so a repeat finds the existing Event and,
 * outside its dedupe window, bumps its count and takes the latest message instead of creating
 * another. The window is measured from the Event's lastTimestamp, so it holds across Lambda
 * invocations.
 */
export function makeRecordEvent(ctx: KubeContext, options: KubeEventOptions): Cluster['recordEvent'] {
  const { component } = options;
  const dedupeMs = options.dedupeSeconds * 1000;
  // What this container recorded or saw recorded, by Event name: a repeat within its window costs
  // no request while the container lives (Karpenter's in-memory dedupe); the Event object decides
  // otherwise.
  const seen = new Map<string, number>();
  const remember = (name: string, atMs: number) => {
    if (seen.size >= MAX_REMEMBERED) seen.clear();
    seen.set(name, atMs);
  };

  return async function recordEvent(event) {
    const s = event.subject;
    const namespace = s.kind === 'Pod' ? s.namespace : CLUSTER_EVENT_NAMESPACE;
    const digest = createHash('sha256').update(eventDedupeKey(event)).digest('hex').slice(0, 16);
    const name = `${s.name.slice(0, 200)}.${digest}`;
    const message = event.message.slice(0, 1024);
    const windowMs = event.dedupeSeconds === undefined ? dedupeMs : event.dedupeSeconds * 1000;
    const now = ctx.clock.now();
    const seenAt = seen.get(name);
    if (seenAt !== undefined && now.getTime() - seenAt < windowMs) return;
    const body: CoreV1Event = {
      metadata: { name, namespace },
      involvedObject: {
        kind: s.kind,
        name: s.name,
        ...(s.kind === 'Pod' ? { apiVersion: 'v1', namespace: s.namespace } : {}),
        ...(s.kind === 'NodeClaim' || s.kind === 'NodePool'
          ? { apiVersion: `${KARPENTER_GROUP}/${KARPENTER_VERSION}` }
          : {}),
        ...(s.kind === 'EC2NodeClass'
          ? { apiVersion: `${EC2NODECLASSES.group}/${EC2NODECLASSES.version}` }
          : {}),
        ...(s.kind === 'Node' ? { apiVersion: 'v1' } : {}),
        // A Node without its uid is named by its name there, as the kubelet names it: `kubectl
        // describe node` looks for either, and an Event with no uid would show in neither.
        ...(s.uid !== undefined ? { uid: s.uid } : s.kind === 'Node' ? { uid: s.name } : {}),
      },
      type: event.type,
      reason: event.reason,
      message,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component },
      reportingComponent: component,
      reportingInstance: options.instance,
    };
    // Created first: a new Event (the usual case) costs one request; one that exists answers 409
    // and is then read, and counted when outside the dedupe window.
    try {
      await send(ctx, `create event "${namespace}/${name}"`, {
        method: 'POST',
        path: `/api/v1/namespaces/${seg(namespace)}/events`,
        body,
      });
      remember(name, now.getTime());
      return;
    } catch (error) {
      // The pod's namespace is being deleted, or is gone, and the pod with it: no Event can be
      // created there, and none is needed.
      const gone = isNamespaceTerminating(error)
        ? 'namespace terminating'
        : isNamespaceGone(error, namespace)
          ? 'namespace gone'
          : undefined;
      if (gone !== undefined) {
        ctx.logger.debug('event not recorded', { namespace, reason: event.reason, why: gone });
        return;
      }
      if (!(error instanceof ClusterConflictError)) throw error;
    }
    await retryOnConflict(ctx.conflictAttempts, async () => {
      let existing: CoreV1Event;
      try {
        existing = (await send(ctx, `get event "${namespace}/${name}"`, {
          method: 'GET',
          path: `/api/v1/namespaces/${seg(namespace)}/events/${seg(name)}`,
        })) as CoreV1Event;
      } catch (error) {
        // Gone again since (it expired): the next occurrence creates it anew.
        if (error instanceof ClusterNotFoundError) return;
        throw error;
      }
      const last = existing.lastTimestamp ?? existing.firstTimestamp;
      const lastMs = last === undefined ? Number.NaN : new Date(last).getTime();
      if (now.getTime() - lastMs < windowMs) {
        remember(name, lastMs);
        return;
      }
      await ctx.beforeWrite('Event', name);
      // The resourceVersion makes the count exact: a concurrent bump conflicts and is retried.
      await send(ctx, `patch event "${namespace}/${name}"`, {
        method: 'PATCH',
        path: `/api/v1/namespaces/${seg(namespace)}/events/${seg(name)}`,
        contentType: MERGE_PATCH,
        body: {
          metadata: { resourceVersion: existing.metadata?.resourceVersion },
          count: (existing.count ?? 1) + 1,
          lastTimestamp: now,
          // Dedupe values may leave the message out: the Event tells the latest.
          type: event.type,
          message,
        },
      });
      remember(name, now.getTime());
    });
  };
}
