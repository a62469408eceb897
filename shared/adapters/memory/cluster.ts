import type {
  V1DaemonSet,
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1StorageClass,
  V1VolumeAttachment,
} from '@kubernetes/client-node';
import {
  convertEach,
  convertNodeClaims,
  groupPodsByNode,
  isUnschedulable,
  makeVolumeIndex,
  parseEC2NodeClass,
  parseNodeOverlay,
  toClaimDrivers,
  toClusterNode,
  toClusterNodeClaim,
  toClusterNodePool,
  toCsiNodeLimits,
  toDaemonSet,
  toDrainPod,
  toNodeClaimManifest,
  toPod,
  toPodDisruptionBudget,
  toQuantityMap,
  toVolumeAttachment,
  usesClaims,
  withPods,
} from '../../apis/index.ts';
import { Label, type Labels, matchesSelector, type ResourceList, type Taint } from '../../core/index.ts';
import {
  type BoundPod,
  type ClusterNode,
  type ClusterNodeClaim,
  type DrainPod,
  type EvictionOutcome,
  mergeOwnerReferences,
  type PodDisruptionBudget,
  type ReadResult,
  toNodeInfo,
} from '../../ports/cluster.ts';
import { makeEventRecorder } from './events.ts';
import {
  CUSTOM,
  keyOf,
  type Manifest,
  type MemoryKind,
  makeObjectStore,
  NAMESPACED,
  type Raw,
  rfc3339,
  wholeSeconds,
} from './object-store.ts';
import { applyMetadata, setPodCondition, statusWith } from './patches.ts';
import { isPodReady, pdbWithStatus } from './pdb-status.ts';

export type { StoredEvent } from './events.ts';
export type { MemoryCluster, MemoryClusterOptions } from './memory-cluster.ts';

import type { MemoryCluster, MemoryClusterOptions } from './memory-cluster.ts';

export type { Manifest, MemoryKind } from './object-store.ts';

// The Cluster port in memory, for the simulator. Objects are kept in their Kubernetes shape and
// read through the same converters as the kube adapter, so both adapters see a manifest alike;
// the API server's own behaviour (finalizers, deletion, eviction against PodDisruptionBudgets,
// event deduplication, PDB status as kube-controller-manager keeps it) is reproduced here.

/** As a label selector `karpenter.sh/nodepool=<pool>` lists them (all without a pool). */
const ofPool = (raws: Raw[], pool?: string) =>
  pool === undefined ? raws : raws.filter((r) => r.metadata.labels?.[Label.nodePool] === pool);

const sameTaint = (a: Taint, b: { key: string; effect: string }) => a.key === b.key && a.effect === b.effect;

/** The in-memory Cluster. Deterministic: uids come from a counter and time only from the clock. */
export function makeMemoryCluster(options: MemoryClusterOptions): MemoryCluster {
  const { clock } = options;
  const recorder = makeEventRecorder(clock, (options.eventDedupeSeconds ?? 300) * 1000);
  const objects = makeObjectStore(clock);
  const { store, find, must, create, update, cachedConvert } = objects;
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
    return convertEach(bound, (p) =>
      cachedConvert(p, () => ({ pod: toPod(p), nodeName: p.spec?.nodeName ?? '' })),
    );
  }

  /** Deletes as the API server does: objects with finalizers are marked and kept. */
  function deleteObject(kind: MemoryKind, name: string, namespace?: string): void {
    const raw = find(kind, name, namespace);
    if (raw === undefined) return;
    if ((raw.metadata.finalizers ?? []).length === 0) {
      objects.remove(kind, keyOf(name, namespace));
      return;
    }
    if (raw.metadata.deletionTimestamp !== undefined) return;
    update(kind, raw, (copy) => {
      const now = wholeSeconds(clock.now());
      copy.metadata.deletionTimestamp = CUSTOM.has(kind) ? rfc3339(now) : now;
    });
  }

  /** PodDisruptionBudget status as kube-controller-manager computes it (see pdb-status.ts). */
  function withStatus(raw: V1PodDisruptionBudget): V1PodDisruptionBudget {
    const budget = cachedConvert(raw, () => toPodDisruptionBudget(raw));
    return pdbWithStatus(raw, budget, pods(), (kind, namespace, name) => find(kind, name, namespace));
  }

  function budgets(): readonly PodDisruptionBudget[] {
    return convertEach(
      [...store('PodDisruptionBudget').values()] as unknown as V1PodDisruptionBudget[],
      (raw) => toPodDisruptionBudget(withStatus(raw)),
    ).items;
  }

  const cluster: MemoryCluster = {
    async provisionablePods() {
      const pending = activePods().filter(isUnschedulable);
      const index = pending.some(usesClaims) ? volumeIndex() : undefined;
      return convertEach(pending, (p) =>
        index === undefined ? cachedConvert(p, () => toPod(p)) : toPod(p, index),
      );
    },

    async boundPods() {
      return boundPods();
    },

    async nodes() {
      // The same cache entry as boundPods(): one conversion per stored pod.
      const bound = groupPodsByNode(
        activePods().filter((p) => p.spec?.nodeName),
        (p) => cachedConvert(p, () => ({ pod: toPod(p), nodeName: p.spec?.nodeName ?? '' })).pod,
      );
      const raws = [...store('Node').values()] as unknown as V1Node[];
      const result = convertEach(
        raws,
        (n): ClusterNode =>
          withPods(
            cachedConvert(n, () => toClusterNode(n, [])),
            bound,
          ),
      );
      return { items: result.items, problems: [...bound.problems, ...result.problems] };
    },

    async nodeInfos(readOptions) {
      const raws = ofPool([...store('Node').values()], readOptions?.nodePool) as unknown as V1Node[];
      return convertEach(raws, (n) => toNodeInfo(cachedConvert(n, () => toClusterNode(n, []))));
    },

    async nodePools() {
      return convertEach([...store('NodePool').values()], (raw) =>
        cachedConvert(raw, () => toClusterNodePool(raw)),
      );
    },

    async nodeClasses() {
      return convertEach([...store('EC2NodeClass').values()], (raw) =>
        cachedConvert(raw, () => parseEC2NodeClass(raw)),
      );
    },

    async nodeOverlays() {
      return convertEach([...store('NodeOverlay').values()], (raw) =>
        cachedConvert(raw, () => parseNodeOverlay(raw)),
      );
    },

    async nodeClaims(readOptions) {
      return convertNodeClaims(ofPool([...store('NodeClaim').values()], readOptions?.nodePool), (raw) =>
        cachedConvert(raw, () => toClusterNodeClaim(raw)),
      );
    },

    async daemonSets() {
      const raws = [...store('DaemonSet').values()] as unknown as V1DaemonSet[];
      return convertEach(raws, (raw) => cachedConvert(raw, () => toDaemonSet(raw)));
    },

    async podDisruptionBudgets() {
      const raws = [...store('PodDisruptionBudget').values()] as unknown as V1PodDisruptionBudget[];
      return convertEach(raws, (raw) => toPodDisruptionBudget(withStatus(raw)));
    },

    async namespaceLabels() {
      const raws = [...store('Namespace').values()] as unknown as V1Namespace[];
      return new Map<string, Labels>(raws.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
    },

    async volumeLimits() {
      const csiNodes = convertEach([...store('CSINode').values()], toCsiNodeLimits);
      const nodes = new Map(
        csiNodes.items.filter((n) => Object.keys(n.limits).length > 0).map((n) => [n.nodeName, n.limits]),
      );
      if (nodes.size === 0) return { nodes, claimDrivers: new Map(), problems: csiNodes.problems };
      const claims = toClaimDrivers(volumeIndex());
      return { nodes, claimDrivers: claims.drivers, problems: [...csiNodes.problems, ...claims.problems] };
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
        copy['status'] = statusWith(
          raw,
          patch.conditions,
          clock.now(),
          {
            providerID: patch.providerId,
            imageID: patch.imageId,
            nodeName: patch.nodeName,
            capacity: replace(patch.capacity) ?? status['capacity'],
            allocatable: replace(patch.allocatable) ?? status['allocatable'],
            lastPodEventTime: patch.lastPodEventTime,
          },
          patch.removeConditions,
        );
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
        copy['status'] = statusWith(raw, patch.conditions, clock.now(), {
          resources: patch.resources === undefined ? undefined : toQuantityMap(patch.resources),
          nodes: patch.nodes,
          nodeClassObservedGeneration: patch.nodeClassObservedGeneration,
        });
      });
    },

    async patchNodePoolMetadata(name, patch) {
      const raw = must('NodePool', name, undefined, `patch nodePool "${name}"`);
      update('NodePool', raw, (copy) => applyMetadata(copy, patch));
    },

    async patchNodeClassStatus(name, status) {
      const raw = must('EC2NodeClass', name, undefined, `patch status of ec2NodeClass "${name}"`);
      update('EC2NodeClass', raw, (copy) => {
        copy['status'] = JSON.parse(JSON.stringify(status)) as unknown;
      });
    },

    async patchNodeOverlayStatus(name, conditions) {
      const raw = must('NodeOverlay', name, undefined, `patch status of nodeOverlay "${name}"`);
      update('NodeOverlay', raw, (copy) => {
        copy['status'] = statusWith(raw, conditions, clock.now(), {});
      });
    },

    async patchNodeClassMetadata(name, patch) {
      const raw = must('EC2NodeClass', name, undefined, `patch ec2NodeClass "${name}"`);
      update('EC2NodeClass', raw, (copy) => applyMetadata(copy, patch));
    },

    async recordEvent(event) {
      recorder.record(event);
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

    async nodeWithPods(name) {
      const node = await cluster.node(name);
      if (node === undefined) return undefined;
      const onNode = boundPods().items.filter((b) => b.nodeName === name);
      return { ...node, pods: onNode.map((b) => b.pod) };
    },

    async podsOnNode(nodeName) {
      const onNode = pods().filter((p) => p.spec?.nodeName === nodeName);
      const claimVolumes = new Map<string, string>();
      for (const c of store('PersistentVolumeClaim').values() as Iterable<V1PersistentVolumeClaim>) {
        if (c.spec?.volumeName)
          claimVolumes.set(`${c.metadata?.namespace}/${c.metadata?.name}`, c.spec.volumeName);
      }
      return convertEach(onNode, (p): DrainPod => toDrainPod(p, claimVolumes));
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
      const raws = ([...store('VolumeAttachment').values()] as unknown as V1VolumeAttachment[]).filter(
        (a) => a.spec?.nodeName === nodeName,
      );
      // The port has no problems list here: a malformed attachment is left out, as the kube adapter does.
      return convertEach(raws, toVolumeAttachment).items;
    },

    async deleteNode(name) {
      deleteObject('Node', name);
    },

    create(manifest) {
      return create(manifest);
    },

    replaceSpec(kind, name, spec, namespace) {
      namespace = NAMESPACED.has(kind) ? (namespace ?? 'default') : undefined;
      const raw = must(kind, name, namespace, `replace spec of ${kind} "${name}"`);
      if (JSON.stringify(raw['spec'] ?? null) === JSON.stringify(spec)) return raw;
      return update(kind, raw, (copy) => {
        copy['spec'] = structuredClone(spec);
        if (CUSTOM.has(kind)) copy.metadata.generation = (copy.metadata.generation ?? 1) + 1;
      });
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
        setPodCondition(copy, { type: 'PodScheduled', status: 'True' }, clock.now());
      });
    },

    markPodUnschedulable(namespace, name, message) {
      const raw = must('Pod', name, namespace, `update status of pod "${namespace}/${name}"`);
      const current = (raw as unknown as V1Pod).status?.conditions?.find((c) => c.type === 'PodScheduled');
      if (current?.status === 'False' && current.reason === 'Unschedulable' && current.message === message)
        return;
      update('Pod', raw, (copy) =>
        setPodCondition(
          copy,
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message },
          clock.now(),
        ),
      );
    },

    setPodPhase(namespace, name, phase) {
      const raw = must('Pod', name, namespace, `update status of pod "${namespace}/${name}"`);
      update('Pod', raw, (copy) => {
        const pod = copy as unknown as V1Pod;
        // As a kubelet: the pod's startTime is when it first runs there.
        const started =
          phase === 'Running' && pod.status?.startTime === undefined ? { startTime: clock.now() } : {};
        pod.status = { ...(pod.status ?? {}), phase, ...started };
        setPodCondition(copy, { type: 'Ready', status: phase === 'Running' ? 'True' : 'False' }, clock.now());
      });
    },

    removePod(namespace, name) {
      objects.remove('Pod', keyOf(name, namespace));
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

    events: () => recorder.list(),

    revision: () => objects.revision(),
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
