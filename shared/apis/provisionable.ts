import type { V1Pod } from '@kubernetes/client-node';
import { isRecord } from './fields.ts';

/** The objects of a list field, skipping anything else (a malformed pod is rejected when converted). */
function records(value: unknown): readonly Readonly<Record<string, unknown>>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

/**
 * Whether kube-scheduler has given up on this pod for now, the way Karpenter decides a pod is
 * provisionable: PodScheduled is False with reason Unschedulable, it is not bound and not
 * nominated (preemption), and it is neither a DaemonSet pod nor a static (mirror) pod. Never
 * throws: a malformed pod that looks unschedulable is kept, to be rejected (and reported) when it
 * is converted.
 */
export function isUnschedulable(pod: V1Pod): boolean {
  const raw: unknown = pod;
  if (!isRecord(raw)) return false;
  const meta = isRecord(raw['metadata']) ? raw['metadata'] : {};
  const spec = isRecord(raw['spec']) ? raw['spec'] : {};
  const status = isRecord(raw['status']) ? raw['status'] : {};
  if (spec['nodeName'] || status['nominatedNodeName'] || meta['deletionTimestamp']) return false;
  if (records(meta['ownerReferences']).some((o) => o['kind'] === 'DaemonSet' || o['kind'] === 'Node')) {
    return false;
  }
  const annotations = isRecord(meta['annotations']) ? meta['annotations'] : {};
  if (annotations['kubernetes.io/config.mirror']) return false;
  return records(status['conditions']).some(
    (condition) =>
      condition['type'] === 'PodScheduled' &&
      condition['status'] === 'False' &&
      condition['reason'] === 'Unschedulable',
  );
}
