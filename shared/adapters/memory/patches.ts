import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { mergeConditions, withoutConditions } from '../../apis/index.ts';
import type { Condition } from '../../ports/cloud.ts';
import type { ConditionUpdate, MetadataPatch } from '../../ports/cluster.ts';
import { type Raw, wholeSeconds } from './object-store.ts';

// How the in-memory cluster applies patches to a stored object's copy, as the API server would.

/** The status after a status patch: fields set, conditions merged (transition times from `now`). */
export function statusWith(
  raw: Raw,
  conditions: readonly ConditionUpdate[] | undefined,
  now: Date,
  fields: Record<string, unknown>,
  removeConditions?: readonly string[],
) {
  const status = { ...((raw['status'] as Record<string, unknown> | undefined) ?? {}) };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) status[key] = value;
  const removing = (removeConditions ?? []).length > 0;
  if ((conditions !== undefined && conditions.length > 0) || removing) {
    status['conditions'] = mergeConditions(
      withoutConditions((status['conditions'] ?? []) as Condition[], removeConditions),
      conditions ?? [],
      now,
      raw.metadata.generation,
    );
  }
  return status;
}

/** Applies a metadata patch (labels, annotations, finalizers) to a copy. */
export function applyMetadata(copy: Raw, patch: MetadataPatch): void {
  const merge = (
    current: Record<string, string> | undefined,
    change: Readonly<Record<string, string | null>>,
  ) => {
    const out = { ...(current ?? {}) };
    for (const [k, v] of Object.entries(change)) {
      if (v === null) delete out[k];
      else out[k] = v;
    }
    return out;
  };
  if (patch.labels) copy.metadata.labels = merge(copy.metadata.labels, patch.labels);
  if (patch.annotations) copy.metadata.annotations = merge(copy.metadata.annotations, patch.annotations);
  if (patch.addFinalizers || patch.removeFinalizers) {
    const finalizers = new Set(copy.metadata.finalizers ?? []);
    for (const f of patch.addFinalizers ?? []) finalizers.add(f);
    for (const f of patch.removeFinalizers ?? []) finalizers.delete(f);
    copy.metadata.finalizers = [...finalizers];
  }
}

/** Sets a pod condition on a copy, keeping its transition time while the status is unchanged. */
export function setPodCondition(copy: Raw, condition: V1PodCondition, now: Date): void {
  const pod = copy as unknown as V1Pod;
  const conditions = (pod.status?.conditions ?? []).filter((c) => c.type !== condition.type);
  const previous = pod.status?.conditions?.find((c) => c.type === condition.type);
  const transition =
    previous !== undefined &&
    previous.status === condition.status &&
    previous.lastTransitionTime !== undefined
      ? previous.lastTransitionTime
      : wholeSeconds(now);
  pod.status = {
    ...(pod.status ?? {}),
    conditions: [...conditions, { ...condition, lastTransitionTime: transition }],
  };
}
