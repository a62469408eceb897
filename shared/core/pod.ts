import type { Labels } from './labels.ts';
import type { NodeSelectorRequirement } from './requirements.ts';
import { Resource, type ResourceList } from './resources.ts';
import type { Toleration } from './taints.ts';

/** A container port; only `hostPort` matters for scheduling. */
export interface ContainerPort {
  readonly containerPort: number;
  /** When set, the port is bound on the node and two pods may not share it. */
  readonly hostPort?: number;
  /** Default `TCP`. */
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
  /** Default `0.0.0.0` (all addresses). */
  readonly hostIP?: string;
}

/**
 * What the kubelet reports of a container's requests (`status.containerStatuses[]` or
 * `status.initContainerStatuses[]` of the same name, when it has `resources`): in-place pod resize
 * may leave them apart from the spec while a resize is under way or refused.
 */
export interface ContainerResourceStatus {
  /** `resources.requests`: what the container runs with now. */
  readonly actual?: ResourceList;
  /** `allocatedResources`: what the node admitted for it. */
  readonly allocated?: ResourceList;
}

/** A container's resource requests (integers, see ResourceList) and ports. */
export interface Container {
  readonly name?: string;
  readonly requests?: ResourceList;
  readonly ports?: readonly ContainerPort[];
  /** What its status reports of its requests; absent when the status reports no resources. */
  readonly status?: ContainerResourceStatus;
}

/** An init container; `restartPolicy: 'Always'` makes it a sidecar that keeps running. */
export interface InitContainer extends Container {
  readonly restartPolicy?: 'Always';
}

/** Set-based label selector (`matchLabels` ANDed with `matchExpressions`). */
export interface LabelSelector {
  readonly matchLabels?: Labels;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values?: readonly string[];
  }[];
}

/** A term of node affinity: its requirements are ANDed. */
export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  /**
   * Requirements on the node's fields: `metadata.name` with In or NotIn, the only field the API
   * server admits (the DaemonSet controller pins each of its pods to its node this way). No new
   * node can satisfy an In: its name is not known before it joins.
   */
  readonly matchFields?: readonly NodeSelectorRequirement[];
}

/** The node field `matchFields` may name. */
export const NODE_NAME_FIELD = 'metadata.name';

/** Whether a node named `nodeName` satisfies the term's `matchFields` (true when it has none). */
export function admitsNodeName(term: NodeSelectorTerm, nodeName: string): boolean {
  return (term.matchFields ?? []).every((r) => {
    switch (r.operator) {
      case 'In':
        return (r.values ?? []).includes(nodeName);
      case 'NotIn':
        return !(r.values ?? []).includes(nodeName);
      case 'Exists':
        return true;
      default:
        return false;
    }
  });
}

/**
 * Whether a node that has yet to join can satisfy the term's `matchFields`: not when they ask for
 * names (In), as a new node's name is unknown until it registers; a NotIn holds for it.
 */
export function admitsNewNode(term: NodeSelectorTerm): boolean {
  return (term.matchFields ?? []).every((r) => r.operator === 'NotIn' || r.operator === 'Exists');
}

/** `metadata.name In [a]` for messages; empty when the term has no matchFields. */
export function formatMatchFields(term: NodeSelectorTerm): string {
  return (term.matchFields ?? [])
    .map((r) => `${r.key} ${r.operator} [${(r.values ?? []).join(', ')}]`)
    .join(', ');
}

/** Pod (anti-)affinity term: "pods matching `labelSelector` in `namespaces` within `topologyKey`". */
export interface PodAffinityTerm {
  readonly labelSelector?: LabelSelector;
  /** Default: the pod's own namespace (unless `namespaceSelector` is set). */
  readonly namespaces?: readonly string[];
  /** Selects namespaces by their labels (SolveInput.namespaceLabels); `{}` selects all. */
  readonly namespaceSelector?: LabelSelector;
  readonly topologyKey: string;
}

export interface WeightedPodAffinityTerm {
  /** 1..100; heavier terms are relaxed first. */
  readonly weight: number;
  readonly podAffinityTerm: PodAffinityTerm;
}

export interface Affinity {
  readonly nodeAffinity?: {
    /** Terms are ORed. Karpenter tries them in order. */
    readonly requiredDuringSchedulingIgnoredDuringExecution?: {
      readonly nodeSelectorTerms: readonly NodeSelectorTerm[];
    };
    readonly preferredDuringSchedulingIgnoredDuringExecution?: readonly {
      readonly weight: number;
      readonly preference: NodeSelectorTerm;
    }[];
  };
  readonly podAffinity?: {
    readonly requiredDuringSchedulingIgnoredDuringExecution?: readonly PodAffinityTerm[];
    readonly preferredDuringSchedulingIgnoredDuringExecution?: readonly WeightedPodAffinityTerm[];
  };
  readonly podAntiAffinity?: {
    readonly requiredDuringSchedulingIgnoredDuringExecution?: readonly PodAffinityTerm[];
    readonly preferredDuringSchedulingIgnoredDuringExecution?: readonly WeightedPodAffinityTerm[];
  };
}

export interface TopologySpreadConstraint {
  readonly maxSkew: number;
  readonly topologyKey: string;
  readonly whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  readonly labelSelector?: LabelSelector;
  readonly minDomains?: number;
  /** Default `Honor`: only nodes matching the pod's node selector/affinity form domains. */
  readonly nodeAffinityPolicy?: 'Honor' | 'Ignore';
  /** Default `Ignore`: node taints do not exclude a node from the domains. */
  readonly nodeTaintsPolicy?: 'Honor' | 'Ignore';
  /** Label keys whose values, taken from the pod, are ANDed into the selector. */
  readonly matchLabelKeys?: readonly string[];
}

/**
 * Topology a pod's volume claim imposes: a bound PersistentVolume's node affinity, or the
 * StorageClass `allowedTopologies` of an unbound WaitForFirstConsumer claim, already resolved by
 * the adapter. The terms are ORed (a PV's `nodeSelectorTerms`, a class's `allowedTopologies`),
 * the requirements of one term ANDed (typically `topology.kubernetes.io/zone In [...]`).
 */
export interface VolumeTopology {
  readonly claimName: string;
  readonly terms: readonly (readonly NodeSelectorRequirement[])[];
}

/**
 * A volume of the pod backed by a PersistentVolumeClaim: `claim` names the claim, `ephemeral` the
 * volume whose claim the ephemeral-volume controller names `<pod>-<volume>`.
 */
export interface ClaimVolume {
  readonly kind: 'claim' | 'ephemeral';
  readonly name: string;
}

/** The claims the pod mounts, as `namespace/name`, in volume order. */
export function podClaimIds(pod: Pod): string[] {
  return (pod.claimVolumes ?? []).map((v) =>
    v.kind === 'claim' ? `${pod.namespace}/${v.name}` : `${pod.namespace}/${pod.name}-${v.name}`,
  );
}

/** A pod, pending or bound, with the fields scheduling reads. Quantities are already integers. */
export interface Pod {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  readonly labels?: Labels;
  /** Creation time in epoch milliseconds; tie-break for scheduling order. */
  readonly createdAtMs?: number;
  readonly containers: readonly Container[];
  readonly initContainers?: readonly InitContainer[];
  /** RuntimeClass pod overhead, added to the requests. */
  readonly overhead?: ResourceList;
  /**
   * Pod-level requests (`spec.resources.requests`): for cpu, memory and hugepages they replace the
   * container aggregate where set (see computePodRequests).
   */
  readonly podRequests?: ResourceList;
  readonly nodeSelector?: Labels;
  readonly affinity?: Affinity;
  readonly tolerations?: readonly Toleration[];
  readonly topologySpreadConstraints?: readonly TopologySpreadConstraint[];
  readonly volumeTopology?: readonly VolumeTopology[];
  /** Volumes backed by claims (counted against CSI attach limits, see SolveInput.claimDrivers). */
  readonly claimVolumes?: readonly ClaimVolume[];
  /**
   * The pod asks for devices through Dynamic Resource Allocation: `spec.resourceClaims`, or
   * `resources.claims` of a container or init container. Not provisioned for (see scheduler.ts).
   */
  readonly dynamicResources?: true;
  /**
   * Its `PodResizePending` condition has reason `Infeasible`: the node cannot take the resize, so
   * the containers' spec requests do not count where their status reports resources.
   */
  readonly resizeInfeasible?: true;
  /**
   * The DaemonSet that owns the pod (an ownerReference of kind DaemonSet, same namespace). Read
   * only for pods bound to existing nodes, to tell which DaemonSet pods already run there.
   */
  readonly daemonSetName?: string;
  /**
   * What voluntary disruption reads of a bound pod's metadata (left out for pending pods): the
   * `karpenter.sh/do-not-disrupt` value, `controller.kubernetes.io/pod-deletion-cost`, whether it
   * is a static pod's mirror, its priority and when it started (epoch milliseconds).
   */
  readonly disruption?: PodDisruptionInfo;
}

/** A bound pod's metadata that disruption decisions read. */
export interface PodDisruptionInfo {
  readonly doNotDisrupt?: string;
  readonly deletionCost?: number;
  readonly mirror?: boolean;
  readonly priority?: number;
  readonly startedAtMs?: number;
  /** Its phase is Succeeded or Failed. */
  readonly finished?: boolean;
  /** Its Ready condition is False (absent when True, missing, or not read). */
  readonly notReady?: boolean;
  /** `metadata.deletionTimestamp` in epoch milliseconds, when the pod is terminating. */
  readonly deletedAtMs?: number;
  /** Owned by a StatefulSet, which recreates the pod only once it is gone. */
  readonly statefulSet?: boolean;
}

/** A pod's identity in results. */
export interface PodRef {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
}

export function toPodRef(pod: Pod): PodRef {
  return { uid: pod.uid, namespace: pod.namespace, name: pod.name };
}

/**
 * Whether Kubernetes honours a pod-level (`spec.resources`) value for this resource: cpu, memory
 * and hugepages (component-helpers' IsSupportedPodLevelResource). Others at pod level are ignored.
 */
function isPodLevelResource(name: string): boolean {
  return name === Resource.cpu || name === Resource.memory || name.startsWith('hugepages-');
}

/**
 * What the pod needs from a node, as Karpenter counts it (component-helpers' PodRequests with the
 * status resources, as kube-scheduler with in-place pod resize): the larger of (containers +
 * sidecars) and the largest init-container step (each step also holding the sidecars started
 * before it); then each resource named in the pod-level requests (`spec.resources.requests`,
 * PodLevelResources) takes the pod-level value instead, resources it does not name keep the
 * container value; then pod overhead is added on top, and `pods: 1`. A container or sidecar whose
 * status reports resources counts, per resource, the largest of its spec requests, the requests it
 * runs with and those the node allocated to it (the spec left out when the resize is infeasible);
 * other init containers count their spec requests.
 */
export function computePodRequests(pod: Pod): ResourceList {
  const sum: Record<string, number> = {};
  const infeasible = pod.resizeInfeasible === true;
  for (const c of pod.containers) addInto(sum, effectiveRequests(c, infeasible));
  const sidecars: Record<string, number> = {};
  const initPeak: Record<string, number> = {};
  for (const c of pod.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      addInto(sidecars, effectiveRequests(c, infeasible));
      maxInto(initPeak, sidecars);
    } else {
      const step: Record<string, number> = { ...sidecars };
      addInto(step, c.requests);
      maxInto(initPeak, step);
    }
  }
  addInto(sum, sidecars);
  maxInto(sum, initPeak);
  const podLevel = pod.podRequests;
  for (const name in podLevel) {
    if (Object.hasOwn(podLevel, name) && isPodLevelResource(name)) sum[name] = podLevel[name] as number;
  }
  addInto(sum, pod.overhead);
  sum[Resource.pods] = (sum[Resource.pods] ?? 0) + 1;
  return sum;
}

/**
 * A container's requests as the node holds them: its spec requests, or, when its status reports
 * resources, the larger per resource of those and what it runs with and was allocated (without
 * the spec when `infeasible`).
 */
function effectiveRequests(c: Container, infeasible: boolean): ResourceList | undefined {
  if (c.status === undefined) return c.requests;
  const out: Record<string, number> = infeasible ? {} : { ...c.requests };
  maxInto(out, c.status.actual ?? {});
  maxInto(out, c.status.allocated ?? {});
  return out;
}

/** Host ports the pod binds, as `protocol/ip/port` keys (ip `0.0.0.0` when unset). */
export function podHostPorts(pod: Pod): string[] {
  const out: string[] = [];
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort === undefined || p.hostPort <= 0) continue;
      out.push(`${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}/${p.hostPort}`);
    }
  }
  return out;
}

/** Two host-port keys conflict on the same protocol and port when either binds all addresses. */
export function hostPortsConflict(a: string, b: string): boolean {
  if (a === b) return true;
  const [pa, ia, na] = a.split('/');
  const [pb, ib, nb] = b.split('/');
  return pa === pb && na === nb && (ia === '0.0.0.0' || ib === '0.0.0.0');
}

/** Kubernetes label-selector matching. An undefined selector matches nothing; `{}` matches all. */
export function matchesSelector(selector: LabelSelector | undefined, labels: Labels | undefined): boolean {
  if (selector === undefined) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const v = l[e.key];
    switch (e.operator) {
      case 'In':
        if (v === undefined || !(e.values ?? []).includes(v)) return false;
        break;
      case 'NotIn':
        if (v !== undefined && (e.values ?? []).includes(v)) return false;
        break;
      case 'Exists':
        if (v === undefined) return false;
        break;
      case 'DoesNotExist':
        if (v !== undefined) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

// Both walk a list's own keys in the order Object.entries gives them, without building pairs
// (this runs for every pending pod).
function addInto(target: Record<string, number>, list: ResourceList | undefined): void {
  if (list === undefined) return;
  for (const name in list) {
    if (Object.hasOwn(list, name)) target[name] = (target[name] ?? 0) + (list[name] as number);
  }
}

function maxInto(target: Record<string, number>, list: ResourceList): void {
  for (const name in list) {
    if (Object.hasOwn(list, name)) target[name] = Math.max(target[name] ?? 0, list[name] as number);
  }
}
