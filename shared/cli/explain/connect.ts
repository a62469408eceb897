import type { KubeConfig } from '@kubernetes/client-node';
import { makeKubeCluster } from '../../adapters/kube/index.ts';
import { loadKubeConfig, makeRawApi } from '../../adapters/kube/raw.ts';
import {
  bundledCatalog,
  bundledCatalogRegions,
  DEFAULT_REGION,
  makeMemoryCloud,
} from '../../adapters/memory/index.ts';
import { Label } from '../../core/index.ts';
import { makeManualClock } from '../../ports/clock.ts';
import type { Cloud } from '../../ports/cloud.ts';
import type { Cluster } from '../../ports/cluster.ts';
import { makeLogger } from '../../runtime/logger.ts';
import { readOnlyCluster } from '../../usecases/explain/read-only.ts';

// Where `flotilla explain` reads from: the kube adapter on the user's kubeconfig, behind the
// read-only view (its writes throw), and the bundled catalog's prices for the region of the Nodes.

export { loadKubeConfig };

/** What `explain` reads the cluster and the prices with: the kube adapter and the bundled catalog. */
export interface ExplainSources {
  readonly cluster: Cluster;
  readonly cloud: Pick<Cloud, 'instanceTypes'>;
  readonly region: string;
}

/** The read-only kube adapter on `kc`, and the bundled catalog of the region its Nodes are in. */
export async function connect(kc: KubeConfig, region: string | undefined): Promise<ExplainSources> {
  const logger = makeLogger({}, { level: 'error', sink: () => {} });
  const cluster = readOnlyCluster(
    makeKubeCluster({ connection: makeRawApi(kc), logger, callTimeoutMs: 10_000, retry: { maxAttempts: 2 } }),
  );
  const regions = bundledCatalogRegions();
  let chosen = region;
  if (chosen === undefined) {
    const nodes = await cluster.nodeInfos();
    chosen =
      nodes.items.map((n) => n.labels[Label.region]).find((r) => r !== undefined && regions.has(r)) ??
      process.env['AWS_REGION'] ??
      DEFAULT_REGION;
  }
  const zones = regions.get(chosen) ?? regions.get(DEFAULT_REGION) ?? [];
  const catalogRegion = regions.has(chosen) ? chosen : DEFAULT_REGION;
  const cloud = makeMemoryCloud({
    clock: makeManualClock(new Date()),
    clusterName: 'explain',
    catalog: bundledCatalog(catalogRegion, zones),
  });
  return { cluster, cloud, region: chosen };
}
