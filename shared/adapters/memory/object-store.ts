import type { V1Pod } from '@kubernetes/client-node';
import { toRfc3339Seconds } from '../../apis/index.ts';
import { admitPriority, type PriorityClass, ValidationError } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import { ClusterNotFoundError } from '../../ports/errors.ts';

// The in-memory cluster's object store: Kubernetes objects in their stored shape, keyed by kind,
// namespace and name, with the API server's bookkeeping (uids, creation times, generations, a
// revision counter) and a conversion cache so unchanged objects are converted once.

/** The kinds the in-memory cluster stores. */
export type MemoryKind =
  | 'Pod'
  | 'Node'
  | 'Namespace'
  | 'DaemonSet'
  | 'PodDisruptionBudget'
  | 'ReplicaSet'
  | 'Deployment'
  | 'StatefulSet'
  | 'ReplicationController'
  | 'Job'
  | 'PersistentVolumeClaim'
  | 'PersistentVolume'
  | 'StorageClass'
  | 'VolumeAttachment'
  | 'CSINode'
  | 'PriorityClass'
  | 'NodePool'
  | 'EC2NodeClass'
  | 'NodeClaim'
  | 'NodeOverlay';

/** Pod controllers, kept so PodDisruptionBudgets can read their scale. */
const WORKLOAD_KINDS = ['ReplicaSet', 'Deployment', 'StatefulSet', 'ReplicationController', 'Job'] as const;

export const NAMESPACED: ReadonlySet<MemoryKind> = new Set([
  'Pod',
  'DaemonSet',
  'PodDisruptionBudget',
  ...WORKLOAD_KINDS,
  'PersistentVolumeClaim',
]);
export const CUSTOM: ReadonlySet<MemoryKind> = new Set([
  'NodePool',
  'EC2NodeClass',
  'NodeClaim',
  'NodeOverlay',
]);

/** A manifest to store: any object with `kind` and `metadata.name`. */
export interface Manifest {
  readonly kind: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string } & Record<string, unknown>;
  readonly [key: string]: unknown;
}

export type Raw = Record<string, unknown> & {
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    generation?: number;
    creationTimestamp?: Date | string;
    deletionTimestamp?: Date | string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: unknown[];
  };
};

export const keyOf = (name: string, namespace?: string) =>
  namespace === undefined ? name : `${namespace}/${name}`;

export function notFound(operation: string): ClusterNotFoundError {
  return new ClusterNotFoundError(operation, 404, 'the object does not exist');
}

export function rfc3339(date: Date): string {
  return toRfc3339Seconds(date);
}

/** Whole seconds, as the API server stores `metav1.Time`. */
export function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

const KINDS: ReadonlySet<string> = new Set<MemoryKind>([
  'Pod',
  'Node',
  'Namespace',
  'DaemonSet',
  'PodDisruptionBudget',
  ...WORKLOAD_KINDS,
  'PersistentVolumeClaim',
  'PersistentVolume',
  'StorageClass',
  'VolumeAttachment',
  'CSINode',
  'PriorityClass',
  'NodePool',
  'EC2NodeClass',
  'NodeClaim',
  'NodeOverlay',
]);

function isKind(kind: string): kind is MemoryKind {
  return KINDS.has(kind);
}

/** The object store behind the in-memory Cluster. */
export function makeObjectStore(clock: Clock) {
  const stores = new Map<MemoryKind, Map<string, Raw>>();
  const store = (kind: MemoryKind) => {
    let s = stores.get(kind);
    if (s === undefined) {
      s = new Map();
      stores.set(kind, s);
    }
    return s;
  };
  const converted = new WeakMap<object, unknown>();
  let uidCounter = 0;
  let rev = 0;

  function cachedConvert<T>(raw: object, convert: () => T): T {
    if (converted.has(raw)) {
      const hit = converted.get(raw);
      if (hit instanceof ValidationError) throw hit;
      return hit as T;
    }
    try {
      const value = convert();
      converted.set(raw, value);
      return value;
    } catch (error) {
      if (error instanceof ValidationError) converted.set(raw, error);
      throw error;
    }
  }

  /** Replaces a stored object by a changed copy (objects are never mutated in place). */
  function update(kind: MemoryKind, raw: Raw, change: (copy: Raw) => void): Raw {
    const copy = structuredClone(raw);
    change(copy);
    const key = keyOf(copy.metadata.name, copy.metadata.namespace);
    rev += 1;
    // An object being deleted goes once its last finalizer is removed; a terminating pod goes when
    // its kubelet confirms (removePod).
    if (
      kind !== 'Pod' &&
      copy.metadata.deletionTimestamp !== undefined &&
      (copy.metadata.finalizers ?? []).length === 0
    ) {
      store(kind).delete(key);
    } else {
      store(kind).set(key, copy);
    }
    return copy;
  }

  function find(kind: MemoryKind, name: string, namespace?: string): Raw | undefined {
    return store(kind).get(keyOf(name, namespace));
  }

  function must(kind: MemoryKind, name: string, namespace: string | undefined, operation: string): Raw {
    const raw = find(kind, name, namespace);
    if (raw === undefined) throw notFound(operation);
    return raw;
  }

  function ensureNamespace(name: string): void {
    if (find('Namespace', name) === undefined)
      create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }

  function create(manifest: Manifest): Raw {
    const kind = manifest.kind;
    if (!isKind(kind)) {
      throw new ValidationError(kind, 'kind', 'not a kind the in-memory cluster stores');
    }
    const name = manifest.metadata?.name;
    if (!name) throw new ValidationError(manifest.kind, 'metadata.name', 'required');
    const namespace = NAMESPACED.has(kind) ? (manifest.metadata?.namespace ?? 'default') : undefined;
    if (find(kind, name, namespace) !== undefined) {
      throw new ValidationError(`${kind} "${keyOf(name, namespace)}"`, 'metadata.name', 'already exists');
    }
    if (namespace !== undefined) ensureNamespace(namespace);
    uidCounter += 1;
    const now = wholeSeconds(clock.now());
    const raw = structuredClone(manifest) as unknown as Raw;
    raw.metadata = {
      ...raw.metadata,
      name,
      ...(namespace === undefined ? {} : { namespace }),
      uid: `00000000-0000-4000-8000-${uidCounter.toString(16).padStart(12, '0')}`,
      creationTimestamp: CUSTOM.has(kind) ? rfc3339(now) : now,
      ...(CUSTOM.has(kind) ? { generation: 1 } : {}),
    };
    if (kind === 'Pod') {
      const pod = raw as unknown as V1Pod;
      admitPodPriority(pod, `pod "${keyOf(name, namespace)}"`);
      pod.status = { phase: 'Pending', ...(pod.status ?? {}) };
    }
    rev += 1;
    store(kind).set(keyOf(name, namespace), raw);
    return raw;
  }

  /**
   * The Priority admission plugin: `spec.priority` from the PriorityClass the pod names (or the
   * global default). A pod stored with a priority and no class name (one admitted elsewhere, as a
   * snapshot holds it) keeps it.
   * @throws ValidationError when the pod names no PriorityClass there is, as the API server refuses it.
   */
  function admitPodPriority(pod: V1Pod, object: string): void {
    const spec = pod.spec;
    if (spec === undefined || (spec.priorityClassName === undefined && spec.priority !== undefined)) return;
    const classes = [...store('PriorityClass').values()].map(
      (c): PriorityClass => ({
        name: c.metadata.name,
        value: typeof c['value'] === 'number' ? c['value'] : 0,
        globalDefault: c['globalDefault'] === true,
      }),
    );
    const admission = admitPriority(spec, classes);
    if (admission.kind === 'refused') {
      throw new ValidationError(object, `spec.${admission.field}`, admission.message);
    }
    spec.priority = admission.priority;
  }

  /** Removes an object at once (no finalizers left, or a pod its kubelet let go). */
  function remove(kind: MemoryKind, key: string): void {
    if (store(kind).delete(key)) rev += 1;
  }

  return { store, find, must, create, update, remove, cachedConvert, revision: () => rev };
}

/** The object store behind the in-memory Cluster, as its parts share it. */
export type ObjectStore = ReturnType<typeof makeObjectStore>;
