import type {
  V1DaemonSet,
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodCondition,
  V1PodDisruptionBudget,
  V1StorageClass,
  V1VolumeAttachment,
} from '@kubernetes/client-node';
import {
  isUnschedulable,
  makeVolumeIndex,
  mergeConditions,
  parseEC2NodeClass,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toDaemonSet,
  toDrainPod,
  toNodeClaimManifest,
  toPod,
  toPodDisruptionBudget,
  toQuantityMap,
  toRfc3339Seconds,
  toVolumeAttachment,
  usesClaims,
} from '../../apis/index.ts';
import {
  type Labels,
  matchesSelector,
  type ResourceList,
  type Taint,
  ValidationError,
} from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Condition } from '../../ports/cloud.ts';
import {
  type BoundPod,
  type Cluster,
  type ClusterEvent,
  type ClusterNode,
  type ClusterNodeClaim,
  type ConditionUpdate,
  type DrainPod,
  type EvictionOutcome,
  type MetadataPatch,
  mergeOwnerReferences,
  type PodDisruptionBudget,
  type ReadResult,
} from '../../ports/cluster.ts';
import { ClusterNotFoundError } from '../../ports/errors.ts';

// The Cluster port in memory, for the simulator. Objects are kept in their Kubernetes shape and
// read through the same converters as the kube adapter, so both adapters see a manifest alike;
// the API server's own behaviour (finalizers, deletion, eviction against PodDisruptionBudgets,
// event deduplication, PDB status as kube-controller-manager keeps it) is reproduced here.

/** The kinds the in-memory cluster stores. */
export type MemoryKind =
  | 'Pod'
  | 'Node'
  | 'Namespace'
  | 'DaemonSet'
  | 'PodDisruptionBudget'
  | 'PersistentVolumeClaim'
  | 'PersistentVolume'
  | 'StorageClass'
  | 'VolumeAttachment'
  | 'NodePool'
  | 'EC2NodeClass'
  | 'NodeClaim';

const NAMESPACED: ReadonlySet<MemoryKind> = new Set([
  'Pod',
  'DaemonSet',
  'PodDisruptionBudget',
  'PersistentVolumeClaim',
]);
const CUSTOM: ReadonlySet<MemoryKind> = new Set(['NodePool', 'EC2NodeClass', 'NodeClaim']);

/** An event as stored, for the simulator and tests to read back. */
export interface StoredEvent {
  readonly event: ClusterEvent;
  readonly count: number;
  readonly firstMs: number;
  readonly lastMs: number;
}

export interface MemoryClusterOptions {
  /** Creation and deletion times, condition transitions and event dedupe read it. */
  readonly clock: Clock;
  /** A repeated event within this window is dropped; later ones bump its count. @default 300 */
  readonly eventDedupeSeconds?: number;
}

/** A manifest to store: any object with `kind` and `metadata.name`. */
export interface Manifest {
  readonly kind: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string } & Record<string, unknown>;
  readonly [key: string]: unknown;
}

/** The Cluster port in memory plus the knobs the simulator (kube-scheduler, kubelet) turns. */
export interface MemoryCluster extends Cluster {
  /**
   * Creates an object as the API server would: uid, creation time, `generation` 1 for custom
   * objects. Namespaces of namespaced objects are created on first use.
   * @throws ValidationError when the kind is not stored or the object already exists.
   */
  create(manifest: Manifest): Record<string, unknown>;
  /** The stored object, or undefined. */
  get(kind: MemoryKind, name: string, namespace?: string): Record<string, unknown> | undefined;
  /** Every stored object of a kind (pods in every phase). */
  list(kind: MemoryKind): readonly Record<string, unknown>[];
  /** Sets `spec.nodeName` and `PodScheduled=True` (the Binding subresource). */
  bindPod(namespace: string, name: string, nodeName: string): void;
  /** Sets `PodScheduled=False/Unschedulable` with the message, as kube-scheduler does. */
  markPodUnschedulable(namespace: string, name: string, message: string): void;
  /** Sets the pod's phase; `Running` also makes it Ready. */
  setPodPhase(namespace: string, name: string, phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'): void;
  /** Removes a pod at once (a terminating pod whose grace period ran out, or a force delete). */
  removePod(namespace: string, name: string): void;
  /** Sets the Node's `Ready` condition. */
  setNodeReady(name: string, ready: boolean): void;
  /** Events recorded so far, deduplicated. */
  events(): readonly StoredEvent[];
  /** Bumped on every change; a reader can tell whether anything changed since it last looked. */
  revision(): number;
}

type Raw = Record<string, unknown> & {
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

const keyOf = (name: string, namespace?: string) => (namespace === undefined ? name : `${namespace}/${name}`);

function notFound(operation: string): ClusterNotFoundError {
  return new ClusterNotFoundError(operation, 404, 'the object does not exist');
}

function rfc3339(date: Date): string {
  return toRfc3339Seconds(date);
}

/** Whole seconds, as the API server stores `metav1.Time`. */
function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

const sameTaint = (a: Taint, b: { key: string; effect: string }) => a.key === b.key && a.effect === b.effect;

/** Percent or integer of `total`, rounding up as the disruption controller does. */
function scaled(value: number | string, total: number): number {
  if (typeof value === 'number') return value;
  const match = /^(\d+)%$/.exec(value);
  return match === null ? Number(value) : Math.ceil((Number(match[1]) * total) / 100);
}

/** The in-memory Cluster. Deterministic: uids come from a counter and time only from the clock. */
export function makeMemoryCluster(options: MemoryClusterOptions): MemoryCluster {
  const { clock } = options;
  const dedupeMs = (options.eventDedupeSeconds ?? 300) * 1000;
  const stores = new Map<MemoryKind, Map<string, Raw>>();
  const store = (kind: MemoryKind) => {
    let s = stores.get(kind);
    if (s === undefined) {
      s = new Map();
      stores.set(kind, s);
    }
    return s;
  };
  const events = new Map<string, StoredEvent>();
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

  function convertAll<R extends object, T>(raws: readonly R[], convert: (raw: R) => T): ReadResult<T> {
    const items: T[] = [];
    const problems: ValidationError[] = [];
    for (const raw of raws) {
      try {
        items.push(convert(raw));
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        problems.push(error);
      }
    }
    return { items, problems };
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
      pod.status = { phase: 'Pending', ...(pod.status ?? {}) };
    }
    rev += 1;
    store(kind).set(keyOf(name, namespace), raw);
    return raw;
  }

  const pods = () => [...store('Pod').values()] as unknown as V1Pod[];
  const activePods = () =>
    pods().filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');

  function volumeIndex() {
    return makeVolumeIndex(
      [...store('PersistentVolumeClaim').values()] as unknown as V1PersistentVolumeClaim[],
      [...store('PersistentVolume').values()] as unknown as V1PersistentVolume[],
      [...store('StorageClass').values()] as unknown as V1StorageClass[],
    );
  }

  function boundPods(): ReadResult<BoundPod> {
    const bound = activePods().filter((p) => p.spec?.nodeName);
    return convertAll(bound, (p) =>
      cachedConvert(p, () => ({ pod: toPod(p), nodeName: p.spec?.nodeName ?? '' })),
    );
  }

  function statusFields(
    raw: Raw,
    conditions: readonly ConditionUpdate[] | undefined,
    fields: Record<string, unknown>,
  ) {
    const status = { ...((raw['status'] as Record<string, unknown> | undefined) ?? {}) };
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) status[key] = value;
    if (conditions !== undefined && conditions.length > 0) {
      status['conditions'] = mergeConditions(
        (status['conditions'] ?? []) as Condition[],
        conditions,
        clock.now(),
        raw.metadata.generation,
      );
    }
    return status;
  }

  function applyMetadata(copy: Raw, patch: MetadataPatch): void {
    const merge = (
      current: Record<string, string> | undefined,
      change: Readonly<Record<string, string | null>>,
    ) => {
      const out = { ...(current ?? {}) };
      for (const [k, v] of Object.entries(change)) {
        if (v === null) delete out[k];
        else out[k] = v;
      }
      return out;
    };
    if (patch.labels) copy.metadata.labels = merge(copy.metadata.labels, patch.labels);
    if (patch.annotations) copy.metadata.annotations = merge(copy.metadata.annotations, patch.annotations);
    if (patch.addFinalizers || patch.removeFinalizers) {
      const finalizers = new Set(copy.metadata.finalizers ?? []);
      for (const f of patch.addFinalizers ?? []) finalizers.add(f);
      for (const f of patch.removeFinalizers ?? []) finalizers.delete(f);
      copy.metadata.finalizers = [...finalizers];
    }
  }

  /** Deletes as the API server does: objects with finalizers are marked and kept. */
  function deleteObject(kind: MemoryKind, name: string, namespace?: string): void {
    const raw = find(kind, name, namespace);
    if (raw === undefined) return;
    if ((raw.metadata.finalizers ?? []).length === 0) {
      rev += 1;
      store(kind).delete(keyOf(name, namespace));
      return;
    }
    if (raw.metadata.deletionTimestamp !== undefined) return;
    update(kind, raw, (copy) => {
      const now = wholeSeconds(clock.now());
      copy.metadata.deletionTimestamp = CUSTOM.has(kind) ? rfc3339(now) : now;
    });
  }

  /** PodDisruptionBudget status as kube-controller-manager computes it from the pods it selects. */
  function withStatus(raw: V1PodDisruptionBudget): V1PodDisruptionBudget {
    const namespace = raw.metadata?.namespace;
    const budget = cachedConvert(raw, () => toPodDisruptionBudget(raw));
    const selected = activePods().filter(
      (p) =>
        p.metadata?.namespace === namespace &&
        p.metadata?.deletionTimestamp === undefined &&
        budget.selector !== undefined &&
        matchesSelector(budget.selector, p.metadata?.labels ?? {}),
    );
    const expected = selected.length;
    const healthy = selected.filter((p) => isPodReady(p)).length;
    // maxUnavailable and percentages need the pods' controller for the expected count; with a
    // pod that has none, the disruption controller fails safe and allows nothing.
    const needsScale = budget.maxUnavailable !== undefined || typeof budget.minAvailable === 'string';
    if (needsScale && selected.some((p) => !(p.metadata?.ownerReferences ?? []).some((o) => o.controller))) {
      return {
        ...raw,
        status: {
          ...(raw.status ?? {}),
          currentHealthy: healthy,
          desiredHealthy: 0,
          expectedPods: 0,
          disruptionsAllowed: 0,
        },
      };
    }
    const desired =
      budget.minAvailable !== undefined
        ? scaled(budget.minAvailable, expected)
        : budget.maxUnavailable !== undefined
          ? Math.max(0, expected - scaled(budget.maxUnavailable, expected))
          : 0;
    return {
      ...raw,
      status: {
        ...(raw.status ?? {}),
        currentHealthy: healthy,
        desiredHealthy: desired,
        expectedPods: expected,
        disruptionsAllowed: Math.max(0, healthy - desired),
        observedGeneration: 1,
      },
    };
  }

  function budgets(): readonly PodDisruptionBudget[] {
    return convertAll(
      [...store('PodDisruptionBudget').values()] as unknown as V1PodDisruptionBudget[],
      (raw) => toPodDisruptionBudget(withStatus(raw)),
    ).items;
  }

  function setPodCondition(copy: Raw, condition: V1PodCondition): void {
    const pod = copy as unknown as V1Pod;
    const conditions = (pod.status?.conditions ?? []).filter((c) => c.type !== condition.type);
    const previous = pod.status?.conditions?.find((c) => c.type === condition.type);
    const transition =
      previous !== undefined &&
      previous.status === condition.status &&
      previous.lastTransitionTime !== undefined
        ? previous.lastTransitionTime
        : wholeSeconds(clock.now());
    pod.status = {
      ...(pod.status ?? {}),
      conditions: [...conditions, { ...condition, lastTransitionTime: transition }],
    };
  }

  const cluster: MemoryCluster = {
    async provisionablePods() {
      const pending = activePods().filter(isUnschedulable);
      const index = pending.some(usesClaims) ? volumeIndex() : undefined;
      return convertAll(pending, (p) =>
        index === undefined ? cachedConvert(p, () => toPod(p)) : toPod(p, index),
      );
    },

    async boundPods() {
      return boundPods();
    },

    async nodes() {
      const bound = boundPods();
      const byNode = new Map<string, BoundPod['pod'][]>();
      for (const { pod, nodeName } of bound.items) {
        const list = byNode.get(nodeName) ?? [];
        list.push(pod);
        byNode.set(nodeName, list);
      }
      const raws = [...store('Node').values()] as unknown as V1Node[];
      const result = convertAll(raws, (n): ClusterNode => {
        const base = cachedConvert(n, () => toClusterNode(n, []));
        return { ...base, pods: byNode.get(base.name) ?? [] };
      });
      return { items: result.items, problems: [...bound.problems, ...result.problems] };
    },

    async nodePools() {
      return convertAll([...store('NodePool').values()], (raw) =>
        cachedConvert(raw, () => toClusterNodePool(raw)),
      );
    },

    async nodeClasses() {
      return convertAll([...store('EC2NodeClass').values()], (raw) =>
        cachedConvert(raw, () => parseEC2NodeClass(raw)),
      );
    },

    async nodeClaims() {
      return convertAll([...store('NodeClaim').values()], (raw) =>
        cachedConvert(raw, () => toClusterNodeClaim(raw)),
      );
    },

    async daemonSets() {
      const raws = [...store('DaemonSet').values()] as unknown as V1DaemonSet[];
      return convertAll(raws, (raw) => cachedConvert(raw, () => toDaemonSet(raw)));
    },

    async podDisruptionBudgets() {
      const raws = [...store('PodDisruptionBudget').values()] as unknown as V1PodDisruptionBudget[];
      return convertAll(raws, (raw) => toPodDisruptionBudget(withStatus(raw)));
    },

    async namespaceLabels() {
      const raws = [...store('Namespace').values()] as unknown as V1Namespace[];
      return new Map<string, Labels>(raws.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    },

    async createNodeClaim(claim) {
      if (find('NodeClaim', claim.name) !== undefined) return false;
      create(toNodeClaimManifest(claim) as unknown as Manifest);
      return true;
    },

    async patchNodeClaimStatus(name, patch) {
      const raw = must('NodeClaim', name, undefined, `patch status of nodeClaim "${name}"`);
      const status = (raw['status'] ?? {}) as Record<string, unknown>;
      const replace = (next: ResourceList | undefined) =>
        next === undefined ? undefined : toQuantityMap(next);
      update('NodeClaim', raw, (copy) => {
        copy['status'] = statusFields(raw, patch.conditions, {
          providerID: patch.providerId,
          imageID: patch.imageId,
          nodeName: patch.nodeName,
          capacity: replace(patch.capacity) ?? status['capacity'],
          allocatable: replace(patch.allocatable) ?? status['allocatable'],
        });
      });
    },

    async patchNodeClaimMetadata(name, patch) {
      const raw = must('NodeClaim', name, undefined, `patch nodeClaim "${name}"`);
      update('NodeClaim', raw, (copy) => applyMetadata(copy, patch));
    },

    async patchNode(name, patch) {
      const raw = must('Node', name, undefined, `patch node "${name}"`);
      update('Node', raw, (copy) => {
        applyMetadata(copy, patch);
        const node = copy as unknown as V1Node;
        const owners = mergeOwnerReferences(node.metadata?.ownerReferences ?? [], patch.addOwnerReferences);
        if (owners !== undefined) node.metadata = { ...node.metadata, ownerReferences: owners };
        if (patch.addTaints === undefined && patch.removeTaints === undefined) return;
        let taints = (node.spec?.taints ?? []).filter(
          (t) => !(patch.removeTaints ?? []).some((r) => sameTaint(r, t)),
        );
        for (const add of patch.addTaints ?? []) {
          if (!taints.some((t) => sameTaint(add, t))) {
            taints = [
              ...taints,
              { key: add.key, effect: add.effect, ...(add.value ? { value: add.value } : {}) },
            ];
          }
        }
        node.spec = { ...(node.spec ?? {}), taints };
      });
    },

    async deleteNodeClaim(name) {
      deleteObject('NodeClaim', name);
    },

    async patchNodePoolStatus(name, patch) {
      const raw = must('NodePool', name, undefined, `patch status of nodePool "${name}"`);
      update('NodePool', raw, (copy) => {
        copy['status'] = statusFields(raw, patch.conditions, {
          resources: patch.resources === undefined ? undefined : toQuantityMap(patch.resources),
          nodes: patch.nodes,
          nodeClassObservedGeneration: patch.nodeClassObservedGeneration,
        });
      });
    },

    async patchNodeClassStatus(name, status) {
      const raw = must('EC2NodeClass', name, undefined, `patch status of ec2NodeClass "${name}"`);
      update('EC2NodeClass', raw, (copy) => {
        copy['status'] = JSON.parse(JSON.stringify(status)) as unknown;
      });
    },

    async patchNodeClassMetadata(name, patch) {
      const raw = must('EC2NodeClass', name, undefined, `patch ec2NodeClass "${name}"`);
      update('EC2NodeClass', raw, (copy) => applyMetadata(copy, patch));
    },

    async recordEvent(event) {
      const s = event.subject;
      const key = [
        s.kind,
        s.kind === 'Pod' ? s.namespace : '',
        s.name,
        event.type,
        event.reason,
        event.message,
      ].join('\n');
      const nowMs = clock.now().getTime();
      const existing = events.get(key);
      if (existing === undefined) {
        events.set(key, {
          event: { ...event, message: event.message.slice(0, 1024) },
          count: 1,
          firstMs: nowMs,
          lastMs: nowMs,
        });
        return;
      }
      if (nowMs - existing.lastMs < dedupeMs) return;
      events.set(key, { ...existing, count: existing.count + 1, lastMs: nowMs });
    },

    async nodeClaim(name) {
      const raw = find('NodeClaim', name);
      return raw === undefined
        ? undefined
        : cachedConvert(raw, (): ClusterNodeClaim => toClusterNodeClaim(raw));
    },

    async node(name) {
      const raw = find('Node', name) as unknown as V1Node | undefined;
      return raw === undefined ? undefined : cachedConvert(raw, () => toClusterNode(raw, []));
    },

    async podsOnNode(nodeName) {
      const onNode = pods().filter((p) => p.spec?.nodeName === nodeName);
      const claimVolumes = new Map<string, string>();
      for (const c of store('PersistentVolumeClaim').values() as Iterable<V1PersistentVolumeClaim>) {
        if (c.spec?.volumeName)
          claimVolumes.set(`${c.metadata?.namespace}/${c.metadata?.name}`, c.spec.volumeName);
      }
      return convertAll(onNode, (p): DrainPod => toDrainPod(p, claimVolumes));
    },

    async evictPod(key): Promise<EvictionOutcome> {
      const raw = find('Pod', key.name, key.namespace);
      if (raw === undefined || raw.metadata.uid !== key.uid) return 'gone';
      const pod = raw as unknown as V1Pod;
      const phase = pod.status?.phase;
      // The Eviction API deletes terminal, pending and terminating pods without asking budgets.
      const ignoresBudgets =
        phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || pod.metadata?.deletionTimestamp;
      if (!ignoresBudgets) {
        const matching = budgets().filter(
          (b) =>
            b.namespace === key.namespace &&
            b.selector !== undefined &&
            matchesSelector(b.selector, pod.metadata?.labels ?? {}),
        );
        if (matching.length > 1) return 'blocked';
        const budget = matching[0];
        if (budget !== undefined) {
          const unhealthyAllowed =
            !isPodReady(pod) &&
            (budget.unhealthyPodEvictionPolicy === 'AlwaysAllow' ||
              (budget.currentHealthy >= budget.desiredHealthy && budget.desiredHealthy > 0));
          if (!unhealthyAllowed && budget.disruptionsAllowed <= 0) return 'blocked';
        }
      }
      deletePodNow(pod, pod.spec?.terminationGracePeriodSeconds ?? 30);
      return 'evicted';
    },

    async deletePod(key, gracePeriodSeconds) {
      const raw = find('Pod', key.name, key.namespace);
      if (raw === undefined || raw.metadata.uid !== key.uid) return;
      deletePodNow(raw as unknown as V1Pod, gracePeriodSeconds);
    },

    async volumeAttachments(nodeName) {
      return ([...store('VolumeAttachment').values()] as unknown as V1VolumeAttachment[])
        .filter((a) => a.spec.nodeName === nodeName)
        .map(toVolumeAttachment);
    },

    async deleteNode(name) {
      deleteObject('Node', name);
    },

    create(manifest) {
      return create(manifest);
    },

    get(kind, name, namespace) {
      return find(kind, name, NAMESPACED.has(kind) ? (namespace ?? 'default') : undefined);
    },

    list(kind) {
      return [...store(kind).values()];
    },

    bindPod(namespace, name, nodeName) {
      const raw = must('Pod', name, namespace, `bind pod "${namespace}/${name}"`);
      update('Pod', raw, (copy) => {
        const pod = copy as unknown as V1Pod;
        pod.spec = { ...(pod.spec ?? { containers: [] }), nodeName };
        setPodCondition(copy, { type: 'PodScheduled', status: 'True' });
      });
    },

    markPodUnschedulable(namespace, name, message) {
      const raw = must('Pod', name, namespace, `update status of pod "${namespace}/${name}"`);
      const current = (raw as unknown as V1Pod).status?.conditions?.find((c) => c.type === 'PodScheduled');
      if (current?.status === 'False' && current.reason === 'Unschedulable' && current.message === message)
        return;
      update('Pod', raw, (copy) =>
        setPodCondition(copy, { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }),
      );
    },

    setPodPhase(namespace, name, phase) {
      const raw = must('Pod', name, namespace, `update status of pod "${namespace}/${name}"`);
      update('Pod', raw, (copy) => {
        const pod = copy as unknown as V1Pod;
        pod.status = { ...(pod.status ?? {}), phase };
        setPodCondition(copy, { type: 'Ready', status: phase === 'Running' ? 'True' : 'False' });
      });
    },

    removePod(namespace, name) {
      if (store('Pod').delete(keyOf(name, namespace))) rev += 1;
    },

    setNodeReady(name, ready) {
      const raw = must('Node', name, undefined, `update status of node "${name}"`);
      update('Node', raw, (copy) => {
        const node = copy as unknown as V1Node;
        const conditions = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
        const now = wholeSeconds(clock.now());
        node.status = {
          ...(node.status ?? {}),
          conditions: [
            ...conditions,
            {
              type: 'Ready',
              status: ready ? 'True' : 'False',
              reason: ready ? 'KubeletReady' : 'KubeletNotReady',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        };
      });
    },

    events: () => [...events.values()],

    revision: () => rev,
  };

  /** Unbound pods, and a zero grace period, go at once; others are marked terminating. */
  function deletePodNow(pod: V1Pod, gracePeriodSeconds: number): void {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    if (!pod.spec?.nodeName || gracePeriodSeconds <= 0) {
      cluster.removePod(namespace, name);
      return;
    }
    if (pod.metadata?.deletionTimestamp !== undefined) return;
    update('Pod', pod as unknown as Raw, (copy) => {
      const meta = (copy as unknown as V1Pod).metadata;
      if (meta !== undefined) {
        meta.deletionTimestamp = wholeSeconds(clock.now());
        meta.deletionGracePeriodSeconds = gracePeriodSeconds;
      }
    });
  }

  return cluster;
}

const KINDS: ReadonlySet<string> = new Set<MemoryKind>([
  'Pod',
  'Node',
  'Namespace',
  'DaemonSet',
  'PodDisruptionBudget',
  'PersistentVolumeClaim',
  'PersistentVolume',
  'StorageClass',
  'VolumeAttachment',
  'NodePool',
  'EC2NodeClass',
  'NodeClaim',
]);

function isKind(kind: string): kind is MemoryKind {
  return KINDS.has(kind);
}

/** Running with a Ready condition that is True. */
function isPodReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}
