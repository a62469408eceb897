import type { V1Pod } from '@kubernetes/client-node';
import { matchesSelector } from '../../core/index.ts';
import type { Clock } from '../../ports/clock.ts';
import type { EvictionOutcome, PodDisruptionBudget } from '../../ports/cluster.ts';
import type { MemoryCluster } from './memory-cluster.ts';
import { keyOf, type ObjectStore, type Raw, wholeSeconds } from './object-store.ts';
import { setPodCondition } from './patches.ts';
import { isPodReady } from './pdb-status.ts';

// Pods in the in-memory cluster as the API server, kube-scheduler and the kubelet change them:
// eviction against PodDisruptionBudgets, deletion with a grace period, binding, the scheduler's
// verdict, phases and removal.

/** What the in-memory cluster does to pods, for the port and for the simulator. */
export type PodLifecycle = Pick<
  MemoryCluster,
  'evictPod' | 'deletePod' | 'bindPod' | 'nominatePod' | 'markPodUnschedulable' | 'setPodPhase' | 'removePod'
>;

/** Pod eviction, deletion and the kubelet's and kube-scheduler's updates over the object store. */
export function makePodLifecycle(
  objects: ObjectStore,
  clock: Clock,
  budgets: () => readonly PodDisruptionBudget[],
): PodLifecycle {
  const { find, must, update } = objects;

  const lifecycle: PodLifecycle = {
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

    bindPod(namespace, name, nodeName) {
      const raw = must('Pod', name, namespace, `bind pod "${namespace}/${name}"`);
      update('Pod', raw, (copy) => {
        const pod = copy as unknown as V1Pod;
        pod.spec = { ...(pod.spec ?? { containers: [] }), nodeName };
        if (pod.status?.nominatedNodeName !== undefined) {
          const { nominatedNodeName: _bound, ...status } = pod.status;
          pod.status = status;
        }
        setPodCondition(copy, { type: 'PodScheduled', status: 'True' }, clock.now());
      });
    },

    nominatePod(namespace, name, nodeName) {
      const raw = must('Pod', name, namespace, `update status of pod "${namespace}/${name}"`);
      update('Pod', raw, (copy) => {
        const pod = copy as unknown as V1Pod;
        pod.status = { ...(pod.status ?? {}), nominatedNodeName: nodeName };
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
  };

  /** Unbound pods, and a zero grace period, go at once; others are marked terminating. */
  function deletePodNow(pod: V1Pod, gracePeriodSeconds: number): void {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    if (!pod.spec?.nodeName || gracePeriodSeconds <= 0) {
      lifecycle.removePod(namespace, name);
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

  return lifecycle;
}
