import type { Clock } from '../../ports/clock.ts';
import type { Cluster } from '../../ports/cluster.ts';
import type { StoredEvent } from './events.ts';
import type { Manifest, MemoryKind } from './object-store.ts';

// What the in-memory cluster offers beyond the Cluster port: the knobs the simulator's kubelet and
// kube-scheduler turn, and read-back for tests.

export interface MemoryClusterOptions {
  /** Creation and deletion times, condition transitions and event dedupe read it. */
  readonly clock: Clock;
  /** A repeated event within this window is dropped; later ones bump its count. @default 300 */
  readonly eventDedupeSeconds?: number;
}

/** The Cluster port in memory plus the knobs the simulator (kube-scheduler, kubelet) turns. */
export interface MemoryCluster extends Cluster {
  /**
   * Creates an object as the API server would: uid, creation time, `generation` 1 for custom
   * objects. Namespaces of namespaced objects are created on first use.
   * @throws ValidationError when the kind is not stored or the object already exists.
   */
  create(manifest: Manifest): Record<string, unknown>;
  /**
   * Replaces an object's spec as a user's `kubectl apply` does: status and the API server's
   * bookkeeping are kept, and `generation` goes up for custom objects when the spec changed.
   * Namespaced objects are looked up in `namespace` (default `default`).
   * @throws ClusterNotFoundError when there is no such object.
   */
  replaceSpec(
    kind: MemoryKind,
    name: string,
    spec: Readonly<Record<string, unknown>>,
    namespace?: string,
  ): Record<string, unknown>;
  /** The stored object, or undefined. */
  get(kind: MemoryKind, name: string, namespace?: string): Record<string, unknown> | undefined;
  /** Every stored object of a kind (pods in every phase). */
  list(kind: MemoryKind): readonly Record<string, unknown>[];
  /** Sets `spec.nodeName` and `PodScheduled=True` (the Binding subresource). */
  bindPod(namespace: string, name: string, nodeName: string): void;
  /** Sets `status.nominatedNodeName`, as kube-scheduler does for a pod that preempted others there. */
  nominatePod(namespace: string, name: string, nodeName: string): void;
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
