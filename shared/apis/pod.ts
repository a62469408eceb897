import type { V1DaemonSet, V1Pod } from '@kubernetes/client-node';
import { type DaemonSet, type Pod, ValidationError } from '../core/index.ts';
import {
  nonEmpty,
  objectName,
  optional,
  readEach,
  readObject,
  readString,
  readStringMap,
  readTime,
} from './fields.ts';
import { toDisruptionInfo } from './pod-disruption-info.ts';
import { withResizeStatus } from './pod-resize.ts';
import { toPodSpec } from './pod-spec.ts';
import { toClaimVolumes, toVolumeTopology, type VolumeIndex } from './pod-volumes.ts';

// Pods and DaemonSets as the scheduler reads them: a pod's identity, spec (with what its status
// says of its containers' requests under in-place resize), volume topology and disruption
// settings; a DaemonSet's template as a pod named after it. Each conversion throws
// ValidationError naming the object and the field; callers skip and report such objects.

/**
 * Converts a pod. `volumes` resolves its claims into VolumeTopology; without it, a pod that uses
 * claims gets none.
 * @throws ValidationError for a missing or wrongly typed field, a malformed quantity, operator or
 *   taint effect, or a missing claim.
 */
export function toPod(raw: V1Pod, volumes?: VolumeIndex): Pod {
  const object = objectName('pod', raw, true);
  const pod = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(pod['metadata'], object, 'metadata') ?? {};
  const name = readString(meta['name'], object, 'metadata.name');
  const namespace = readString(meta['namespace'], object, 'metadata.namespace');
  const uid = readString(meta['uid'], object, 'metadata.uid');
  if (!name || !namespace || !uid) {
    throw new ValidationError(object, 'metadata', 'name, namespace and uid are required');
  }
  const spec = readObject(pod['spec'], object, 'spec');
  if (spec === undefined) throw new ValidationError(object, 'spec', 'missing');
  const volumeTopology = volumes === undefined ? [] : toVolumeTopology(raw, volumes);
  const claimVolumes = toClaimVolumes(raw);
  const owners = readEach(meta['ownerReferences'], object, 'metadata.ownerReferences', (o, at) => ({
    kind: readString(o['kind'], object, `${at}.kind`),
    name: readString(o['name'], object, `${at}.name`),
  }));
  return {
    uid,
    name,
    namespace,
    ...optional('labels', nonEmpty(readStringMap(meta['labels'], object, 'metadata.labels'))),
    ...optional('createdAtMs', readTime(meta['creationTimestamp'], object, 'metadata.creationTimestamp')),
    ...withResizeStatus(toPodSpec(spec, object, 'spec'), pod['status'], object),
    ...(volumeTopology.length > 0 ? { volumeTopology } : {}),
    ...(claimVolumes.length > 0 ? { claimVolumes } : {}),
    ...optional('daemonSetName', owners.find((o) => o.kind === 'DaemonSet')?.name),
    ...optional(
      'disruption',
      toDisruptionInfo(
        pod,
        meta,
        spec,
        object,
        owners.some((o) => o.kind === 'StatefulSet'),
      ),
    ),
  };
}

/** Converts a DaemonSet; its template becomes a pod named after the DaemonSet. */
export function toDaemonSet(raw: V1DaemonSet): DaemonSet {
  const object = objectName('daemonSet', raw, true);
  const ds = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(ds['metadata'], object, 'metadata') ?? {};
  const name = readString(meta['name'], object, 'metadata.name');
  const namespace = readString(meta['namespace'], object, 'metadata.namespace');
  if (!name || !namespace) throw new ValidationError(object, 'metadata', 'name and namespace are required');
  const dsSpec = readObject(ds['spec'], object, 'spec');
  const template = readObject(dsSpec?.['template'], object, 'spec.template');
  const spec = readObject(template?.['spec'], object, 'spec.template.spec');
  if (spec === undefined) throw new ValidationError(object, 'spec.template.spec', 'missing');
  const templateMeta = readObject(template?.['metadata'], object, 'spec.template.metadata') ?? {};
  return {
    namespace,
    name,
    template: {
      uid: readString(meta['uid'], object, 'metadata.uid') ?? `${namespace}/${name}`,
      name,
      namespace,
      ...optional(
        'labels',
        nonEmpty(readStringMap(templateMeta['labels'], object, 'spec.template.metadata.labels')),
      ),
      ...toPodSpec(spec, object, 'spec.template.spec'),
    },
  };
}
