import type {
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StorageClass,
} from '@kubernetes/client-node';
import {
  type ClaimVolume,
  Label,
  type NodeSelectorRequirement,
  ValidationError,
  type VolumeTopology,
} from '../core/index.ts';
import {
  isRecord,
  metadataString,
  objectName,
  readEach,
  readList,
  readObject,
  readString,
  readStrings,
  requireString,
  toNodeSelectorRequirements,
} from './fields.ts';

// The volumes of a pod that claims back (PersistentVolumeClaims and generic ephemeral volumes), and
// the topology they impose: a bound volume's node affinity or the allowed topologies of the claim's
// StorageClass, as Karpenter's volumetopology.go reads them.

/** PVCs, PVs and StorageClasses, indexed for volume-topology resolution. */
export interface VolumeIndex {
  /** `namespace/name` → claim. */
  readonly claims: ReadonlyMap<string, V1PersistentVolumeClaim>;
  readonly volumes: ReadonlyMap<string, V1PersistentVolume>;
  readonly storageClasses: ReadonlyMap<string, V1StorageClass>;
}

export function makeVolumeIndex(
  claims: readonly V1PersistentVolumeClaim[],
  volumes: readonly V1PersistentVolume[],
  storageClasses: readonly V1StorageClass[],
): VolumeIndex {
  // Objects without a name cannot be referred to; their own fields are checked where they are read.
  const byName = <T>(items: readonly T[], key: (item: T) => string | undefined) =>
    new Map(items.flatMap((item) => (key(item) === undefined ? [] : [[key(item) as string, item] as const])));
  return {
    claims: byName(claims, (c) => {
      const name = metadataString(c, 'name');
      return name === undefined ? undefined : `${metadataString(c, 'namespace') ?? ''}/${name}`;
    }),
    volumes: byName(volumes, (v) => metadataString(v, 'name')),
    storageClasses: byName(storageClasses, (c) => metadataString(c, 'name')),
  };
}

/** The pod's volumes; none when `spec.volumes` is not a list of objects. */
function volumesOf(pod: unknown): readonly Readonly<Record<string, unknown>>[] {
  const spec = isRecord(pod) ? pod['spec'] : undefined;
  const volumes = isRecord(spec) ? spec['volumes'] : undefined;
  return Array.isArray(volumes) ? volumes.filter(isRecord) : [];
}

/**
 * True when the pod mounts a PersistentVolumeClaim or a generic ephemeral volume. Never throws: a
 * malformed pod is rejected when it is converted.
 */
export function usesClaims(pod: V1Pod): boolean {
  return volumesOf(pod).some((v) => v['persistentVolumeClaim'] != null || v['ephemeral'] != null);
}

/** The pod's claim-backed volumes (PersistentVolumeClaim and generic ephemeral), as named. */
export function toClaimVolumes(pod: unknown): ClaimVolume[] {
  return volumesOf(pod).flatMap((v): ClaimVolume[] => {
    const pvc = v['persistentVolumeClaim'];
    if (isRecord(pvc) && typeof pvc['claimName'] === 'string' && pvc['claimName'] !== '')
      return [{ kind: 'claim', name: pvc['claimName'] }];
    if (isRecord(v['ephemeral']) && typeof v['name'] === 'string' && v['name'] !== '')
      return [{ kind: 'ephemeral', name: v['name'] }];
    return [];
  });
}

/**
 * The topology each of the pod's claims imposes, as Karpenter's volumetopology.go: a bound PV's
 * node-affinity terms (hostname requirements dropped: a new node can never match them), or for an
 * unbound claim the `allowedTopologies` terms of its StorageClass; the terms are ORed. A generic
 * ephemeral volume's claim is `<pod>-<volume>`; before it exists its template's class is used.
 * @throws ValidationError when a claim, its volume or its StorageClass does not exist, or a field
 *   read is of the wrong type.
 */
export function toVolumeTopology(pod: V1Pod, index: VolumeIndex): VolumeTopology[] {
  const object = objectName('pod', pod, true);
  const meta = readObject(isRecord(pod) ? pod['metadata'] : undefined, object, 'metadata') ?? {};
  const namespace = readString(meta['namespace'], object, 'metadata.namespace') ?? '';
  const podName = readString(meta['name'], object, 'metadata.name');
  const spec = readObject(isRecord(pod) ? pod['spec'] : undefined, object, 'spec') ?? {};
  const out: VolumeTopology[] = [];
  for (const [i, volume] of readList(spec['volumes'], object, 'spec.volumes').entries()) {
    const field = `spec.volumes[${i}]`;
    const v = readObject(volume, object, field) ?? {};
    const pvc = readObject(v['persistentVolumeClaim'], object, `${field}.persistentVolumeClaim`);
    const ephemeral = readObject(v['ephemeral'], object, `${field}.ephemeral`);
    let claimName: string;
    let fallbackClass: string | undefined;
    if (pvc) {
      claimName = requireString(pvc['claimName'], object, `${field}.persistentVolumeClaim.claimName`);
    } else if (ephemeral) {
      claimName = `${podName}-${requireString(v['name'], object, `${field}.name`)}`;
      const template = readObject(
        ephemeral['volumeClaimTemplate'],
        object,
        `${field}.ephemeral.volumeClaimTemplate`,
      );
      const templateSpec = readObject(
        template?.['spec'],
        object,
        `${field}.ephemeral.volumeClaimTemplate.spec`,
      );
      fallbackClass = readString(
        templateSpec?.['storageClassName'],
        object,
        `${field}.ephemeral.volumeClaimTemplate.spec.storageClassName`,
      );
    } else {
      continue;
    }
    const claim = index.claims.get(`${namespace}/${claimName}`);
    if (claim === undefined && pvc) {
      throw new ValidationError(
        object,
        field,
        `persistentVolumeClaim "${claimName}" does not exist; create it first`,
      );
    }
    const claimObject = `persistentVolumeClaim "${namespace}/${claimName}"`;
    const claimSpec = readObject(claim?.spec, claimObject, 'spec') ?? {};
    const volumeName = readString(claimSpec['volumeName'], claimObject, 'spec.volumeName');
    if (volumeName) {
      const pv = index.volumes.get(volumeName);
      if (pv === undefined) {
        throw new ValidationError(
          object,
          field,
          `claim "${claimName}" is bound to persistentVolume "${volumeName}", which does not exist`,
        );
      }
      const pvObject = `persistentVolume "${volumeName}"`;
      const pvSpec = readObject(pv.spec, pvObject, 'spec') ?? {};
      const nodeAffinity = readObject(pvSpec['nodeAffinity'], pvObject, 'spec.nodeAffinity') ?? {};
      const required = readObject(nodeAffinity['required'], pvObject, 'spec.nodeAffinity.required') ?? {};
      const terms = readList(
        required['nodeSelectorTerms'],
        pvObject,
        'spec.nodeAffinity.required.nodeSelectorTerms',
      );
      // Terms are ORed; a term left with nothing once hostname is dropped admits any new node.
      const alternatives = terms.map((raw, j) => {
        const at = `spec.nodeAffinity.required.nodeSelectorTerms[${j}]`;
        const term = readObject(raw, pvObject, at);
        return toNodeSelectorRequirements(
          term?.['matchExpressions'],
          pvObject,
          `${at}.matchExpressions`,
        ).filter((r) => r.key !== Label.hostname);
      });
      if (alternatives.length > 0 && alternatives.every((t) => t.length > 0))
        out.push({ claimName, terms: alternatives });
      continue;
    }
    const className =
      readString(claimSpec['storageClassName'], claimObject, 'spec.storageClassName') ?? fallbackClass;
    if (!className) continue;
    const storageClass = index.storageClasses.get(className);
    if (storageClass === undefined) {
      throw new ValidationError(
        object,
        field,
        `storageClass "${className}" of claim "${claimName}" does not exist`,
      );
    }
    const classObject = `storageClass "${className}"`;
    const allowed = readList(storageClass.allowedTopologies, classObject, 'allowedTopologies');
    // Terms are ORed: a volume may be provisioned in any of them.
    const alternatives = allowed.map((raw, j) => {
      const at = `allowedTopologies[${j}]`;
      const term = readObject(raw, classObject, at);
      return readEach(
        term?.['matchLabelExpressions'],
        classObject,
        `${at}.matchLabelExpressions`,
        (e, eat): NodeSelectorRequirement => ({
          key: requireString(e['key'], classObject, `${eat}.key`),
          operator: 'In',
          values: readStrings(e['values'], classObject, `${eat}.values`),
        }),
      );
    });
    if (alternatives.length > 0 && alternatives.every((t) => t.length > 0))
      out.push({ claimName, terms: alternatives });
  }
  return out;
}
