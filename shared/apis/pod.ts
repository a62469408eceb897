import type {
  V1DaemonSet,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StorageClass,
} from '@kubernetes/client-node';
import {
  type Affinity,
  type ClaimVolume,
  type Container,
  type ContainerPort,
  type DaemonSet,
  type InitContainer,
  Label,
  type NodeSelectorRequirement,
  type Pod,
  type PodAffinityTerm,
  type TopologySpreadConstraint,
  ValidationError,
  type VolumeTopology,
} from '../core/index.ts';
import {
  isRecord,
  metadataString,
  nonEmpty,
  objectName,
  optional,
  readEach,
  readList,
  readNumber,
  readObject,
  readResources,
  readString,
  readStringMap,
  readStrings,
  readTime,
  requireString,
  toLabelSelector,
  toNodeSelectorRequirements,
  toNodeSelectorTerm,
  toToleration,
} from './fields.ts';
import { toDisruptionInfo } from './pod-disruption-info.ts';
// Pods (and DaemonSet pod templates) as the scheduler reads them, volume topology included. Each
// conversion throws ValidationError naming the object and the field; callers skip and report such
// objects.

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
    ...toPodSpec(spec, object, 'spec'),
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

/** The scheduling fields of a pod spec (also used for DaemonSet templates). */
function toPodSpec(
  spec: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): Omit<Pod, 'uid' | 'name' | 'namespace'> {
  const containers = readEach(spec['containers'], object, `${field}.containers`, (c, at) =>
    toContainer(c, object, at),
  );
  const initContainers = readEach(
    spec['initContainers'],
    object,
    `${field}.initContainers`,
    (c, at): InitContainer => ({
      ...toContainer(c, object, at),
      ...(readString(c['restartPolicy'], object, `${at}.restartPolicy`) === 'Always'
        ? { restartPolicy: 'Always' as const }
        : {}),
    }),
  );
  const resources = readObject(spec['resources'], object, `${field}.resources`);
  const affinity = readObject(spec['affinity'], object, `${field}.affinity`);
  const tolerations = readList(spec['tolerations'], object, `${field}.tolerations`).map((t, i) =>
    toToleration(t, object, `${field}.tolerations[${i}]`),
  );
  const spread = readEach(
    spec['topologySpreadConstraints'],
    object,
    `${field}.topologySpreadConstraints`,
    (c, at) => toSpread(c, object, at),
  );
  return {
    containers,
    ...(initContainers.length > 0 ? { initContainers } : {}),
    ...optional('overhead', readResources(spec['overhead'], object, `${field}.overhead`)),
    ...optional('podRequests', readResources(resources?.['requests'], object, `${field}.resources.requests`)),
    ...optional(
      'nodeSelector',
      nonEmpty(readStringMap(spec['nodeSelector'], object, `${field}.nodeSelector`)),
    ),
    ...optional('affinity', affinity ? toAffinity(affinity, object, `${field}.affinity`) : undefined),
    ...(tolerations.length > 0 ? { tolerations } : {}),
    ...(spread.length > 0 ? { topologySpreadConstraints: spread } : {}),
  };
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

function toContainer(c: Readonly<Record<string, unknown>>, object: string, field: string): Container {
  const ports = readEach(c['ports'], object, `${field}.ports`, (p, at): ContainerPort => {
    const containerPort = readNumber(p['containerPort'], object, `${at}.containerPort`, true);
    if (containerPort === undefined) throw new ValidationError(object, `${at}.containerPort`, 'missing');
    const protocol = readString(p['protocol'], object, `${at}.protocol`);
    if (protocol !== undefined && !PROTOCOLS.has(protocol)) {
      throw new ValidationError(
        object,
        `${at}.protocol`,
        `${JSON.stringify(protocol)} is not TCP, UDP or SCTP`,
      );
    }
    return {
      containerPort,
      ...optional('hostPort', readNumber(p['hostPort'], object, `${at}.hostPort`, true)),
      ...optional('protocol', protocol as ContainerPort['protocol']),
      ...optional('hostIP', readString(p['hostIP'], object, `${at}.hostIP`)),
    };
  });
  const resources = readObject(c['resources'], object, `${field}.resources`);
  return {
    ...optional('name', readString(c['name'], object, `${field}.name`)),
    ...optional('requests', readResources(resources?.['requests'], object, `${field}.resources.requests`)),
    ...(ports.length > 0 ? { ports } : {}),
  };
}

function toPodAffinityTerm(
  t: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): PodAffinityTerm {
  const namespaces = readStrings(t['namespaces'], object, `${field}.namespaces`);
  return {
    topologyKey: requireString(t['topologyKey'], object, `${field}.topologyKey`),
    ...optional(
      'labelSelector',
      t['labelSelector'] == null
        ? undefined
        : toLabelSelector(t['labelSelector'], object, `${field}.labelSelector`),
    ),
    ...optional('namespaces', namespaces.length > 0 ? namespaces : undefined),
    ...optional(
      'namespaceSelector',
      t['namespaceSelector'] == null
        ? undefined
        : toLabelSelector(t['namespaceSelector'], object, `${field}.namespaceSelector`),
    ),
  };
}

function toAffinity(a: Readonly<Record<string, unknown>>, object: string, field: string): Affinity {
  const na = readObject(a['nodeAffinity'], object, `${field}.nodeAffinity`);
  const nodeAffinity = (na: Readonly<Record<string, unknown>>): NonNullable<Affinity['nodeAffinity']> => {
    const required = readObject(
      na['requiredDuringSchedulingIgnoredDuringExecution'],
      object,
      `${field}.nodeAffinity.required`,
    );
    const preferred = na['preferredDuringSchedulingIgnoredDuringExecution'];
    return {
      ...optional(
        'requiredDuringSchedulingIgnoredDuringExecution',
        required
          ? {
              nodeSelectorTerms: readList(
                required['nodeSelectorTerms'],
                object,
                `${field}.nodeAffinity.required.nodeSelectorTerms`,
              ).map((t, i) =>
                toNodeSelectorTerm(t, object, `${field}.nodeAffinity.required.nodeSelectorTerms[${i}]`),
              ),
            }
          : undefined,
      ),
      ...optional(
        'preferredDuringSchedulingIgnoredDuringExecution',
        preferred == null
          ? undefined
          : readEach(preferred, object, `${field}.nodeAffinity.preferred`, (p, at) => ({
              weight: requireWeight(p['weight'], object, `${at}.weight`),
              preference: toNodeSelectorTerm(p['preference'], object, `${at}.preference`),
            })),
      ),
    };
  };
  const podTerms = (kind: 'podAffinity' | 'podAntiAffinity') => {
    const src = readObject(a[kind], object, `${field}.${kind}`);
    if (src === undefined) return undefined;
    const required = src['requiredDuringSchedulingIgnoredDuringExecution'];
    const preferred = src['preferredDuringSchedulingIgnoredDuringExecution'];
    return {
      ...optional(
        'requiredDuringSchedulingIgnoredDuringExecution',
        required == null
          ? undefined
          : readEach(required, object, `${field}.${kind}.required`, (t, at) =>
              toPodAffinityTerm(t, object, at),
            ),
      ),
      ...optional(
        'preferredDuringSchedulingIgnoredDuringExecution',
        preferred == null
          ? undefined
          : readEach(preferred, object, `${field}.${kind}.preferred`, (w, at) => {
              const term = readObject(w['podAffinityTerm'], object, `${at}.podAffinityTerm`);
              if (term === undefined) throw new ValidationError(object, `${at}.podAffinityTerm`, 'missing');
              return {
                weight: requireWeight(w['weight'], object, `${at}.weight`),
                podAffinityTerm: toPodAffinityTerm(term, object, at),
              };
            }),
      ),
    };
  };
  return {
    ...optional('nodeAffinity', na === undefined ? undefined : nodeAffinity(na)),
    ...optional('podAffinity', podTerms('podAffinity')),
    ...optional('podAntiAffinity', podTerms('podAntiAffinity')),
  };
}

function requireWeight(value: unknown, object: string, field: string): number {
  const weight = readNumber(value, object, field, true);
  if (weight === undefined) throw new ValidationError(object, field, 'missing');
  return weight;
}

const SPREAD_POLICIES: ReadonlySet<string> = new Set(['Honor', 'Ignore']);

function toSpread(
  c: Readonly<Record<string, unknown>>,
  object: string,
  field: string,
): TopologySpreadConstraint {
  const whenUnsatisfiable = readString(c['whenUnsatisfiable'], object, `${field}.whenUnsatisfiable`);
  if (whenUnsatisfiable !== 'DoNotSchedule' && whenUnsatisfiable !== 'ScheduleAnyway') {
    throw new ValidationError(
      object,
      `${field}.whenUnsatisfiable`,
      `${whenUnsatisfiable === undefined ? 'missing' : JSON.stringify(whenUnsatisfiable)}; must be DoNotSchedule or ScheduleAnyway`,
    );
  }
  const policy = (key: 'nodeAffinityPolicy' | 'nodeTaintsPolicy') => {
    const value = readString(c[key], object, `${field}.${key}`);
    if (value !== undefined && !SPREAD_POLICIES.has(value)) {
      throw new ValidationError(object, `${field}.${key}`, `${JSON.stringify(value)} is not Honor or Ignore`);
    }
    return value as 'Honor' | 'Ignore' | undefined;
  };
  const maxSkew = readNumber(c['maxSkew'], object, `${field}.maxSkew`, true);
  if (maxSkew === undefined) throw new ValidationError(object, `${field}.maxSkew`, 'missing');
  const matchLabelKeys = readStrings(c['matchLabelKeys'], object, `${field}.matchLabelKeys`);
  return {
    maxSkew,
    topologyKey: requireString(c['topologyKey'], object, `${field}.topologyKey`),
    whenUnsatisfiable,
    ...optional(
      'labelSelector',
      c['labelSelector'] == null
        ? undefined
        : toLabelSelector(c['labelSelector'], object, `${field}.labelSelector`),
    ),
    ...optional('minDomains', readNumber(c['minDomains'], object, `${field}.minDomains`, true)),
    ...optional('nodeAffinityPolicy', policy('nodeAffinityPolicy')),
    ...optional('nodeTaintsPolicy', policy('nodeTaintsPolicy')),
    ...optional('matchLabelKeys', matchLabelKeys.length > 0 ? matchLabelKeys : undefined),
  };
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
