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
  toPod,
  toPodDisruptionBudget,
  toVolumeAttachment,
  usesClaims,
  withPods,
} from '../../apis/index.ts';
import { Label, type Labels } from '../../core/index.ts';
import {
  type BoundPod,
  type Cluster,
  type ClusterNode,
  type ClusterNodeClaim,
  type DrainPod,
  type PodDisruptionBudget,
  type ReadResult,
  toNodeInfo,
} from '../../ports/cluster.ts';
import type { ObjectStore, Raw } from './object-store.ts';
import { pdbWithStatus } from './pdb-status.ts';

// The reads of the Cluster port in memory: stored objects listed and converted through the same
// converters as the kube adapter (once per stored version), NodeClaims and Nodes selected by
// NodePool as a label selector lists them, and PodDisruptionBudgets with the status
// kube-controller-manager would give them.

/** As a label selector `karpenter.sh/nodepool=<pool>` lists them (all without a pool). */
const ofPool = (raws: Raw[], pool?: string) =>
  pool === undefined ? raws : raws.filter((r) => r.metadata.labels?.[Label.nodePool] === pool);

/**
 * The port's reads over the object store, with what the rest of the in-memory cluster reads too:
 * the bound pods as converted, and the budgets with their status.
 */
export function makeClusterReads(objects: ObjectStore) {
  const { store, find, cachedConvert } = objects;
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

  const reads = {
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
      return convertEach(onNode, (p): DrainPod => toDrainPod(p, claimVolumes));
    },

    async volumeAttachments(nodeName) {
      const raws = ([...store('VolumeAttachment').values()] as unknown as V1VolumeAttachment[]).filter(
        (a) => a.spec?.nodeName === nodeName,
      );
      // The port has no problems list here: a malformed attachment is left out, as the kube adapter does.
      return convertEach(raws, toVolumeAttachment).items;
    },
  } satisfies Partial<Cluster>;

  return { reads, boundPods, budgets };
}
