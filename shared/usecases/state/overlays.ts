import {
  type InstanceType,
  type NodeOverlay,
  type OverlayResolution,
  resolveNodeOverlays,
} from '../../core/index.ts';
import type { ClusterNodeOverlay, ClusterNodePool } from '../../ports/cluster.ts';

/**
 * Pure: the valid NodeOverlays resolved against NodePools, each pool seeing the instance types of
 * its EC2NodeClass (`typesByClass`, by class name) and its template labels. Invalid overlays are
 * left out (their status says why).
 */
export function resolveClusterOverlays(
  overlays: readonly ClusterNodeOverlay[],
  pools: readonly ClusterNodePool[],
  typesByClass: ReadonlyMap<string, readonly InstanceType[]>,
): OverlayResolution {
  const valid = overlays.flatMap((o): NodeOverlay[] => (o.overlay === undefined ? [] : [o.overlay]));
  const classOf = new Map(pools.map((p) => [p.pool.name, p.nodeClassRef.name]));
  return resolveNodeOverlays(
    valid,
    pools.map((p) => ({
      name: p.pool.name,
      ...(p.pool.labels === undefined ? {} : { labels: p.pool.labels }),
    })),
    (pool) => typesByClass.get(classOf.get(pool.name) ?? '') ?? [],
  );
}
