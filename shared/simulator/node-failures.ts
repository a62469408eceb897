import type { V1Pod, V1Toleration } from '@kubernetes/client-node';
import type { MemoryCluster } from '../adapters/memory/index.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Scenario, ScenarioEvent } from './scenario.ts';

// Kubelets failing in the simulated world: each NodeNotReady event makes the kubelets of `count`
// Ready nodes (of its NodePool, by name) report NotReady from its time on. They never recover:
// either node repair replaces the nodes or they stay, serving nothing. As kube-controller-manager's
// node lifecycle controller does, a NotReady node is tainted `node.kubernetes.io/not-ready:NoExecute`
// and its pods are deleted once their toleration of that taint runs out: 300 seconds for a pod
// that states none (the DefaultTolerationSeconds admission plugin's default), never for one that
// tolerates it without a limit (DaemonSet pods), after its own limit for one that states one.

type NodeNotReady = Extract<ScenarioEvent, { kind: 'NodeNotReady' }>;

/** The taint the node lifecycle controller puts on a node whose kubelet reports NotReady. */
export const NOT_READY_TAINT = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' } as const;

/** DefaultTolerationSeconds: how long a pod that states no toleration of the taint stays. */
export const DEFAULT_TOLERATION_SECONDS = 300;

export interface NodeFailures {
  /** Applies the events whose time has come, and deletes the pods whose toleration ran out. */
  step(): Promise<void>;
  /** When the next event, or the next pod's eviction, is due. */
  wakeTimes(): readonly number[];
}

/** Seconds `pod` stays on a node with the not-ready NoExecute taint (undefined: for ever). */
export function notReadyTolerationSeconds(pod: V1Pod): number | undefined {
  const tolerations: readonly V1Toleration[] = pod.spec?.tolerations ?? [];
  const matching = tolerations.filter(
    (t) =>
      (t.effect === undefined || t.effect === '' || t.effect === NOT_READY_TAINT.effect) &&
      ((t.operator === 'Exists' && (t.key === undefined || t.key === '' || t.key === NOT_READY_TAINT.key)) ||
        (t.operator !== 'Exists' && t.key === NOT_READY_TAINT.key && (t.value ?? '') === '')),
  );
  // Without one, the API server's admission gave the pod the default (as it does every pod).
  if (matching.length === 0) return DEFAULT_TOLERATION_SECONDS;
  // The longest matching toleration holds; one without a limit holds for ever.
  if (matching.some((t) => t.tolerationSeconds === undefined)) return undefined;
  return Math.max(0, ...matching.map((t) => t.tolerationSeconds ?? 0));
}

export function makeNodeFailures(options: {
  readonly scenario: Scenario;
  readonly clock: Clock;
  readonly cluster: MemoryCluster;
  /** The world's log (what happens to Flotilla, not what it decides). */
  readonly logger: Logger;
}): NodeFailures {
  const { scenario, clock, cluster, logger } = options;
  const pending = scenario.events.filter((e): e is NodeNotReady => e.kind === 'NodeNotReady');
  const dueMs = (e: NodeNotReady) => scenario.startMs + e.atMs;
  /** The nodes tainted NotReady, and when. */
  const taintedAt = new Map<string, number>();
  /** When the next pod on a tainted node is due to go. */
  let evictions: number[] = [];

  async function evict(now: number): Promise<void> {
    const due: number[] = [];
    for (const raw of cluster.list('Pod')) {
      const pod = raw as unknown as V1Pod;
      const since = taintedAt.get(pod.spec?.nodeName ?? '');
      const meta = pod.metadata;
      if (since === undefined || meta?.deletionTimestamp !== undefined) continue;
      const seconds = notReadyTolerationSeconds(pod);
      if (seconds === undefined) continue;
      const atMs = since + seconds * 1000;
      if (atMs > now) {
        due.push(atMs);
        continue;
      }
      await cluster.deletePod(
        { namespace: meta?.namespace ?? '', name: meta?.name ?? '', uid: meta?.uid ?? '' },
        pod.spec?.terminationGracePeriodSeconds ?? 30,
      );
      logger.info('pod evicted from a NotReady node', {
        pod: `${meta?.namespace ?? ''}/${meta?.name ?? ''}`,
        node: pod.spec?.nodeName,
        tolerationSeconds: seconds,
      });
    }
    evictions = due;
  }

  return {
    async step() {
      const now = clock.now().getTime();
      for (const event of pending.filter((e) => dueMs(e) <= now)) {
        pending.splice(pending.indexOf(event), 1);
        const nodes = (await cluster.nodeInfos()).items
          .filter((n) => n.ready && !n.deleting)
          .filter((n) => event.nodePool === undefined || n.nodePoolName === event.nodePool)
          .map((n) => n.name)
          .sort()
          .slice(0, event.count);
        for (const name of nodes) {
          cluster.setNodeReady(name, false);
          await cluster.patchNode(name, { addTaints: [NOT_READY_TAINT] });
          taintedAt.set(name, now);
        }
        logger.info('kubelets report NotReady', {
          nodes,
          ...(event.nodePool === undefined ? {} : { nodePool: event.nodePool }),
        });
      }
      for (const name of taintedAt.keys()) {
        if (cluster.get('Node', name) === undefined) taintedAt.delete(name);
      }
      if (taintedAt.size > 0) await evict(now);
    },
    wakeTimes: () => [...pending.map(dueMs), ...evictions],
  };
}
