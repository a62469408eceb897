import type { CatalogSource } from '../../ports/cloud.ts';
import type { OfferingCache } from '../../ports/state.ts';
import type { Logger } from '../../runtime/logger.ts';

/** Removes launch templates no launch has used for a while (the AWS adapter's LaunchTemplateStore). */
export interface LaunchTemplateJanitor {
  deleteUnused(maxIdleSeconds: number): Promise<readonly string[]>;
}

export interface RefreshCatalogPorts {
  readonly source: CatalogSource;
  readonly cache: OfferingCache;
  readonly logger: Logger;
  readonly launchTemplates?: LaunchTemplateJanitor;
}

export interface RefreshCatalogOptions {
  /** Launch templates unused for this long are deleted. @default 3600 */
  readonly launchTemplateMaxIdleSeconds?: number;
}

export interface RefreshCatalogResult {
  readonly region: string;
  readonly generation: string;
  readonly instanceTypes: number;
  readonly offerings: number;
  /** Offerings without a price (unavailable until one is known). */
  readonly unpricedOfferings: number;
  readonly deletedLaunchTemplates: readonly string[];
}

/**
 * Refreshes the offering cache: reads instance types, offerings and prices from the cloud and
 * stores them as one new catalog generation, so provisioner runs read one cache instead of EC2.
 * Then deletes launch templates that are no longer used. Safe to run again at any time.
 * @throws CloudApiError when the cloud cannot be read; the previous catalog stays in place.
 */
export async function refreshCatalog(
  ports: RefreshCatalogPorts,
  options: RefreshCatalogOptions = {},
): Promise<RefreshCatalogResult> {
  const began = Date.now();
  const catalog = await ports.source.fetchCatalog();
  await ports.cache.writeCatalog(catalog);
  const offerings = catalog.instanceTypes.reduce((sum, t) => sum + t.offerings.length, 0);
  const unpricedOfferings = catalog.instanceTypes.reduce(
    (sum, t) => sum + t.offerings.filter((o) => o.priceUsdPerHour === undefined).length,
    0,
  );
  const deletedLaunchTemplates =
    (await ports.launchTemplates?.deleteUnused(options.launchTemplateMaxIdleSeconds ?? 3600)) ?? [];
  const result: RefreshCatalogResult = {
    region: catalog.region,
    generation: catalog.generation,
    instanceTypes: catalog.instanceTypes.length,
    offerings,
    unpricedOfferings,
    deletedLaunchTemplates,
  };
  ports.logger.info('catalog refreshed', {
    ...result,
    deletedLaunchTemplates: deletedLaunchTemplates.length,
    durationMs: Date.now() - began,
  });
  return result;
}
