import type { V1Node, V1Pod, V1PodDisruptionBudget, V1VolumeAttachment } from '@kubernetes/client-node';
import { Label, type Pod, ValidationError } from '../core/index.ts';
import type {
  ClusterNode,
  DrainPod,
  NodeCondition,
  PodDisruptionBudget,
  VolumeAttachment,
} from '../ports/cluster.ts';
import {
  checkObjectName,
  convertEach,
  objectName,
  optional,
  readBoolean,
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
  toTaint,
  toToleration,
} from './fields.ts';
// Nodes, and what a drain reads: the pods on a node, PodDisruptionBudgets, VolumeAttachments. Each
// conversion reads through the guarded readers of fields.ts and throws ValidationError naming the
// object and the field.

/** Bound pods grouped by node: those read, and the problems of those that could not be. */
export interface PodsByNode {
  readonly pods: ReadonlyMap<string, readonly Pod[]>;
  /** Node name → `pod "ns/name": field: problem` of each pod bound there that could not be read. */
  readonly unreadable: ReadonlyMap<string, readonly string[]>;
  readonly problems: readonly ValidationError[];
}

/** Builds a PodsByNode pod by pod (see groupPodsByNode). */
export function makePodsByNode(onProblem?: (problem: ValidationError) => void): {
  /** Converts one pod bound to `nodeName`; a ValidationError marks it unreadable there. */
  add(nodeName: string, convert: () => Pod): void;
  result(): PodsByNode;
} {
  const pods = new Map<string, Pod[]>();
  const unreadable = new Map<string, string[]>();
  const problems: ValidationError[] = [];
  const append = <T>(map: Map<string, T[]>, key: string, value: T) => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [value]);
    else list.push(value);
  };
  return {
    add(nodeName, convert) {
      const read = convertEach([nodeName], () => convert(), onProblem);
      for (const pod of read.items) append(pods, nodeName, pod);
      for (const problem of read.problems) {
        append(unreadable, nodeName, problem.message);
        problems.push(problem);
      }
    },
    result: () => ({ pods, unreadable, problems }),
  };
}

/**
 * Converts bound pods (`spec.nodeName` set) and groups them by node, keeping where each pod that
 * could not be read is bound, so that its node is not taken for emptier than it is.
 */
export function groupPodsByNode<R extends { readonly spec?: { readonly nodeName?: string } }>(
  bound: readonly R[],
  convert: (raw: R) => Pod,
  onProblem?: (problem: ValidationError) => void,
): PodsByNode {
  const byNode = makePodsByNode(onProblem);
  for (const raw of bound) byNode.add(raw.spec?.nodeName ?? '', () => convert(raw));
  return byNode.result();
}

/** The node with its pods, and those bound to it that could not be read (see ClusterNode). */
export function withPods(node: ClusterNode, byNode: PodsByNode): ClusterNode {
  const unreadable = byNode.unreadable.get(node.name);
  return {
    ...node,
    pods: byNode.pods.get(node.name) ?? [],
    ...(unreadable === undefined ? {} : { unreadablePods: unreadable }),
  };
}

/** Converts a Node; `pods` are the pods bound to it. */
export function toClusterNode(raw: V1Node, pods: readonly Pod[]): ClusterNode {
  const object = objectName('node', raw, false);
  const node = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(node['metadata'], object, 'metadata') ?? {};
  const name = readString(meta['name'], object, 'metadata.name');
  const uid = readString(meta['uid'], object, 'metadata.uid');
  if (!name || !uid) throw new ValidationError(object, 'metadata', 'name and uid are required');
  checkObjectName(name, object, 'metadata.name');
  const spec = readObject(node['spec'], object, 'spec') ?? {};
  const status = readObject(node['status'], object, 'status') ?? {};
  const labels = readStringMap(meta['labels'], object, 'metadata.labels') ?? {};
  const allocatable = readResources(status['allocatable'], object, 'status.allocatable') ?? {};
  const capacity = readResources(status['capacity'], object, 'status.capacity') ?? {};
  const taints = readList(spec['taints'], object, 'spec.taints').map((t, i) =>
    toTaint(t, object, `spec.taints[${i}]`),
  );
  const nodePoolName = labels[Label.nodePool];
  const rawConditions = readEach(status['conditions'], object, 'status.conditions', (c) => c);
  const ready = rawConditions.some((c) => c['type'] === 'Ready' && c['status'] === 'True');
  const conditions = rawConditions.flatMap((c) => toNodeCondition(c));
  const createdAtMs = readTime(meta['creationTimestamp'], object, 'metadata.creationTimestamp');
  const deletedAtMs = readTime(meta['deletionTimestamp'], object, 'metadata.deletionTimestamp');
  const deleting = deletedAtMs !== undefined;
  const ownerReferences = readEach(meta['ownerReferences'], object, 'metadata.ownerReferences', (o, at) => ({
    apiVersion: requireString(o['apiVersion'], object, `${at}.apiVersion`),
    kind: requireString(o['kind'], object, `${at}.kind`),
    name: requireString(o['name'], object, `${at}.name`),
    uid: requireString(o['uid'], object, `${at}.uid`),
    ...optional(
      'blockOwnerDeletion',
      readBoolean(o['blockOwnerDeletion'], object, `${at}.blockOwnerDeletion`),
    ),
  }));
  return {
    name,
    uid,
    ...optional('nodePoolName', nodePoolName),
    labels,
    annotations: readStringMap(meta['annotations'], object, 'metadata.annotations') ?? {},
    finalizers: readStrings(meta['finalizers'], object, 'metadata.finalizers'),
    ...(taints.length > 0 ? { taints } : {}),
    allocatable,
    capacity,
    pods,
    // Nodes Flotilla launched are initialized once labelled so; any other node already serves pods.
    initialized: nodePoolName === undefined ? ready : labels[Label.initialized] === 'true',
    unschedulable: readBoolean(spec['unschedulable'], object, 'spec.unschedulable') === true || deleting,
    ...optional('providerId', readString(spec['providerID'], object, 'spec.providerID')),
    ready,
    ...(conditions.length > 0 ? { conditions } : {}),
    deleting,
    ...optional('createdAtMs', createdAtMs),
    ...optional('deletedAtMs', deletedAtMs),
    ...(ownerReferences.length > 0 ? { ownerReferences } : {}),
  };
}

/**
 * A Node condition with a string type and status; others are left out (nothing reads them). A
 * transition time that is not a timestamp is kept as unknown, not as a reason to fail the Node.
 */
function toNodeCondition(raw: Readonly<Record<string, unknown>>): NodeCondition[] {
  const type = raw['type'];
  const status = raw['status'];
  if (typeof type !== 'string' || typeof status !== 'string') return [];
  const at = raw['lastTransitionTime'];
  const ms = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : Number.NaN;
  return [{ type, status, ...(Number.isNaN(ms) ? {} : { lastTransitionMs: ms }) }];
}

const POD_PHASES = new Set<DrainPod['phase']>(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown']);

/**
 * Converts a pod on a node being drained. `claimVolumes` maps `namespace/claim` to the bound
 * PersistentVolume's name.
 */
export function toDrainPod(raw: V1Pod, claimVolumes: ReadonlyMap<string, string>): DrainPod {
  const object = objectName('pod', raw, true);
  const pod = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(pod['metadata'], object, 'metadata') ?? {};
  const name = readString(meta['name'], object, 'metadata.name');
  const namespace = readString(meta['namespace'], object, 'metadata.namespace');
  const uid = readString(meta['uid'], object, 'metadata.uid');
  if (!name || !namespace || !uid)
    throw new ValidationError(object, 'metadata', 'name, namespace and uid are required');
  const spec = readObject(pod['spec'], object, 'spec') ?? {};
  const status = readObject(pod['status'], object, 'status') ?? {};
  const annotations = readStringMap(meta['annotations'], object, 'metadata.annotations') ?? {};
  const phase = readString(status['phase'], object, 'status.phase') ?? 'Pending';
  const volumeNames = readEach(spec['volumes'], object, 'spec.volumes', (v, at) => {
    const pvc = readObject(v['persistentVolumeClaim'], object, `${at}.persistentVolumeClaim`);
    const claim = readString(pvc?.['claimName'], object, `${at}.persistentVolumeClaim.claimName`);
    return claim === undefined ? undefined : claimVolumes.get(`${namespace}/${claim}`);
  }).filter((pv) => pv !== undefined);
  const owners = readEach(meta['ownerReferences'], object, 'metadata.ownerReferences', (o, at) =>
    readString(o['kind'], object, `${at}.kind`),
  );
  return {
    uid,
    namespace,
    name,
    labels: readStringMap(meta['labels'], object, 'metadata.labels') ?? {},
    annotations,
    ...optional('priorityClassName', readString(spec['priorityClassName'], object, 'spec.priorityClassName')),
    daemonSet: owners.includes('DaemonSet'),
    mirror: annotations['kubernetes.io/config.mirror'] !== undefined,
    phase: POD_PHASES.has(phase as DrainPod['phase']) ? (phase as DrainPod['phase']) : 'Unknown',
    tolerations: readList(spec['tolerations'], object, 'spec.tolerations').map((t, i) =>
      toToleration(t, object, `spec.tolerations[${i}]`),
    ),
    ...optional('deletedAtMs', readTime(meta['deletionTimestamp'], object, 'metadata.deletionTimestamp')),
    ...optional('startedAtMs', readTime(status['startTime'], object, 'status.startTime')),
    terminationGracePeriodSeconds:
      readNumber(spec['terminationGracePeriodSeconds'], object, 'spec.terminationGracePeriodSeconds', true) ??
      30,
    volumeNames,
  };
}

/** An IntOrString such as `minAvailable`: an integer or a string like `"50%"`. */
function readIntOrString(value: unknown, object: string, field: string): number | string | undefined {
  return typeof value === 'string' ? value : readNumber(value, object, field, true);
}

/** Converts a PodDisruptionBudget. */
export function toPodDisruptionBudget(raw: V1PodDisruptionBudget): PodDisruptionBudget {
  const object = objectName('podDisruptionBudget', raw, true);
  const pdb = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(pdb['metadata'], object, 'metadata') ?? {};
  const name = readString(meta['name'], object, 'metadata.name');
  const namespace = readString(meta['namespace'], object, 'metadata.namespace');
  if (!name || !namespace) throw new ValidationError(object, 'metadata', 'name and namespace are required');
  const spec = readObject(pdb['spec'], object, 'spec') ?? {};
  const status = readObject(pdb['status'], object, 'status') ?? {};
  const policy = readString(spec['unhealthyPodEvictionPolicy'], object, 'spec.unhealthyPodEvictionPolicy');
  if (policy !== undefined && policy !== 'IfHealthyBudget' && policy !== 'AlwaysAllow') {
    throw new ValidationError(
      object,
      'spec.unhealthyPodEvictionPolicy',
      `${JSON.stringify(policy)} is not IfHealthyBudget or AlwaysAllow`,
    );
  }
  const count = (key: string) => readNumber(status[key], object, `status.${key}`, true) ?? 0;
  return {
    namespace,
    name,
    ...optional(
      'selector',
      spec['selector'] == null ? undefined : toLabelSelector(spec['selector'], object, 'spec.selector'),
    ),
    ...optional('minAvailable', readIntOrString(spec['minAvailable'], object, 'spec.minAvailable')),
    ...optional('maxUnavailable', readIntOrString(spec['maxUnavailable'], object, 'spec.maxUnavailable')),
    disruptionsAllowed: count('disruptionsAllowed'),
    currentHealthy: count('currentHealthy'),
    desiredHealthy: count('desiredHealthy'),
    expectedPods: count('expectedPods'),
    ...optional('unhealthyPodEvictionPolicy', policy as PodDisruptionBudget['unhealthyPodEvictionPolicy']),
  };
}

/** Converts a `storage.k8s.io/v1` VolumeAttachment. */
export function toVolumeAttachment(raw: V1VolumeAttachment): VolumeAttachment {
  const object = objectName('volumeAttachment', raw, false);
  const attachment = readObject(raw, object, '(root)') ?? {};
  const meta = readObject(attachment['metadata'], object, 'metadata') ?? {};
  const spec = readObject(attachment['spec'], object, 'spec') ?? {};
  const source = readObject(spec['source'], object, 'spec.source') ?? {};
  return {
    name: readString(meta['name'], object, 'metadata.name') ?? '',
    nodeName: requireString(spec['nodeName'], object, 'spec.nodeName'),
    ...optional(
      'persistentVolumeName',
      readString(source['persistentVolumeName'], object, 'spec.source.persistentVolumeName'),
    ),
  };
}
