import type {
  V1Affinity,
  V1Container,
  V1DaemonSet,
  V1LabelSelector,
  V1Node,
  V1NodeSelectorTerm,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodAffinityTerm,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1StorageClass,
  V1Taint,
  V1Toleration,
  V1TopologySpreadConstraint,
  V1VolumeAttachment,
} from '@kubernetes/client-node';
import {
  type Affinity,
  type Container,
  type ContainerPort,
  type DaemonSet,
  type InitContainer,
  Label,
  type LabelSelector,
  type Labels,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type Operator,
  type Pod,
  type PodAffinityTerm,
  parseResourceList,
  type ResourceList,
  type Taint,
  type TaintEffect,
  type Toleration,
  type TopologySpreadConstraint,
  ValidationError,
  type VolumeTopology,
} from '../../core/index.ts';
import type { ClusterNode, DrainPod, PodDisruptionBudget, VolumeAttachment } from '../../ports/cluster.ts';

// Pure conversions from @kubernetes/client-node objects into shared/core types. Each throws
// ValidationError naming the object and the field; callers skip and report such objects.

const NODE_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']);
const SELECTOR_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);
const TAINT_EFFECTS: ReadonlySet<string> = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/** `pod "ns/name"`, for error messages. */
export function podObject(namespace: string | undefined, name: string | undefined): string {
  return `pod "${namespace ?? '<no namespace>'}/${name ?? '<unnamed>'}"`;
}

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
  };
}

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

/** Node selector requirements, checked for known operators. */
export function toNodeSelectorRequirements(
  raw: readonly { key: string; operator: string; values?: string[] | undefined }[] | undefined,
  object: string,
  field: string,
  operators: ReadonlySet<string> = NODE_OPERATORS,
): NodeSelectorRequirement[] {
  return (raw ?? []).map((r, i) => {
    if (!operators.has(r.operator)) {
      throw new ValidationError(
        object,
        `${field}[${i}].operator`,
        `${JSON.stringify(r.operator)} is not one of ${[...operators].join(', ')}`,
      );
    }
    return { key: r.key, operator: r.operator as Operator, ...optional('values', r.values) };
  });
}

function toNodeSelectorTerm(term: V1NodeSelectorTerm, object: string, field: string): NodeSelectorTerm {
  if (term.matchFields?.length) {
    throw new ValidationError(
      object,
      `${field}.matchFields`,
      'matchFields is not supported (Karpenter ignores such pods)',
    );
  }
  return {
    matchExpressions: toNodeSelectorRequirements(term.matchExpressions, object, `${field}.matchExpressions`),
  };
}

/** A label selector, checked for known operators. */
export function toLabelSelector(raw: V1LabelSelector, object: string, field: string): LabelSelector {
  const matchExpressions = (raw.matchExpressions ?? []).map((e, i) => {
    if (!SELECTOR_OPERATORS.has(e.operator)) {
      throw new ValidationError(
        object,
        `${field}.matchExpressions[${i}].operator`,
        `${JSON.stringify(e.operator)} is not one of In, NotIn, Exists, DoesNotExist`,
      );
    }
    return {
      key: e.key,
      operator: e.operator as 'In' | 'NotIn' | 'Exists' | 'DoesNotExist',
      ...optional('values', e.values),
    };
  });
  return {
    ...optional('matchLabels', raw.matchLabels),
    ...(matchExpressions.length > 0 ? { matchExpressions } : {}),
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

function toToleration(t: V1Toleration, object: string, field: string): Toleration {
  if (t.effect && !TAINT_EFFECTS.has(t.effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(t.effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  if (t.operator && t.operator !== 'Exists' && t.operator !== 'Equal') {
    throw new ValidationError(
      object,
      `${field}.operator`,
      `${JSON.stringify(t.operator)} is not Exists or Equal`,
    );
  }
  return {
    ...optional('key', t.key),
    ...optional('operator', t.operator as 'Exists' | 'Equal' | undefined),
    ...optional('value', t.value),
    ...optional('effect', (t.effect || undefined) as TaintEffect | undefined),
  };
}

/** A taint as written in a Node, NodePool or NodeClaim. */
export function toTaint(t: Pick<V1Taint, 'key' | 'value' | 'effect'>, object: string, field: string): Taint {
  if (!TAINT_EFFECTS.has(t.effect)) {
    throw new ValidationError(
      object,
      `${field}.effect`,
      `${JSON.stringify(t.effect)} is not NoSchedule, PreferNoSchedule or NoExecute`,
    );
  }
  return { key: t.key, effect: t.effect as TaintEffect, ...optional('value', t.value || undefined) };
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

/** Formats an integer resource amount as a Kubernetes quantity string (exact, no rounding). */
export function toQuantityString(resource: string, amount: number): string {
  if (resource === 'cpu') return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
  for (const [suffix, shift] of [
    ['Gi', 30],
    ['Mi', 20],
    ['Ki', 10],
  ] as const) {
    const unit = 2 ** shift;
    if (amount >= unit && amount % unit === 0) return `${amount / unit}${suffix}`;
  }
  return String(amount);
}

/** A ResourceList as Kubernetes quantity strings. */
export function toQuantityMap(list: ResourceList): Record<string, string> {
  return Object.fromEntries(
    Object.entries(list).map(([name, value]) => [name, toQuantityString(name, value)]),
  );
}

function toMs(value: Date | string): number {
  return value instanceof Date ? value.getTime() : Date.parse(value);
}

function nonEmpty(labels: Labels | undefined): Labels | undefined {
  return labels === undefined || Object.keys(labels).length === 0 ? undefined : labels;
}

/** `{ [key]: value }` when value is defined, else `{}` (for exactOptionalPropertyTypes). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
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
    terminationGracePeriodSeconds: raw.spec?.terminationGracePeriodSeconds ?? 30,
    volumeNames,
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
