import type { V1Pod } from '@kubernetes/client-node';
import type { MemoryCloud, MemoryCluster } from '../adapters/memory/index.ts';
import { toPod, toQuantityMap } from '../apis/index.ts';
import {
  type ExistingNode,
  Label,
  type Pod,
  parseInstanceId,
  solve,
  type Taint,
  UNREGISTERED_TAINT,
  ValidationError,
} from '../core/index.ts';
import type { CloudInstance } from '../ports/cloud.ts';
import type { ClusterNodeClaim } from '../ports/cluster.ts';
import { isActive, rawPods, uidOf } from './workloads.ts';

// The simulated world's Kubernetes machinery besides the workload controllers: kubelets register a
// Node once a NodeClaim's instance runs and remove pods whose grace period ran out, pod garbage
// collection removes pods whose Node is gone, and kube-scheduler binds pending pods to nodes with
// room (the same solver Flotilla plans with, over the existing nodes only).

export interface Kube {
  /** Kubelets and pod garbage collection: one pass over NodeClaims, Nodes and pods. */
  kubelets(): Promise<void>;
  /** kube-scheduler: binds what fits; marks the rest Unschedulable. Runs only after a change. */
  schedule(): Promise<void>;
  /** Whether a kubelet registered the Node of the instance with this provider id. */
  registered(providerId: string): boolean;
}

/**
 * `bound` hears of every pod kube-scheduler binds; `rogueTaints` are the taints a rogue controller
 * puts on a Node as it joins (the scenario's RogueTaint events active then).
 */
export function makeKube(
  cluster: MemoryCluster,
  cloud: MemoryCloud,
  nowMs: () => number,
  bound: (uid: string) => void,
  rogueTaints: (nowMs: number) => readonly Taint[] = () => [],
): Kube {
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
      // Start-up agents finish once the node is registered: their taints go.
      const byNode = new Map(
        claims.flatMap((c) => (c.status.nodeName ? [[c.status.nodeName, c] as const] : [])),
      );
      for (const node of (await cluster.nodes()).items) {
        const claim = byNode.get(node.name);
        if (claim === undefined || node.labels[Label.registered] !== 'true') continue;
        const startup = claim.startupTaints.filter((t) =>
          (node.taints ?? []).some((x) => x.key === t.key && x.effect === t.effect),
        );
        if (startup.length > 0) await cluster.patchNode(node.name, { removeTaints: startup });
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
      const candidates = pending.flatMap((p) => {
        const pod = podOf(p);
        return pod === undefined ? [] : [pod];
      });
      const result =
        nodes.length === 0
          ? { placements: [] }
          : solve({
              pods: candidates,
              nodePools: [],
              instanceTypes: new Map(),
              nodes,
              nowMs: nowMs(),
              options: { repack: false },
            });
      const placed = new Set<string>();
      for (const placement of result.placements) {
        if (placement.kind !== 'existingNode') continue;
        const { namespace, name, uid } = placement.pod;
        cluster.bindPod(namespace, name, placement.nodeName);
        cluster.setPodPhase(namespace, name, 'Running');
        placed.add(uid);
        bound(uid);
      }
      for (const pod of candidates) {
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
  };
}
