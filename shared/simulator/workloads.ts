import type { V1Pod } from '@kubernetes/client-node';
import type { MemoryCluster } from '../adapters/memory/index.ts';
import type { SimInterruption, SimUnschedulablePod } from './record.ts';
import type { DeploymentWorkload, JobWorkload, Scenario, Workload } from './scenario.ts';

// The simulated world's workload controllers (the ReplicaSet and Job controllers): they keep the
// scenario's Deployments at their replica counts and run its Jobs to completion, and they keep
// the books the report needs: how long each pod waited for a node, and which pods an interruption
// displaced and whether their replacements ran again.

/** A pod's grace period when its template sets none. */
const DEFAULT_GRACE_SECONDS = 30;
/** The label that ties a pod to its workload: `namespace.name`. */
export const WORKLOAD_LABEL = 'simulator.flotilla.dev/workload';

interface PodInfo {
  readonly workload: string;
  readonly createdMs: number;
  startedMs?: number;
  /** Index into `interruptions` when the pod replaces one an interruption took away. */
  replacing?: number;
}

interface InterruptionState {
  record: SimInterruption;
  /** Replacement pods created and not yet bound. */
  unbound: number;
  /** Pods on the instance's node when the warning came, that their controller must replace. */
  readonly displaced: Map<string, string>;
}

/** A Deployment workload's ReplicaSet spec at `replicas`. */
function replicaSetSpec(w: DeploymentWorkload, replicas: number): Record<string, unknown> {
  const labels = { [WORKLOAD_LABEL]: `${w.namespace}.${w.name}` };
  return { replicas, selector: { matchLabels: labels }, template: { metadata: { labels } } };
}

/** Every pod stored, in every phase. */
export const rawPods = (cluster: MemoryCluster) => cluster.list('Pod') as unknown as V1Pod[];

/** A pod that is neither finished nor being deleted. */
export const isActive = (p: V1Pod) =>
  p.status?.phase !== 'Succeeded' &&
  p.status?.phase !== 'Failed' &&
  p.metadata?.deletionTimestamp === undefined;

export const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';

export interface Workloads {
  /** Pods an interruption displaced go back to their controllers; then each workload steps. */
  step(): Promise<void>;
  /** kube-scheduler bound the pod: its wait ends, and a replacement counts as placed. */
  bound(uid: string): void;
  /**
   * An interruption warning: the active pods on `nodeName` are the ones it displaces, which
   * their controllers must replace. Returns how many there are.
   */
  displace(record: SimInterruption, nodeName: string | undefined): number;
  /** The instants a workload changes on its own: scale steps, Job starts, Job pods finishing. */
  wakeTimes(): readonly number[];
  /** Creation to binding, per pod bound. */
  readonly podWaitsMs: readonly number[];
  /** Creation to now, per active pod still without a node. */
  waitingMs(): readonly number[];
  /**
   * The interruptions, each handled once its instance is gone and every pod its node lost that
   * its controller still wanted has run again elsewhere.
   */
  interruptions(isLive: (instanceId: string) => boolean): readonly SimInterruption[];
  /** Active pods left without a node, with the last reasons given for them. */
  unschedulable(lastReasons: ReadonlyMap<string, readonly string[]>): readonly SimUnschedulablePod[];
}

/**
 * The workload controllers of `scenario` on `cluster`. Creates the Deployments'
 * PodDisruptionBudgets at once, as a user applies them with the Deployments.
 */
export function makeWorkloads(scenario: Scenario, cluster: MemoryCluster, nowMs: () => number): Workloads {
  const startMs = scenario.startMs;
  const pods = new Map<string, PodInfo>();
  const interruptions: InterruptionState[] = [];
  const podWaitsMs: number[] = [];
  const sequence = new Map<string, number>();
  const jobSucceeded = new Map<string, number>();
  /** Per workload, interruptions whose pods it still has to replace. */
  const owed = new Map<string, number[]>();

  const workloadKey = (w: Workload) => `${w.namespace}/${w.name}`;
  const labelOf = (key: string) => key.replace('/', '.');
  const podsOf = (key: string) =>
    rawPods(cluster).filter((p) => p.metadata?.labels?.[WORKLOAD_LABEL] === labelOf(key));

  // Each Deployment's pods belong to a ReplicaSet kept at the replicas wanted, so a
  // PodDisruptionBudget counts them against that scale as kube-controller-manager does.
  const replicaSets = new Map<string, { uid: string; replicas: number }>();
  for (const w of scenario.workloads) {
    if (w.kind !== 'Deployment') continue;
    const rs = cluster.create({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: w.name, namespace: w.namespace },
      spec: replicaSetSpec(w, w.replicas),
    }) as { metadata: { uid: string } };
    replicaSets.set(workloadKey(w), { uid: rs.metadata.uid, replicas: w.replicas });
  }

  for (const w of scenario.workloads) {
    if (w.kind !== 'Deployment' || w.disruptionBudget === undefined) continue;
    cluster.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: w.name, namespace: w.namespace },
      spec: {
        ...w.disruptionBudget,
        selector: { matchLabels: { [WORKLOAD_LABEL]: `${w.namespace}.${w.name}` } },
      },
    });
  }

  function createPod(w: Workload): void {
    const key = workloadKey(w);
    const seq = (sequence.get(key) ?? 0) + 1;
    sequence.set(key, seq);
    const name = `${w.name}-${seq.toString().padStart(5, '0')}`;
    const raw = cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: w.namespace,
        labels: { ...(w.template.metadata?.labels ?? {}), [WORKLOAD_LABEL]: labelOf(key) },
        ...(w.template.metadata?.annotations === undefined
          ? {}
          : { annotations: { ...w.template.metadata.annotations } }),
        ownerReferences: [
          {
            apiVersion: w.kind === 'Job' ? 'batch/v1' : 'apps/v1',
            kind: w.kind === 'Job' ? 'Job' : 'ReplicaSet',
            name: w.name,
            uid: replicaSets.get(key)?.uid ?? `workload-${key}`,
            controller: true,
          },
        ],
      },
      spec: structuredClone(w.template.spec),
    }) as unknown as V1Pod;
    const info: PodInfo = { workload: key, createdMs: nowMs() };
    const debts = owed.get(key);
    const debt = debts?.shift();
    if (debt !== undefined) {
      info.replacing = debt;
      const state = interruptions[debt];
      if (state !== undefined) state.unbound += 1;
    }
    pods.set(uidOf(raw), info);
  }

  function desiredReplicas(w: DeploymentWorkload, offsetMs: number): number {
    let replicas = w.replicas;
    for (const step of w.scale) if (step.atMs <= offsetMs) replicas = step.replicas;
    return replicas;
  }

  async function runDeployment(w: DeploymentWorkload, offsetMs: number): Promise<void> {
    const key = workloadKey(w);
    const active = podsOf(key).filter(isActive);
    const desired = desiredReplicas(w, offsetMs);
    const rs = replicaSets.get(key);
    if (rs !== undefined && rs.replicas !== desired) {
      cluster.replaceSpec('ReplicaSet', w.name, replicaSetSpec(w, desired), w.namespace);
      rs.replicas = desired;
    }
    for (let i = active.length; i < desired; i++) createPod(w);
    if (active.length >= desired) owed.delete(key);
    if (active.length <= desired) return;
    // Scale down as a ReplicaSet does: pods not yet on a node first, then the newest.
    const victims = [...active]
      .sort((a, b) => {
        const unbound = Number(Boolean(a.spec?.nodeName)) - Number(Boolean(b.spec?.nodeName));
        return unbound !== 0 ? unbound : (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? '');
      })
      .slice(0, active.length - desired);
    for (const pod of victims) {
      await cluster.deletePod(
        { namespace: w.namespace, name: pod.metadata?.name ?? '', uid: uidOf(pod) },
        pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS,
      );
    }
  }

  function runJob(w: JobWorkload, offsetMs: number): void {
    if (offsetMs < w.atMs) return;
    const key = workloadKey(w);
    let succeeded = jobSucceeded.get(key) ?? 0;
    const active: V1Pod[] = [];
    for (const pod of podsOf(key)) {
      if (!isActive(pod)) continue;
      const started = pods.get(uidOf(pod))?.startedMs;
      if (started !== undefined && nowMs() - started >= w.runTimeMs) {
        // Finished: counted and cleaned up at once (ttlSecondsAfterFinished: 0).
        succeeded += 1;
        cluster.removePod(w.namespace, pod.metadata?.name ?? '');
        continue;
      }
      active.push(pod);
    }
    jobSucceeded.set(key, succeeded);
    const wanted = Math.min(w.parallelism, w.completions - succeeded);
    for (let i = active.length; i < wanted; i++) createPod(w);
    if (succeeded >= w.completions) owed.delete(key);
  }

  /** Pods an interrupted node lost (evicted, deleted or gone) go back to their controllers. */
  function releaseDisplaced(): void {
    const live = new Map(rawPods(cluster).map((p) => [uidOf(p), p]));
    interruptions.forEach((state, index) => {
      for (const [uid, workload] of state.displaced) {
        const pod = live.get(uid);
        if (pod !== undefined && isActive(pod)) continue;
        state.displaced.delete(uid);
        owed.set(workload, [...(owed.get(workload) ?? []), index]);
      }
    });
  }

  return {
    async step() {
      const offsetMs = nowMs() - startMs;
      releaseDisplaced();
      for (const w of scenario.workloads) {
        if (w.kind === 'Deployment') await runDeployment(w, offsetMs);
        else runJob(w, offsetMs);
      }
    },

    bound(uid) {
      const info = pods.get(uid);
      if (info === undefined) return;
      info.startedMs = nowMs();
      podWaitsMs.push(nowMs() - info.createdMs);
      if (info.replacing !== undefined) {
        const state = interruptions[info.replacing];
        if (state !== undefined) state.unbound -= 1;
        delete info.replacing;
      }
    },

    displace(record, nodeName) {
      const displaced = new Map<string, string>();
      if (nodeName !== undefined) {
        for (const pod of rawPods(cluster).filter((p) => p.spec?.nodeName === nodeName && isActive(p))) {
          const info = pods.get(uidOf(pod));
          if (info !== undefined) displaced.set(uidOf(pod), info.workload);
        }
      }
      interruptions.push({ record, unbound: 0, displaced });
      return displaced.size;
    },

    wakeTimes() {
      const due: number[] = [];
      const offset = nowMs() - startMs;
      for (const w of scenario.workloads) {
        if (w.kind === 'Deployment') {
          for (const s of w.scale) if (s.atMs > offset) due.push(startMs + s.atMs);
        } else {
          if (w.atMs > offset) due.push(startMs + w.atMs);
          for (const pod of podsOf(workloadKey(w))) {
            const started = pods.get(uidOf(pod))?.startedMs;
            if (started !== undefined) due.push(started + w.runTimeMs);
          }
        }
      }
      return due;
    },

    podWaitsMs,

    waitingMs() {
      return rawPods(cluster)
        .filter((p) => isActive(p) && !p.spec?.nodeName)
        .flatMap((p) => {
          const info = pods.get(uidOf(p));
          return info === undefined ? [] : [nowMs() - info.createdMs];
        });
    },

    interruptions(isLive) {
      return interruptions.map((state, index) => {
        const owing = [...owed.values()].some((list) => list.includes(index));
        const gone = !isLive(state.record.instanceId);
        return {
          ...state.record,
          handled: gone && state.displaced.size === 0 && state.unbound === 0 && !owing,
        };
      });
    },

    unschedulable(lastReasons) {
      return rawPods(cluster)
        .filter((p) => isActive(p) && !p.spec?.nodeName)
        .map((p) => {
          const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
          return {
            namespace: p.metadata?.namespace ?? '',
            name: p.metadata?.name ?? '',
            reasons: lastReasons.get(uidOf(p)) ?? [
              scheduled?.message ?? 'created just before the end; not looked at by the scheduler yet',
            ],
          };
        })
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
    },
  };
}
