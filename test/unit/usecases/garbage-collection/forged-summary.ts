import type { MemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { withClusterSummary } from '../../../../shared/adapters/summary-cluster.ts';
import { encodeSummaryDocument, readSummaryDocument, SummaryBuilder } from '../../../../shared/apis/index.ts';
import type { Clock } from '../../../../shared/ports/clock.ts';
import type { Cluster } from '../../../../shared/ports/cluster.ts';
import type { ClusterSummary } from '../../../../shared/ports/summary.ts';
import type { Logger } from '../../../../shared/runtime/logger.ts';

// A cluster summary as an attacker holding the shim's role publishes it, for the use cases' unit
// tests: the in-memory cluster's own objects, one of them changed, built with the shim's builder
// and read with the Lambdas' reader, behind the Lambdas' summary decorator. List reads then come
// from the forged summary; single gets and consistent reads from the in-memory API server.

/** A raw Kubernetes object of the summary, writable. */
export type RawObject = Record<string, unknown>;

/** What to change in the objects before they are published (a deep copy; the cluster is untouched). */
export interface Forgery {
  readonly pods?: (pods: RawObject[]) => void;
  readonly nodes?: (nodes: RawObject[]) => void;
  readonly nodeClaims?: (claims: RawObject[]) => void;
}

/** The Cluster port over `cluster` with list reads from a summary `publish` forges. */
export function forgedSummaryCluster(
  cluster: MemoryCluster,
  clock: Clock,
  logger: Logger,
): { readonly cluster: Cluster; publish(forgery: Forgery): void } {
  let published: ClusterSummary | undefined;
  const decorated = withClusterSummary(cluster, {
    source: { read: async () => published },
    clock,
    logger,
  });
  return {
    cluster: decorated,
    publish(forgery) {
      const copy = (kind: 'Pod' | 'Node' | 'NodeClaim') => structuredClone(cluster.list(kind)) as RawObject[];
      const pods = copy('Pod').filter(
        (p) => !['Succeeded', 'Failed'].includes(String(field(p, 'status')['phase'])),
      );
      const nodes = copy('Node');
      const claims = copy('NodeClaim');
      forgery.pods?.(pods);
      forgery.nodes?.(nodes);
      forgery.nodeClaims?.(claims);
      const builder = new SummaryBuilder('forged');
      builder.replace('pods', pods);
      builder.replace('nodes', nodes);
      builder.replace('nodeClaims', claims);
      const at = clock.now().toISOString();
      published = readSummaryDocument(
        encodeSummaryDocument(builder.document(at, { pods: at, nodes: at, nodeClaims: at })),
      );
    },
  };
}

/** The one object named `name` among `objects` (throws when absent: the forgery is wrong). */
export function named(objects: RawObject[], name: string): RawObject {
  const found = objects.find((o) => field(o, 'metadata')['name'] === name);
  if (found === undefined) throw new Error(`no object "${name}" to forge`);
  return found;
}

/** The object at `object[key]` (made empty when absent), to read or change one field of it. */
export function field(object: RawObject, key: string): RawObject {
  const value = object[key];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as RawObject;
  const made: RawObject = {};
  object[key] = made;
  return made;
}
