import { Annotation, type PodDisruptionInfo } from '../core/index.ts';
import { isRecord, optional, readNumber, readObject, readStringMap, readTime } from './fields.ts';

// What voluntary disruption reads of a pod: its do-not-disrupt and deletion-cost annotations,
// whether it mirrors a static pod, its priority and start, and where it is in its life
// (terminating, finished, not Ready). Read from the whole pod (toPod) and, for the lifecycle, from
// a pod's own fields (the pod reader).

/** `controller.kubernetes.io/pod-deletion-cost`: an int32; others are ignored, as the ReplicaSet controller does. */
const DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';

/** What voluntary disruption reads of a pod; undefined when there is nothing to read. */
export function toDisruptionInfo(
  pod: Readonly<Record<string, unknown>>,
  meta: Readonly<Record<string, unknown>>,
  spec: Readonly<Record<string, unknown>>,
  object: string,
  /** Owned by a StatefulSet (read from the owner references by the caller). */
  statefulSet = false,
): PodDisruptionInfo | undefined {
  const annotations = readStringMap(meta['annotations'], object, 'metadata.annotations') ?? {};
  const cost = annotations[DELETION_COST];
  const deletionCost = cost === undefined || !/^-?\d+$/.test(cost) ? undefined : Number(cost);
  const status = readObject(pod['status'], object, 'status') ?? {};
  const info: PodDisruptionInfo = {
    ...optional('doNotDisrupt', annotations[Annotation.doNotDisrupt]),
    ...optional('deletionCost', deletionCost),
    ...(annotations[Annotation.configMirror] === undefined ? {} : { mirror: true }),
    ...optional('priority', readNumber(spec['priority'], object, 'spec.priority', true)),
    ...optional('startedAtMs', readTime(status['startTime'], object, 'status.startTime')),
    ...optional('deletedAtMs', readTime(meta['deletionTimestamp'], object, 'metadata.deletionTimestamp')),
    ...(statefulSet ? { statefulSet: true } : {}),
    ...podLifecycle(status['phase'], readyStatus(status['conditions'])),
  };
  return Object.keys(info).length === 0 ? undefined : info;
}

/** The status of the pod's `Ready` condition, when the pod has one. */
export function readyStatus(conditions: unknown): string | undefined {
  if (!Array.isArray(conditions)) return undefined;
  const ready = conditions.find((c) => isRecord(c) && c['type'] === 'Ready');
  return isRecord(ready) && typeof ready['status'] === 'string' ? ready['status'] : undefined;
}

/**
 * The lifecycle flags of PodDisruptionInfo; each is left out when false (a terminating pod is the
 * one with `deletedAtMs`).
 */
export function podLifecycle(
  phase: unknown,
  ready: unknown,
): Pick<PodDisruptionInfo, 'finished' | 'notReady'> {
  return {
    ...(phase === 'Succeeded' || phase === 'Failed' ? { finished: true } : {}),
    ...(ready === 'False' ? { notReady: true } : {}),
  };
}
