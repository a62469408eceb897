import type {
  V1Affinity,
  V1Container,
  V1DaemonSet,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodAffinityTerm,
  V1PodSpec,
  V1StorageClass,
  V1TopologySpreadConstraint,
} from '@kubernetes/client-node';
import {
  type Affinity,
  Annotation,
  type Container,
  type ContainerPort,
  type DaemonSet,
  type InitContainer,
  Label,
  type NodeSelectorRequirement,
  type Pod,
  type PodAffinityTerm,
  type PodDisruptionInfo,
  parseResourceList,
  type TopologySpreadConstraint,
  ValidationError,
  type VolumeTopology,
} from '../core/index.ts';
import {
  nonEmpty,
  optional,
  podObject,
  toLabelSelector,
  toMs,
  toNodeSelectorRequirements,
  toNodeSelectorTerm,
  toToleration,
} from './fields.ts';
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
  return {
    claims: new Map(claims.map((c) => [`${c.metadata?.namespace}/${c.metadata?.name}`, c])),
    volumes: new Map(volumes.map((v) => [v.metadata?.name ?? '', v])),
    storageClasses: new Map(storageClasses.map((s) => [s.metadata?.name ?? '', s])),
  };
}

/** True when the pod mounts a PersistentVolumeClaim or a generic ephemeral volume. */
export function usesClaims(pod: V1Pod): boolean {
  return (pod.spec?.volumes ?? []).some(
    (v) => v.persistentVolumeClaim !== undefined || v.ephemeral !== undefined,
  );
}

/**
 * Converts a pod. `volumes` resolves its claims into VolumeTopology; without it, a pod that uses
 * claims gets none.
 * @throws ValidationError for a malformed quantity, operator, taint effect or missing claim.
 */
export function toPod(raw: V1Pod, volumes?: VolumeIndex): Pod {
  const meta = raw.metadata;
  const object = podObject(meta?.namespace, meta?.name);
  if (!meta?.name || !meta.namespace || !meta.uid) {
    throw new ValidationError(object, 'metadata', 'name, namespace and uid are required');
  }
  const spec = raw.spec;
  if (spec === undefined) throw new ValidationError(object, 'spec', 'missing');
  const volumeTopology = volumes === undefined ? [] : toVolumeTopology(raw, volumes);
  return {
    uid: meta.uid,
    name: meta.name,
    namespace: meta.namespace,
    ...optional('labels', nonEmpty(meta.labels)),
    ...optional('createdAtMs', meta.creationTimestamp ? toMs(meta.creationTimestamp) : undefined),
    ...toPodSpec(spec, object, 'spec'),
    ...(volumeTopology.length > 0 ? { volumeTopology } : {}),
    ...optional('daemonSetName', meta.ownerReferences?.find((o) => o.kind === 'DaemonSet')?.name),
    ...optional('disruption', toDisruptionInfo(raw)),
  };
}

/** What voluntary disruption reads of a pod's metadata; undefined when there is nothing to read. */
function toDisruptionInfo(raw: V1Pod): PodDisruptionInfo | undefined {
  const annotations = raw.metadata?.annotations ?? {};
  const cost = annotations[DELETION_COST];
  const deletionCost = cost === undefined || !/^-?\d+$/.test(cost) ? undefined : Number(cost);
  const startTime = raw.status?.startTime;
  const info: PodDisruptionInfo = {
    ...optional('doNotDisrupt', annotations[Annotation.doNotDisrupt]),
    ...optional('deletionCost', deletionCost),
    ...(annotations[Annotation.configMirror] === undefined ? {} : { mirror: true }),
    ...optional('priority', raw.spec?.priority),
    ...optional('startedAtMs', startTime === undefined ? undefined : toMs(startTime)),
  };
  return Object.keys(info).length === 0 ? undefined : info;
}

/** `controller.kubernetes.io/pod-deletion-cost`: an int32; others are ignored, as the ReplicaSet controller does. */
const DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';

/** The scheduling fields of a pod spec (also used for DaemonSet templates). */
function toPodSpec(spec: V1PodSpec, object: string, field: string): Omit<Pod, 'uid' | 'name' | 'namespace'> {
  const containers = spec.containers.map((c, i) => toContainer(c, object, `${field}.containers[${i}]`));
  const initContainers = (spec.initContainers ?? []).map(
    (c, i): InitContainer => ({
      ...toContainer(c, object, `${field}.initContainers[${i}]`),
      ...(c.restartPolicy === 'Always' ? { restartPolicy: 'Always' as const } : {}),
    }),
  );
  return {
    containers,
    ...(initContainers.length > 0 ? { initContainers } : {}),
    ...optional(
      'overhead',
      spec.overhead ? parseResourceList(spec.overhead, { object, field: `${field}.overhead` }) : undefined,
    ),
    ...optional(
      'podRequests',
      spec.resources?.requests
        ? parseResourceList(spec.resources.requests, { object, field: `${field}.resources.requests` })
        : undefined,
    ),
    ...optional('nodeSelector', nonEmpty(spec.nodeSelector)),
    ...optional(
      'affinity',
      spec.affinity ? toAffinity(spec.affinity, object, `${field}.affinity`) : undefined,
    ),
    ...optional(
      'tolerations',
      spec.tolerations?.length
        ? spec.tolerations.map((t, i) => toToleration(t, object, `${field}.tolerations[${i}]`))
        : undefined,
    ),
    ...optional(
      'topologySpreadConstraints',
      spec.topologySpreadConstraints?.length
        ? spec.topologySpreadConstraints.map((c, i) =>
            toSpread(c, object, `${field}.topologySpreadConstraints[${i}]`),
          )
        : undefined,
    ),
  };
}

function toContainer(c: V1Container, object: string, field: string): Container {
  const ports = (c.ports ?? []).map(
    (p): ContainerPort => ({
      containerPort: p.containerPort,
      ...optional('hostPort', p.hostPort),
      ...optional('protocol', p.protocol as ContainerPort['protocol']),
      ...optional('hostIP', p.hostIP),
    }),
  );
  return {
    name: c.name,
    ...optional(
      'requests',
      c.resources?.requests
        ? parseResourceList(c.resources.requests, { object, field: `${field}.resources.requests` })
        : undefined,
    ),
    ...(ports.length > 0 ? { ports } : {}),
  };
}

function toPodAffinityTerm(t: V1PodAffinityTerm, object: string, field: string): PodAffinityTerm {
  return {
    topologyKey: t.topologyKey,
    ...optional(
      'labelSelector',
      t.labelSelector ? toLabelSelector(t.labelSelector, object, `${field}.labelSelector`) : undefined,
    ),
    ...optional('namespaces', t.namespaces?.length ? t.namespaces : undefined),
    ...optional(
      'namespaceSelector',
      t.namespaceSelector
        ? toLabelSelector(t.namespaceSelector, object, `${field}.namespaceSelector`)
        : undefined,
    ),
  };
}

function toAffinity(a: V1Affinity, object: string, field: string): Affinity {
  const na = a.nodeAffinity;
  const required = na?.requiredDuringSchedulingIgnoredDuringExecution;
  const nodeAffinity: Affinity['nodeAffinity'] =
    na === undefined
      ? undefined
      : {
          ...optional(
            'requiredDuringSchedulingIgnoredDuringExecution',
            required
              ? {
                  nodeSelectorTerms: required.nodeSelectorTerms.map((t, i) =>
                    toNodeSelectorTerm(t, object, `${field}.nodeAffinity.required.nodeSelectorTerms[${i}]`),
                  ),
                }
              : undefined,
          ),
          ...optional(
            'preferredDuringSchedulingIgnoredDuringExecution',
            na.preferredDuringSchedulingIgnoredDuringExecution?.map((p, i) => ({
              weight: p.weight,
              preference: toNodeSelectorTerm(
                p.preference,
                object,
                `${field}.nodeAffinity.preferred[${i}].preference`,
              ),
            })),
          ),
        };
  const podTerms = (kind: 'podAffinity' | 'podAntiAffinity') => {
    const src = a[kind];
    if (src === undefined) return undefined;
    return {
      ...optional(
        'requiredDuringSchedulingIgnoredDuringExecution',
        src.requiredDuringSchedulingIgnoredDuringExecution?.map((t, i) =>
          toPodAffinityTerm(t, object, `${field}.${kind}.required[${i}]`),
        ),
      ),
      ...optional(
        'preferredDuringSchedulingIgnoredDuringExecution',
        src.preferredDuringSchedulingIgnoredDuringExecution?.map((w, i) => ({
          weight: w.weight,
          podAffinityTerm: toPodAffinityTerm(w.podAffinityTerm, object, `${field}.${kind}.preferred[${i}]`),
        })),
      ),
    };
  };
  return {
    ...optional('nodeAffinity', nodeAffinity),
    ...optional('podAffinity', podTerms('podAffinity')),
    ...optional('podAntiAffinity', podTerms('podAntiAffinity')),
  };
}

function toSpread(c: V1TopologySpreadConstraint, object: string, field: string): TopologySpreadConstraint {
  if (c.whenUnsatisfiable !== 'DoNotSchedule' && c.whenUnsatisfiable !== 'ScheduleAnyway') {
    throw new ValidationError(
      object,
      `${field}.whenUnsatisfiable`,
      `${JSON.stringify(c.whenUnsatisfiable)} is not DoNotSchedule or ScheduleAnyway`,
    );
  }
  return {
    maxSkew: c.maxSkew,
    topologyKey: c.topologyKey,
    whenUnsatisfiable: c.whenUnsatisfiable,
    ...optional(
      'labelSelector',
      c.labelSelector ? toLabelSelector(c.labelSelector, object, `${field}.labelSelector`) : undefined,
    ),
    ...optional('minDomains', c.minDomains),
    ...optional('nodeAffinityPolicy', c.nodeAffinityPolicy as 'Honor' | 'Ignore' | undefined),
    ...optional('nodeTaintsPolicy', c.nodeTaintsPolicy as 'Honor' | 'Ignore' | undefined),
    ...optional('matchLabelKeys', c.matchLabelKeys?.length ? c.matchLabelKeys : undefined),
  };
}

/**
 * The topology each of the pod's claims imposes, as Karpenter's volumetopology.go: a bound PV's
 * first node-affinity term (hostname requirements dropped: a new node can never match them), or
 * for an unbound claim the first `allowedTopologies` term of its StorageClass. A generic
 * ephemeral volume's claim is `<pod>-<volume>`; before it exists its template's class is used.
 * @throws ValidationError when a claim, its volume or its StorageClass does not exist.
 */
export function toVolumeTopology(pod: V1Pod, index: VolumeIndex): VolumeTopology[] {
  const namespace = pod.metadata?.namespace ?? '';
  const object = podObject(namespace, pod.metadata?.name);
  const out: VolumeTopology[] = [];
  for (const [i, volume] of (pod.spec?.volumes ?? []).entries()) {
    let claimName: string;
    let fallbackClass: string | undefined;
    if (volume.persistentVolumeClaim) {
      claimName = volume.persistentVolumeClaim.claimName;
    } else if (volume.ephemeral) {
      claimName = `${pod.metadata?.name}-${volume.name}`;
      fallbackClass = volume.ephemeral.volumeClaimTemplate?.spec.storageClassName;
    } else {
      continue;
    }
    const field = `spec.volumes[${i}]`;
    const claim = index.claims.get(`${namespace}/${claimName}`);
    if (claim === undefined && volume.persistentVolumeClaim) {
      throw new ValidationError(
        object,
        field,
        `persistentVolumeClaim "${claimName}" does not exist; create it first`,
      );
    }
    const volumeName = claim?.spec?.volumeName;
    if (volumeName) {
      const pv = index.volumes.get(volumeName);
      if (pv === undefined) {
        throw new ValidationError(
          object,
          field,
          `claim "${claimName}" is bound to persistentVolume "${volumeName}", which does not exist`,
        );
      }
      const term = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms[0];
      const requirements = toNodeSelectorRequirements(
        term?.matchExpressions,
        `persistentVolume "${volumeName}"`,
        'spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions',
      ).filter((r) => r.key !== Label.hostname);
      if (requirements.length > 0) out.push({ claimName, requirements });
      continue;
    }
    const className = claim?.spec?.storageClassName ?? fallbackClass;
    if (!className) continue;
    const storageClass = index.storageClasses.get(className);
    if (storageClass === undefined) {
      throw new ValidationError(
        object,
        field,
        `storageClass "${className}" of claim "${claimName}" does not exist`,
      );
    }
    const terms = storageClass.allowedTopologies?.[0]?.matchLabelExpressions ?? [];
    const requirements = terms.map(
      (e): NodeSelectorRequirement => ({ key: e.key, operator: 'In', values: e.values }),
    );
    if (requirements.length > 0) out.push({ claimName, requirements });
  }
  return out;
}

/** Converts a DaemonSet; its template becomes a pod named after the DaemonSet. */
export function toDaemonSet(raw: V1DaemonSet): DaemonSet {
  const meta = raw.metadata;
  const object = `daemonSet "${meta?.namespace ?? '<no namespace>'}/${meta?.name ?? '<unnamed>'}"`;
  if (!meta?.name || !meta.namespace)
    throw new ValidationError(object, 'metadata', 'name and namespace are required');
  const spec = raw.spec?.template.spec;
  if (spec === undefined) throw new ValidationError(object, 'spec.template.spec', 'missing');
  return {
    namespace: meta.namespace,
    name: meta.name,
    template: {
      uid: meta.uid ?? `${meta.namespace}/${meta.name}`,
      name: meta.name,
      namespace: meta.namespace,
      ...optional('labels', nonEmpty(raw.spec?.template.metadata?.labels)),
      ...toPodSpec(spec, object, 'spec.template.spec'),
    },
  };
}
