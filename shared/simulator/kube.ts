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
import { choosePreemption } from './preemption.ts';
import type { ScoringStrategy } from './scenario-types.ts';
import { isActive, rawPods, uidOf } from './workloads.ts';

// The simulated world's Kubernetes machinery besides the workload controllers: kubelets register a
// Node once a NodeClaim's instance runs and remove pods whose grace period ran out, start-up agents
// remove their start-up taints (each after its delay), pod garbage collection removes pods whose
// Node is gone, and kube-scheduler binds pending pods to nodes with room, one at a time, each to
// the node its scoring ranks first (kube-scheduler.ts), and makes room for a pod that fits nowhere
// by preempting pods of lower priority (preemption.ts).

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

  /**
   * One scheduling cycle's preemption over `nodes` (changed in place, `byName` indexing them): a
   * pod nominated earlier holds its room on its node against the pods after it in the queue until
   * it binds; a pod that fits nowhere and may preempt (a priority above the lowest bound one,
   * `preemptionPolicy` not Never) deletes its victims with their grace period, as kube-scheduler's
   * DefaultPreemption does (preemption.ts), and is nominated to their node.
   */
  function preemptionPass(
    nodes: ExistingNode[],
    byName: ReadonlyMap<string, number>,
    pending: readonly V1Pod[],
  ) {
    const holds = new Map<string, number>();
    const hold = (pod: Pod, nodeName: string) => {
      const index = byName.get(nodeName);
      const node = index === undefined ? undefined : nodes[index];
      if (index === undefined || node === undefined) return;
      nodes[index] = { ...node, pods: [...node.pods, pod] };
      holds.set(pod.uid, index);
    };
    for (const p of pending) {
      const nominated = p.status?.nominatedNodeName;
      const pod = nominated === undefined ? undefined : podOf(p);
      if (pod !== undefined && nominated !== undefined) hold(pod, nominated);
    }
    // Every pod's priority, and the lowest of the bound ones: read once a cycle, only when a pod
    // that fits nowhere first asks.
    let known: { raws: Map<string, V1Pod>; lowest: number } | undefined;
    const priorities = () => {
      if (known !== undefined) return known;
      known = { raws: new Map(), lowest: Number.POSITIVE_INFINITY };
      for (const p of rawPods(cluster)) {
        known.raws.set(uidOf(p), p);
        if (p.spec?.nodeName) known.lowest = Math.min(known.lowest, p.spec?.priority ?? 0);
      }
      return known;
    };
    return {
      /** Takes `pod`'s own hold off its node before it is placed; whether it had one. */
      release(pod: Pod): boolean {
        const index = holds.get(pod.uid);
        const node = index === undefined ? undefined : nodes[index];
        if (index === undefined || node === undefined) return false;
        nodes[index] = { ...node, pods: node.pods.filter((p) => p.uid !== pod.uid) };
        holds.delete(pod.uid);
        return true;
      },
      /** Puts back the hold of a nominated pod that did not bind yet. */
      reserve: hold,
      async tryPreempting(pod: Pod, raw: V1Pod, priority: number): Promise<void> {
        if (raw.spec?.preemptionPolicy === 'Never') return;
        const { raws, lowest } = priorities();
        if (priority <= lowest) return;
        const priorityOf = (p: Pod) => raws.get(p.uid)?.spec?.priority ?? 0;
        const chosen = choosePreemption(strategy, pod, priority, nodes, priorityOf, nowMs());
        if (chosen === undefined) return;
        for (const victim of chosen.victims) {
          const grace = raws.get(victim.uid)?.spec?.terminationGracePeriodSeconds ?? 30;
          await cluster.deletePod({ namespace: victim.namespace, name: victim.name, uid: victim.uid }, grace);
        }
        cluster.nominatePod(pod.namespace, pod.name, chosen.nodeName);
        hold(pod, chosen.nodeName);
      },
    };
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
          return [{ pod, priority: p.spec?.priority ?? 0, shape, raw: p }];
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
      const preemption = preemptionPass(nodes, byName, pending);
      for (const { pod, shape, priority, raw } of candidates) {
        const reserved = preemption.release(pod);
        const skip = shape !== undefined && fitsNowhere.has(shape);
        const nodeName = skip || nodes.length === 0 ? undefined : chooseNode(strategy, pod, nodes, nowMs());
        if (nodeName === undefined && shape !== undefined) fitsNowhere.add(shape);
        const index = nodeName === undefined ? undefined : byName.get(nodeName);
        const node = index === undefined ? undefined : nodes[index];
        if (nodeName === undefined || index === undefined || node === undefined) {
          if (reserved) preemption.reserve(pod, raw.status?.nominatedNodeName ?? '');
          else await preemption.tryPreempting(pod, raw, priority);
          continue;
        }
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
