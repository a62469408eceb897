import type { EC2Client } from '@aws-sdk/client-ec2';
import type { Clock } from '../../ports/clock.ts';
import type { CachedInstanceType, CatalogSource, OnDemandPriceSource } from '../../ports/cloud.ts';
import type { Logger } from '../../runtime/logger.ts';
import {
  describeInstanceTypes,
  describeZonalOfferings,
  describeZoneIds,
  toCachedInstanceType,
} from './instance-types.ts';
import { branchEnis, describeSpotPrices, fallbackOnDemandPrices, fallbackSpotPrices } from './pricing.ts';

export interface CatalogSourceOptions {
  readonly ec2: EC2Client;
  readonly region: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** @default the table generated from the bundled catalog */
  readonly onDemandPrices?: OnDemandPriceSource;
}

/**
 * Reads the region's catalog from EC2: DescribeInstanceTypes, DescribeInstanceTypeOfferings
 * (zones), DescribeSpotPriceHistory and on-demand prices. When the spot history cannot be read,
 * the bundled estimates stand in; when on-demand prices cannot be read, the generated table does.
 */
export function makeEc2CatalogSource(options: CatalogSourceOptions): CatalogSource {
  const { ec2, region, clock, logger } = options;
  const onDemandSource = options.onDemandPrices ?? fallbackOnDemandPrices;
  return {
    async fetchCatalog() {
      const now = clock.now();
      const [infos, zonesByType, zoneIds] = await Promise.all([
        describeInstanceTypes(ec2),
        describeZonalOfferings(ec2),
        describeZoneIds(ec2),
      ]);
      let onDemand: ReadonlyMap<string, number>;
      try {
        onDemand = await onDemandSource.onDemandPrices(region);
      } catch (error) {
        logger.warn('on-demand prices unavailable, using the bundled table', { error });
        onDemand = await fallbackOnDemandPrices.onDemandPrices(region);
      }
      let spot: ReadonlyMap<string, number>;
      try {
        spot = await describeSpotPrices(ec2, now);
      } catch (error) {
        logger.warn('spot prices unavailable, using the bundled estimates', { error });
        spot = fallbackSpotPrices(region, zonesByType);
      }
      const instanceTypes: CachedInstanceType[] = [];
      for (const info of infos) {
        const zones = zonesByType.get(info.InstanceType ?? '') ?? new Set<string>();
        const cached = toCachedInstanceType(
          info,
          zones,
          zoneIds,
          { onDemand, spot },
          branchEnis(info.InstanceType ?? ''),
        );
        if (cached !== undefined && cached.offerings.length > 0) instanceTypes.push(cached);
      }
      instanceTypes.sort((a, b) => a.name.localeCompare(b.name));
      return {
        region,
        generation: now.toISOString().replace(/[-:.]/g, ''),
        refreshedAt: now.toISOString(),
        instanceTypes,
      };
    },
  };
}
