import type { V1Node, V1Pod, V1PodDisruptionBudget, V1VolumeAttachment } from '@kubernetes/client-node';
import { Label, type Pod, parseResourceList, ValidationError } from '../core/index.ts';
import type { ClusterNode, DrainPod, PodDisruptionBudget, VolumeAttachment } from '../ports/cluster.ts';
import { optional, toLabelSelector, toMs, toTaint, toToleration } from './fields.ts';
// Nodes, and what a drain reads: the pods on a node, PodDisruptionBudgets, VolumeAttachments. Each
// conversion throws ValidationError naming the object and the field.

/** Converts a Node; `pods` are the pods bound to it. */
export function toClusterNode(raw: V1Node, pods: readonly Pod[]): ClusterNode {
  const meta = raw.metadata;
  const object = `node "${meta?.name ?? '<unnamed>'}"`;
  if (!meta?.name || !meta.uid) throw new ValidationError(object, 'metadata', 'name and uid are required');
  const labels = meta.labels ?? {};
  const allocatable = parseResourceList(raw.status?.allocatable ?? {}, {
    object,
    field: 'status.allocatable',
  });
  const capacity = parseResourceList(raw.status?.capacity ?? {}, { object, field: 'status.capacity' });
  const taints = (raw.spec?.taints ?? []).map((t, i) => toTaint(t, object, `spec.taints[${i}]`));
  const nodePoolName = labels[Label.nodePool];
  const ready = (raw.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const deleting = meta.deletionTimestamp !== undefined;
  return {
    name: meta.name,
    uid: meta.uid,
    ...optional('nodePoolName', nodePoolName),
    labels,
    annotations: meta.annotations ?? {},
    finalizers: meta.finalizers ?? [],
    ...(taints.length > 0 ? { taints } : {}),
    allocatable,
    capacity,
    pods,
    // Nodes Flotilla launched are initialized once labelled so; any other node already serves pods.
    initialized: nodePoolName === undefined ? ready : labels[Label.initialized] === 'true',
    unschedulable: raw.spec?.unschedulable === true || deleting,
    ...optional('providerId', raw.spec?.providerID),
    ready,
    deleting,
    ...optional('createdAtMs', meta.creationTimestamp ? toMs(meta.creationTimestamp) : undefined),
    ...optional('deletedAtMs', meta.deletionTimestamp ? toMs(meta.deletionTimestamp) : undefined),
    ...(meta.ownerReferences?.length
      ? {
          ownerReferences: meta.ownerReferences.map((o) => ({
            apiVersion: o.apiVersion,
            kind: o.kind,
            name: o.name,
            uid: o.uid,
            ...optional('blockOwnerDeletion', o.blockOwnerDeletion),
          })),
        }
      : {}),
  };
}

const POD_PHASES = new Set<DrainPod['phase']>(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown']);

/**
 * Converts a pod on a node being drained. `claimVolumes` maps `namespace/claim` to the bound
 * PersistentVolume's name.
 */
export function toDrainPod(raw: V1Pod, claimVolumes: ReadonlyMap<string, string>): DrainPod {
  const meta = raw.metadata;
  const object = `pod "${meta?.namespace ?? '<no namespace>'}/${meta?.name ?? '<unnamed>'}"`;
  if (!meta?.name || !meta.namespace || !meta.uid)
    throw new ValidationError(object, 'metadata', 'name, namespace and uid are required');
  const annotations = meta.annotations ?? {};
  const phase = raw.status?.phase ?? 'Pending';
  const volumeNames: string[] = [];
  for (const v of raw.spec?.volumes ?? []) {
    const claim = v.persistentVolumeClaim?.claimName;
    const pv = claim === undefined ? undefined : claimVolumes.get(`${meta.namespace}/${claim}`);
    if (pv !== undefined) volumeNames.push(pv);
  }
  return {
    uid: meta.uid,
    namespace: meta.namespace,
    name: meta.name,
    labels: meta.labels ?? {},
    annotations,
    ...optional('priorityClassName', raw.spec?.priorityClassName),
    daemonSet: (meta.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet'),
    mirror: annotations['kubernetes.io/config.mirror'] !== undefined,
    phase: POD_PHASES.has(phase as DrainPod['phase']) ? (phase as DrainPod['phase']) : 'Unknown',
    tolerations: (raw.spec?.tolerations ?? []).map((t, i) =>
      toToleration(t, object, `spec.tolerations[${i}]`),
    ),
    ...optional('deletedAtMs', meta.deletionTimestamp ? toMs(meta.deletionTimestamp) : undefined),
    ...optional('startedAtMs', raw.status?.startTime ? toMs(raw.status.startTime) : undefined),
    terminationGracePeriodSeconds: raw.spec?.terminationGracePeriodSeconds ?? 30,
    volumeNames,
  };
}

/** Converts a PodDisruptionBudget. */
export function toPodDisruptionBudget(raw: V1PodDisruptionBudget): PodDisruptionBudget {
  const meta = raw.metadata;
  const object = `podDisruptionBudget "${meta?.namespace ?? '<no namespace>'}/${meta?.name ?? '<unnamed>'}"`;
  if (!meta?.name || !meta.namespace)
    throw new ValidationError(object, 'metadata', 'name and namespace are required');
  const policy = raw.spec?.unhealthyPodEvictionPolicy;
  if (policy !== undefined && policy !== 'IfHealthyBudget' && policy !== 'AlwaysAllow') {
    throw new ValidationError(
      object,
      'spec.unhealthyPodEvictionPolicy',
      `${JSON.stringify(policy)} is not IfHealthyBudget or AlwaysAllow`,
    );
  }
  return {
    namespace: meta.namespace,
    name: meta.name,
    ...optional(
      'selector',
      raw.spec?.selector ? toLabelSelector(raw.spec.selector, object, 'spec.selector') : undefined,
    ),
    ...optional('minAvailable', raw.spec?.minAvailable),
    ...optional('maxUnavailable', raw.spec?.maxUnavailable),
    disruptionsAllowed: raw.status?.disruptionsAllowed ?? 0,
    currentHealthy: raw.status?.currentHealthy ?? 0,
    desiredHealthy: raw.status?.desiredHealthy ?? 0,
    expectedPods: raw.status?.expectedPods ?? 0,
    ...optional('unhealthyPodEvictionPolicy', policy as PodDisruptionBudget['unhealthyPodEvictionPolicy']),
  };
}

/** Converts a `storage.k8s.io/v1` VolumeAttachment. */
export function toVolumeAttachment(raw: V1VolumeAttachment): VolumeAttachment {
  return {
    name: raw.metadata?.name ?? '',
    nodeName: raw.spec.nodeName,
    ...optional('persistentVolumeName', raw.spec.source.persistentVolumeName),
  };
}
