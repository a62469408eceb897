import { ValidationError } from '../core/index.ts';
import {
  isRecord,
  metadataString,
  objectName,
  readEach,
  readNumber,
  readObject,
  readString,
  requireString,
} from './fields.ts';
import type { VolumeIndex } from './pod-volumes.ts';

// CSI attach limits as the scheduler reads them: each node's CSINode (`storage.k8s.io/v1`) says
// how many volumes each driver attaches there, and each claim's driver is found from its
// PersistentVolume or StorageClass.

/** One node's attach limits: driver → `spec.drivers[].allocatable.count` (drivers without one left out). */
export interface CsiNodeLimits {
  readonly nodeName: string;
  readonly limits: Readonly<Record<string, number>>;
}

/**
 * Converts a CSINode (named after its node).
 * @throws ValidationError for a missing name or a driver entry of the wrong shape.
 */
export function toCsiNodeLimits(raw: unknown): CsiNodeLimits {
  const object = objectName('csiNode', raw, false);
  const nodeName = metadataString(raw, 'name');
  if (nodeName === undefined || nodeName === '')
    throw new ValidationError(object, 'metadata.name', 'missing');
  const spec = readObject(isRecord(raw) ? raw['spec'] : undefined, object, 'spec') ?? {};
  const limits: Record<string, number> = {};
  readEach(spec['drivers'], object, 'spec.drivers', (d, at) => {
    const name = requireString(d['name'], object, `${at}.name`);
    const allocatable = readObject(d['allocatable'], object, `${at}.allocatable`);
    const count = readNumber(allocatable?.['count'], object, `${at}.allocatable.count`, true);
    if (count !== undefined) limits[name] = count;
  });
  return { nodeName, limits };
}

/** In-tree provisioners and the CSI drivers that took them over (as csi-translation-lib maps them). */
const IN_TREE: Readonly<Record<string, string>> = {
  'kubernetes.io/aws-ebs': 'ebs.csi.aws.com',
  'kubernetes.io/gce-pd': 'pd.csi.storage.gke.io',
  'kubernetes.io/azure-disk': 'disk.csi.azure.com',
  'kubernetes.io/azure-file': 'file.csi.azure.com',
  'kubernetes.io/cinder': 'cinder.csi.openstack.org',
  'kubernetes.io/vsphere-volume': 'csi.vsphere.vmware.com',
  'kubernetes.io/portworx-volume': 'pxd.portworx.com',
};

const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';

/**
 * `namespace/claim` → the CSI driver that attaches the claim's volume: the bound PV's
 * `spec.csi.driver` (an in-tree `awsElasticBlockStore` PV counts as the EBS driver), else the
 * provisioner of the claim's StorageClass (the default class when it names none; an in-tree
 * provisioner as its CSI driver). Claims with neither are left out: they count against no limit,
 * as Karpenter counts them. A malformed claim is left out too, and listed in `problems`.
 */
export function toClaimDrivers(index: VolumeIndex): {
  readonly drivers: Map<string, string>;
  readonly problems: ValidationError[];
} {
  const provisioner = (className: string | undefined): string | undefined => {
    const sc = className === undefined ? undefined : index.storageClasses.get(className);
    const name = isRecord(sc) && typeof sc['provisioner'] === 'string' ? sc['provisioner'] : undefined;
    return name === undefined ? undefined : (IN_TREE[name] ?? name);
  };
  // The newest default class, as the API server picks it for a claim that names none.
  let defaultClass: { name: string; created: string } | undefined;
  for (const [name, sc] of index.storageClasses) {
    const annotations = isRecord(sc) && isRecord(sc['metadata']) ? sc['metadata']['annotations'] : undefined;
    if (!isRecord(annotations) || annotations[DEFAULT_CLASS_ANNOTATION] !== 'true') continue;
    const created = metadataString(sc, 'creationTimestamp') ?? '';
    if (defaultClass === undefined || created > defaultClass.created) defaultClass = { name, created };
  }
  const out = new Map<string, string>();
  const problems: ValidationError[] = [];
  for (const [id, claim] of index.claims) {
    try {
      const object = `persistentVolumeClaim "${id}"`;
      const spec = readObject(isRecord(claim) ? claim['spec'] : undefined, object, 'spec') ?? {};
      const volumeName = readString(spec['volumeName'], object, 'spec.volumeName');
      const pv = volumeName ? index.volumes.get(volumeName) : undefined;
      const pvSpec = isRecord(pv) && isRecord(pv['spec']) ? pv['spec'] : {};
      const csi = isRecord(pvSpec['csi']) ? pvSpec['csi'] : undefined;
      const fromVolume =
        typeof csi?.['driver'] === 'string'
          ? csi['driver']
          : pvSpec['awsElasticBlockStore'] != null
            ? IN_TREE['kubernetes.io/aws-ebs']
            : undefined;
      const className = readString(spec['storageClassName'], object, 'spec.storageClassName');
      const driver =
        fromVolume ?? provisioner(className === undefined ? defaultClass?.name : className || undefined);
      if (driver !== undefined) out.set(id, driver);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(error);
    }
  }
  return { drivers: out, problems };
}
