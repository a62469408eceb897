import { FlotillaError } from '../../core/index.ts';
import type { Cluster } from '../../ports/cluster.ts';

// A Cluster that cannot write: what `flotilla explain` runs the controllers' code on. Every method
// of the port is sorted here into reads (passed through) and writes (refused), and the compiler
// checks that the two lists cover the port exactly, so a write method added to Cluster cannot
// slip through unrefused.

/** Reads of the Cluster port: passed through to the cluster. */
const READS = [
  'provisionablePods',
  'boundPods',
  'nodes',
  'nodeInfos',
  'nodePools',
  'nodeClasses',
  'nodeOverlays',
  'nodeClaims',
  'daemonSets',
  'podDisruptionBudgets',
  'namespaceLabels',
  'volumeLimits',
  'nodeClaim',
  'node',
  'nodeWithPods',
  'podsOnNode',
  'volumeAttachments',
] as const satisfies readonly (keyof Cluster)[];

/** Writes of the Cluster port: never reach the cluster. */
const WRITES = [
  'createNodeClaim',
  'patchNodeClaimStatus',
  'patchNodeClaimMetadata',
  'patchNode',
  'deleteNodeClaim',
  'patchNodePoolStatus',
  'patchNodePoolMetadata',
  'patchNodeClassStatus',
  'patchNodeClassMetadata',
  'patchNodeOverlayStatus',
  'recordEvent',
  'evictPod',
  'deletePod',
  'deleteNode',
] as const satisfies readonly (keyof Cluster)[];

type Read = (typeof READS)[number];
type Write = (typeof WRITES)[number];
// Both lists together are the whole port: a method in neither fails to compile here.
type Unsorted = Exclude<keyof Cluster, Read | Write>;
const everyMethodSorted: [Unsorted] extends [never] ? true : Unsorted = true;
void everyMethodSorted;

/** The names of the Cluster port's write methods (for tests and messages). */
export const CLUSTER_WRITES: readonly string[] = WRITES;

/** A write was asked of a read-only cluster. */
export class ReadOnlyClusterError extends FlotillaError {
  readonly code = 'ReadOnlyClusterError';

  constructor(readonly method: string) {
    super(`${method} refused: this view of the cluster is read-only (flotilla explain never writes)`);
  }
}

/**
 * The cluster's reads, and writes that never reach it: each write calls `onWrite` with the
 * method's name and resolves to what `onWrite` returns (by default it throws ReadOnlyClusterError).
 * A use case that writes as part of deciding (the runaway guard records its state) runs on a view
 * whose `onWrite` ignores the write: it decides as it would, and the cluster stays as it is.
 */
export function readOnlyCluster(
  cluster: Cluster,
  onWrite: (method: string) => unknown = (method) => {
    throw new ReadOnlyClusterError(method);
  },
): Cluster {
  const view: Partial<Record<keyof Cluster, unknown>> = {};
  for (const name of READS) view[name] = (cluster[name] as (...args: unknown[]) => unknown).bind(cluster);
  for (const name of WRITES) view[name] = async () => onWrite(name);
  return Object.freeze(view) as Cluster;
}

/** A read-only view whose writes are ignored (each resolves as done, nothing is sent). */
export function ignoringWrites(cluster: Cluster): Cluster {
  // createNodeClaim answers "created"; evictPod answers "evicted"; the others return nothing.
  return readOnlyCluster(readOnlyCluster(cluster), (method) =>
    method === 'createNodeClaim' ? true : method === 'evictPod' ? 'evicted' : undefined,
  );
}
