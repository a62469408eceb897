import type { V1Pod } from '@kubernetes/client-node';
import type { MemoryCloud, MemoryCluster } from '../adapters/memory/index.ts';
import { toPod, toQuantityMap } from '../apis/index.ts';
import {
  type ExistingNode,
  Label,
  type Pod,
  parseInstanceId,
  type Taint,
  UNREGISTERED_TAINT,
  ValidationError,
} from '../core/index.ts';
import type { CloudInstance } from '../ports/cloud.ts';
import type { ClusterNodeClaim } from '../ports/cluster.ts';
import { chooseNode } from './kube-scheduler.ts';
import type { ScoringStrategy } from './scenario-types.ts';
import { isActive, rawPods, uidOf } from './workloads.ts';

// The simulated world's Kubernetes machinery besides the workload controllers: kubelets register a
// Node once a NodeClaim's instance runs and remove pods whose grace period ran out, start-up agents
// remove their start-up taints (each after its delay), pod garbage collection removes pods whose
// Node is gone, and kube-scheduler binds pending pods to nodes with room, one at a time, each to
// the node its scoring ranks first (kube-scheduler.ts).

export interface Kube {
  /** Kubelets and pod garbage collection: one pass over NodeClaims, Nodes and pods. */
  kubelets(): Promise<void>;
  /** kube-scheduler: binds what fits; marks the rest Unschedulable. Runs only after a change. */
  schedule(): Promise<void>;
  /** Whether a kubelet registered the Node of the instance with this provider id. */
  registered(providerId: string): boolean;
  /** The instants a start-up agent is due to remove its taint. */
  wakeTimes(): readonly number[];
}

export interface KubeOptions {
  /** The taints a rogue controller puts on a Node as it joins (the RogueTaint events active then). */
  readonly rogueTaints?: (nowMs: number) => readonly Taint[];
  /** Per start-up taint key, how long after registration its agent removes it. @default at once */
  readonly startupTaintRemovalMs?: ReadonlyMap<string, number>;
  /** kube-scheduler's NodeResourcesFit scoring. @default 'LeastAllocated' */
  readonly scoringStrategy?: ScoringStrategy;
}

/** `bound` hears of every pod kube-scheduler binds. */
export function makeKube(
  cluster: MemoryCluster,
  cloud: MemoryCloud,
  nowMs: () => number,
  bound: (uid: string) => void,
  options: KubeOptions = {},
): Kube {
  const rogueTaints = options.rogueTaints ?? (() => []);
  const removalMs = options.startupTaintRemovalMs ?? new Map<string, number>();
  const strategy = options.scoringStrategy ?? 'LeastAllocated';
  /** Per node, when it was first seen registered; per pending removal, when it is due. */
  const registeredAt = new Map<string, number>();
  const removalsDue = new Set<number>();
  const registeredProviders = new Set<string>();
  const converted = new Map<string, Pod>();
  let lastScheduleRevision = -1;

  /** The node kubelet registers for a NodeClaim whose instance has booted. */
  function registerNode(claim: ClusterNodeClaim, instance: CloudInstance): void {
    const name = instance.privateDnsName ?? instance.instanceId;
    cluster.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels: {
          [Label.os]: 'linux',
          ...claim.labels,
          [Label.hostname]: name,
          [Label.instanceType]: instance.instanceType,
          [Label.zone]: instance.zone,
          [Label.capacityType]: instance.capacityType,
        },
      },
      spec: {
        providerID: instance.providerId,
        taints: [...claim.taints, ...claim.startupTaints, UNREGISTERED_TAINT, ...rogueTaints(nowMs())].map(
          (t) => ({
            key: t.key,
            effect: t.effect,
            ...(t.value === undefined ? {} : { value: t.value }),
          }),
        ),
      },
      status: {
        capacity: toQuantityMap(claim.status.capacity ?? {}),
        allocatable: toQuantityMap(claim.status.allocatable ?? {}),
      },
    });
    cluster.setNodeReady(name, true);
  }

  function podOf(raw: V1Pod): Pod | undefined {
    const uid = uidOf(raw);
    let pod = converted.get(uid);
    if (pod === undefined) {
      try {
        pod = toPod(raw);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        return undefined;
      }
      converted.set(uid, pod);
    }
    return pod;
  }

  return {
    async kubelets() {
      const claims = (await cluster.nodeClaims()).items;
      for (const claim of claims) {
        const providerId = claim.status.providerId;
        if (claim.deleting || providerId === undefined || registeredProviders.has(providerId)) continue;
        const instanceId = parseInstanceId(providerId);
        const instance = instanceId === undefined ? undefined : await cloud.get(instanceId);
        if (instance?.state !== 'running') continue;
        registerNode(claim, instance);
        registeredProviders.add(providerId);
      }
      // Start-up agents finish once the node is registered, each after its delay: their taints go.
      const byNode = new Map(
        claims.flatMap((c) => (c.status.nodeName ? [[c.status.nodeName, c] as const] : [])),
      );
      removalsDue.clear();
      const now = nowMs();
      for (const node of (await cluster.nodes()).items) {
        const claim = byNode.get(node.name);
        if (claim === undefined || node.labels[Label.registered] !== 'true') continue;
        const since = registeredAt.get(node.name) ?? now;
        registeredAt.set(node.name, since);
        const startup = claim.startupTaints.filter((t) =>
          (node.taints ?? []).some((x) => x.key === t.key && x.effect === t.effect),
        );
        const due = startup.filter((t) => {
          const at = since + (removalMs.get(t.key) ?? 0);
          if (at > now) removalsDue.add(at);
          return at <= now;
        });
        if (due.length > 0) await cluster.patchNode(node.name, { removeTaints: due });
      }
      const nodeNames = new Set(
        (cluster.list('Node') as { metadata: { name: string } }[]).map((n) => n.metadata.name),
      );
      for (const pod of rawPods(cluster)) {
        const meta = pod.metadata;
        const nodeName = pod.spec?.nodeName;
        if (meta === undefined || nodeName === undefined) continue;
        const deletedMs =
          meta.deletionTimestamp === undefined ? undefined : new Date(meta.deletionTimestamp).getTime();
        const graceMs = (meta.deletionGracePeriodSeconds ?? 0) * 1000;
        // A terminating pod is gone once its grace period ran out; a pod whose node is gone is
        // collected (kube-controller-manager's pod GC).
        if ((deletedMs !== undefined && nowMs() >= deletedMs + graceMs) || !nodeNames.has(nodeName)) {
          cluster.removePod(meta.namespace ?? '', meta.name ?? '');
        }
      }
    },

    async schedule() {
      const pending = rawPods(cluster).filter((p) => !p.spec?.nodeName && isActive(p));
      if (pending.length === 0 || cluster.revision() === lastScheduleRevision) return;
      const nodes: ExistingNode[] = (await cluster.nodes()).items
        .filter((n) => n.ready && !n.deleting && !n.unschedulable)
        .map((n) => ({ ...n, initialized: true }));
      // kube-scheduler's queue (PrioritySort): higher priority first, then the longest queued.
      // The priority is the one admission resolved from the pod's PriorityClass when it was
      // created; a DaemonSet's pods get ahead only by theirs (system-node-critical, as a rule).
      const candidates = pending
        .flatMap((p) => {
          const pod = podOf(p);
          if (pod === undefined) return [];
          // Pods of one owner share a template: once one fits nowhere, the rest do not either
          // (nodes only fill up during a pass), unless the pod wants to be near others or names
          // its node (a DaemonSet's).
          const affinity = p.spec?.affinity;
          const own =
            (affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).length === 0 &&
            !(
              affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []
            ).some((t) => (t.matchFields ?? []).length > 0);
          const shape = own ? p.metadata?.ownerReferences?.[0]?.uid : undefined;
          return [{ pod, priority: p.spec?.priority ?? 0, shape }];
        })
        .sort(
          (a, b) =>
            b.priority - a.priority ||
            (a.pod.createdAtMs ?? 0) - (b.pod.createdAtMs ?? 0) ||
            (a.pod.name < b.pod.name ? -1 : a.pod.name > b.pod.name ? 1 : 0),
        );
      const placed = new Set<string>();
      const fitsNowhere = new Set<string>();
      const byName = new Map(nodes.map((n, i) => [n.name, i]));
      for (const { pod, shape } of candidates) {
        if (shape !== undefined && fitsNowhere.has(shape)) continue;
        const nodeName = nodes.length === 0 ? undefined : chooseNode(strategy, pod, nodes, nowMs());
        if (nodeName === undefined && shape !== undefined) fitsNowhere.add(shape);
        const index = nodeName === undefined ? undefined : byName.get(nodeName);
        const node = index === undefined ? undefined : nodes[index];
        if (nodeName === undefined || index === undefined || node === undefined) continue;
        nodes[index] = { ...node, pods: [...node.pods, pod] };
        cluster.bindPod(pod.namespace, pod.name, nodeName);
        cluster.setPodPhase(pod.namespace, pod.name, 'Running');
        placed.add(pod.uid);
        bound(pod.uid);
      }
      for (const { pod } of candidates) {
        if (placed.has(pod.uid)) continue;
        cluster.markPodUnschedulable(
          pod.namespace,
          pod.name,
          `0/${nodes.length} nodes are available: no node has room for the pod or matches its constraints`,
        );
      }
      lastScheduleRevision = cluster.revision();
    },

    registered: (providerId) => registeredProviders.has(providerId),
    wakeTimes: () => [...removalsDue],
  };
}
